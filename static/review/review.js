// Blind review page script. Progressive enhancement: every form and link works without it;
// this adds candidate tabs, keyboard navigation, autosave, inline fix requests, lazy
// trajectories and the activity heartbeat the server turns into active time.
// No inline handlers and no HTML built from strings here: inserted HTML always comes from the
// server's own (escaping) templates.
(() => {
  "use strict";

  // Expanding collapsed context works on every page that shows diffs (review and compare).
  function expand(button) {
    const table = button.closest("table");
    const target = table && table.querySelector("#" + CSS.escape(button.dataset.expand || ""));
    if (target) {
      target.hidden = false;
      button.closest("tbody").remove();
    }
  }
  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest("button.d-expand");
    if (button) expand(button);
  });

  const root = document.getElementById("rv");
  if (!root) return;
  document.documentElement.classList.add("js");
  const config = JSON.parse(document.getElementById("rv-config").textContent);
  const csrfInput = root.querySelector("input[name=csrfmiddlewaretoken]");
  const csrf = csrfInput ? csrfInput.value : "";
  const panels = Array.from(root.querySelectorAll(".rv-panel"));
  const tabs = Array.from(root.querySelectorAll(".rv-tab"));
  let current = null;
  let currentFile = null;
  let cursor = null;
  let cursorSide = "new";

  // ---- activity heartbeat ------------------------------------------------------------------
  let lastInput = Date.now();
  let state = "";
  const idle = () => Date.now() - lastInput > config.idleMs;
  function send(kind) {
    if (config.locked) return;
    state = kind;
    const body = JSON.stringify({
      events: [{ kind: kind, candidate: current ? current.dataset.token : null }],
    });
    fetch(root.dataset.eventsUrl, {
      method: "POST",
      keepalive: true,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: body,
    }).catch(() => {});
  }
  for (const type of ["keydown", "mousedown", "mousemove", "wheel", "scroll", "touchstart"]) {
    window.addEventListener(
      type,
      () => {
        const wasIdle = state === "idle";
        lastInput = Date.now();
        if (wasIdle && !document.hidden) send("focus");
      },
      { passive: true, capture: true },
    );
  }
  document.addEventListener("visibilitychange", () => send(document.hidden ? "hidden" : "focus"));
  window.addEventListener("pagehide", () => send("hidden"));
  setInterval(() => {
    if (document.hidden) return;
    if (idle()) {
      if (state !== "idle") send("idle");
    } else {
      send("heartbeat");
    }
  }, config.heartbeatMs);

  // ---- candidates, files, changes ------------------------------------------------------------
  function showPanel(panel, opts) {
    if (!panel || panel === current) return;
    current = panel;
    for (const p of panels) p.classList.toggle("is-current", p === panel);
    for (const t of tabs) t.classList.toggle("is-current", t.dataset.token === panel.dataset.token);
    history.replaceState(null, "", "#" + panel.id);
    setCursor(null);
    currentFile = panel.querySelector(".rv-file");
    markFile();
    if (!(opts && opts.quiet)) send("focus");
    window.scrollTo({ top: 0 });
  }
  function stepPanel(delta) {
    const i = panels.indexOf(current);
    showPanel(panels[(i + delta + panels.length) % panels.length]);
  }
  function markFile() {
    if (!current) return;
    for (const f of current.querySelectorAll(".rv-file")) f.classList.toggle("is-current", f === currentFile);
    const id = currentFile ? currentFile.dataset.fileId : "";
    for (const li of current.querySelectorAll(".rv-files li")) li.classList.toggle("is-current", li.dataset.fileId === id);
  }
  function setCursor(row, side) {
    if (cursor) cursor.classList.remove("is-cursor");
    cursor = row;
    if (side) cursorSide = side;
    if (!row) return;
    row.classList.add("is-cursor");
    currentFile = row.closest(".rv-file") || currentFile;
    markFile();
    row.scrollIntoView({ block: "center" });
  }
  function rowLine(row) {
    // The focused line: the preferred side if that cell has a line, else the other side.
    const pick = (side) => row.querySelector('td.d-code[data-side="' + side + '"][data-line]');
    const cell = pick(cursorSide) || pick(cursorSide === "new" ? "old" : "new");
    return cell ? { side: cell.dataset.side, line: cell.dataset.line } : null;
  }
  function stepChange(delta) {
    if (!current) return;
    const blocks = Array.from(current.querySelectorAll("tbody.d-change"));
    if (!blocks.length) return;
    const here = cursor ? cursor.closest("tbody") : null;
    let target;
    if (!cursor) {
      target = delta > 0 ? blocks[0] : blocks[blocks.length - 1];
    } else if (delta > 0) {
      target = blocks.find((b) => b !== here && cursor.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
    } else {
      target = blocks.filter((b) => b !== here && cursor.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_PRECEDING).pop();
    }
    if (target) setCursor(target.rows[0]);
  }
  function stepFile(delta) {
    if (!current) return;
    const files = Array.from(current.querySelectorAll(".rv-file"));
    if (!files.length) return;
    const i = files.indexOf(currentFile);
    const next = files[Math.min(Math.max(i + delta, 0), files.length - 1)] || files[0];
    goFile(next);
  }
  function goFile(file) {
    currentFile = file;
    const first = file.querySelector("tbody.d-change tr") || file.querySelector("tbody:not([hidden]) tr[class^=d-]");
    if (first) setCursor(first);
    else {
      setCursor(null);
      file.scrollIntoView({ block: "start" });
    }
    markFile();
  }
  function findRow(path, line, side) {
    const file = Array.from(current.querySelectorAll(".rv-file")).find((f) => f.dataset.path === path);
    if (!file) return null;
    const cell = file.querySelector('td.d-code[data-side="' + side + '"][data-line="' + Number(line) + '"]');
    if (!cell) return null;
    const body = cell.closest("tbody");
    if (body.hidden) {
      const button = file.querySelector('button.d-expand[data-expand="' + CSS.escape(body.id) + '"]');
      if (button) expand(button);
    }
    return cell.closest("tr");
  }

  // ---- viewed files (kept on the server: they follow the reviewer across reloads) -----------
  function showViewed(panel, ids) {
    for (const li of panel.querySelectorAll(".rv-files li[data-file-id]")) {
      const box = li.querySelector(".rv-viewed");
      box.checked = ids.includes(li.dataset.fileId);
      box.disabled = config.locked;
      li.classList.toggle("is-viewed", box.checked);
    }
  }
  // One request at a time per panel; the server's answer is shown once no newer click waits.
  const viewedQueue = new WeakMap();
  function saveViewed(panel, box) {
    const li = box.closest("li[data-file-id]");
    li.classList.toggle("is-viewed", box.checked);
    const body = new FormData();
    body.append("file", li.dataset.fileId);
    body.append("viewed", box.checked ? "1" : "0");
    const entry = viewedQueue.get(panel) || { chain: Promise.resolve(), waiting: 0 };
    entry.waiting += 1;
    entry.chain = entry.chain.then(async () => {
      const data = await sendForm(panel.dataset.viewedUrl, body).catch(() => ({
        ok: false,
        problems: ["Network error: the viewed mark was not saved."],
      }));
      entry.waiting -= 1;
      if (!data.ok) {
        box.checked = !box.checked;
        li.classList.toggle("is-viewed", box.checked);
        showProblems(data.problems);
      } else if (!entry.waiting) {
        showViewed(panel, data.viewed);
      }
    });
    viewedQueue.set(panel, entry);
  }

  // ---- server calls --------------------------------------------------------------------------
  function post(form) {
    return sendForm(form.action, new FormData(form));
  }
  async function sendForm(url, body) {
    const response = await fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrf },
    });
    let data = {};
    try {
      data = await response.json();
    } catch (e) {
      data = { ok: false, problems: ["The server answered " + response.status + "."] };
    }
    return data;
  }
  function showProblems(list) {
    const box = document.getElementById("rv-problems");
    box.replaceChildren();
    for (const text of list || []) {
      const li = document.createElement("li");
      li.textContent = text;
      box.append(li);
    }
    box.hidden = !box.children.length;
    if (!box.hidden) box.scrollIntoView({ block: "start" });
  }

  // Autosave: one save at a time per form, the latest state wins.
  const saving = new WeakMap();
  function save(form) {
    const status = form.querySelector(".rv-save-status");
    const previous = saving.get(form) || Promise.resolve();
    const next = previous.then(async () => {
      status.textContent = "Saving…";
      const data = await post(form).catch(() => ({ ok: false, problems: ["Network error: not saved."] }));
      if (data.ok) {
        status.textContent = "Saved " + new Date().toLocaleTimeString();
        updateTab(form.closest(".rv-panel"), data.tier, data.rank);
      } else {
        status.textContent = "Not saved: " + (data.problems || []).join(" ");
      }
    });
    saving.set(form, next);
    return next;
  }
  function updateTab(panel, tier, rank) {
    const tab = tabs.find((t) => t.dataset.token === panel.dataset.token);
    if (!tab) return;
    const names = { t1: "T1", t2: "T2", t3: "T3", exploit: "exploit" };
    tab.querySelector(".rv-tab-tier").textContent = tier ? names[tier] + (rank ? "#" + rank : "") : "";
  }
  function fillRank(form, value) {
    // Default to the end of that tier; the reviewer can reorder by editing the number.
    const rank = form.querySelector('input[name="rank_in_tier"]');
    if (value === "exploit" || rank.value) return;
    let highest = 0;
    for (const other of root.querySelectorAll("form.rv-label")) {
      if (other === form) continue;
      const checked = other.querySelector('input[name="tier"]:checked');
      const r = Number(other.querySelector('input[name="rank_in_tier"]').value || 0);
      if (checked && checked.value === value) highest = Math.max(highest, r);
    }
    rank.value = String(highest + 1);
  }
  function setTier(value) {
    if (!current || config.locked) return;
    const form = current.querySelector("form.rv-label");
    const radio = form.querySelector('input[name="tier"][value="' + value + '"]');
    if (!radio) return;
    radio.checked = true;
    fillRank(form, value);
    save(form);
  }

  function openFix(row) {
    if (!current || config.locked) return;
    const details = current.querySelector(".rv-fix-new");
    if (!details) return;
    const form = details.querySelector("form");
    const target = row || cursor;
    if (target) {
      const at = rowLine(target);
      const file = target.closest(".rv-file");
      if (at && file) {
        form.elements.path.value = file.dataset.path;
        form.elements.line.value = at.line;
        form.elements.side.value = at.side;
      }
    }
    details.open = true;
    form.elements.text.focus();
  }
  function markFixes(panel) {
    for (const cell of panel.querySelectorAll("td.has-fix")) cell.classList.remove("has-fix");
    for (const li of panel.querySelectorAll(".rv-fix")) {
      const row = rowIn(panel, li.dataset.path, li.dataset.line, li.dataset.side);
      const cell = row && row.querySelector('td.d-code[data-side="' + li.dataset.side + '"]');
      if (cell) cell.classList.add("has-fix");
    }
  }
  // Shared changes, marked in the diff itself: the first old-side line of each hunk gets the same
  // badge as the sidebar list ("3/5", "only this one"), drawn by CSS from data attributes so it
  // never becomes part of the code's text (copying code copies no badge).
  function markShares(panel) {
    for (const li of panel.querySelectorAll(".rv-shared li[data-path]")) {
      const row = rowIn(panel, li.dataset.path, li.dataset.line, li.dataset.side);
      const badge = li.querySelector(".rv-badge");
      if (!row || !badge) continue;
      const cells = [row.querySelector("td.d-ln"), row.querySelector('td.d-code[data-side="old"]')];
      for (const cell of cells) {
        if (!cell) continue;
        cell.dataset.share = badge.textContent;
        cell.classList.toggle("is-unique", li.classList.contains("is-unique"));
        cell.classList.toggle("is-common", li.classList.contains("is-common"));
      }
      row.title = li.classList.contains("is-unique")
        ? "No other candidate made this hunk"
        : badge.textContent + " candidates made this hunk";
    }
  }
  function rowIn(panel, path, line, side) {
    const file = Array.from(panel.querySelectorAll(".rv-file")).find((f) => f.dataset.path === path);
    const cell = file && file.querySelector('td.d-code[data-side="' + side + '"][data-line="' + Number(line) + '"]');
    return cell ? cell.closest("tr") : null;
  }

  // ---- trajectories and further file pages (server-rendered fragments) ----------------------
  async function fragment(url) {
    const response = await fetch(url, { headers: { "X-Fragment": "1" }, credentials: "same-origin" });
    const template = document.createElement("template");
    template.innerHTML = response.ok ? await response.text() : "<p>Could not load this part.</p>";
    return template.content;
  }
  async function loadTrajectory(details, url) {
    const body = details.querySelector(".rv-traj-body");
    body.replaceChildren(await fragment(url || details.dataset.src));
    details.dataset.loaded = "1";
  }
  async function moreTrajectory(link) {
    const content = await fragment(link.href);
    const list = link.closest(".rv-traj-content").querySelector(".rv-events");
    const items = content.querySelector(".rv-events");
    if (items) list.append(...items.children);
    const nextLink = content.querySelector("[data-traj-more]");
    if (nextLink) link.replaceWith(nextLink);
    else link.remove();
  }
  async function moreFile(link) {
    const pager = link.closest(".rv-pager");
    const content = await fragment(link.href);
    const page = content.querySelector(".rv-file-page");
    if (page) pager.replaceWith(...page.children);
  }

  // ---- wiring ------------------------------------------------------------------------------
  root.addEventListener("click", (ev) => {
    const el = ev.target;
    const tab = el.closest(".rv-tab");
    if (tab) {
      ev.preventDefault();
      showPanel(panels.find((p) => p.dataset.token === tab.dataset.token));
      return;
    }
    const goto = el.closest("[data-goto]");
    if (goto) {
      ev.preventDefault();
      const item = goto.closest("[data-path]");
      const row = findRow(item.dataset.path, item.dataset.line, item.dataset.side);
      if (row) setCursor(row, item.dataset.side);
      return;
    }
    const fileLink = el.closest("[data-file-link]");
    if (fileLink) {
      ev.preventDefault();
      const id = fileLink.closest("li").dataset.fileId;
      const file = Array.from(current.querySelectorAll(".rv-file")).find((f) => f.dataset.fileId === id);
      if (file) goFile(file);
      return;
    }
    const more = el.closest("[data-traj-more], [data-traj-link]");
    if (more) {
      ev.preventDefault();
      if (more.matches("[data-traj-more]")) moreTrajectory(more);
      else loadTrajectory(more.closest(".rv-traj"), more.href);
      return;
    }
    const moreFileLink = el.closest("[data-more-file]");
    if (moreFileLink) {
      ev.preventDefault();
      moreFile(moreFileLink);
      return;
    }
    const cell = el.closest("td[data-side][data-line]");
    if (cell && !el.closest("a, button")) {
      setCursor(cell.closest("tr"), cell.dataset.side);
      if (cell.classList.contains("d-ln")) openFix(cell.closest("tr"));
    }
  });
  root.addEventListener("change", (ev) => {
    const el = ev.target;
    if (el.classList.contains("rv-viewed")) return saveViewed(el.closest(".rv-panel"), el);
    const form = el.closest("form.rv-label");
    if (form && el.name === "tier") fillRank(form, el.value);
    if (form && el.type !== "textarea" && el.type !== "number") save(form);
  });
  const typing = new WeakMap();
  root.addEventListener("input", (ev) => {
    const form = ev.target.closest("form.rv-label");
    if (!form || (ev.target.type !== "textarea" && ev.target.type !== "number")) return;
    clearTimeout(typing.get(form));
    typing.set(form, setTimeout(() => save(form), 600));
  });
  root.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (form.matches("form.rv-label")) {
      ev.preventDefault();
      save(form);
    } else if (form.matches(".rv-fix-form")) {
      ev.preventDefault();
      const data = await post(form);
      if (!data.ok) return showProblems(data.problems);
      showProblems([]);
      const list = form.closest(".rv-side").querySelector(".rv-fixes");
      const template = document.createElement("template");
      template.innerHTML = data.html;
      list.append(template.content);
      form.elements.text.value = "";
      form.closest("details").open = false;
      document.activeElement.blur();
      markFixes(form.closest(".rv-panel"));
    } else if (form.matches(".rv-fix-delete")) {
      ev.preventDefault();
      const data = await post(form);
      if (data.ok) {
        const panel = form.closest(".rv-panel");
        form.closest(".rv-fix").remove();
        markFixes(panel);
      } else showProblems(data.problems);
    } else if (form.matches(".rv-traj-search")) {
      ev.preventDefault();
      const url = form.action + "?q=" + encodeURIComponent(form.elements.q.value);
      loadTrajectory(form.closest(".rv-traj"), url);
    } else if (form.id === "rv-submit") {
      ev.preventDefault();
      await Promise.all(Array.from(root.querySelectorAll("form.rv-label")).map((f) => saving.get(f)));
      const data = await post(form);
      if (data.ok) window.location.assign(data.url);
      else showProblems(data.problems);
    }
  });
  for (const details of root.querySelectorAll(".rv-traj")) {
    details.addEventListener("toggle", () => {
      if (details.open && !details.dataset.loaded) loadTrajectory(details);
    });
  }

  const help = document.getElementById("rv-help");
  function toggleHelp(show) {
    help.hidden = !show;
    if (show) document.getElementById("rv-help-close").focus();
  }
  document.getElementById("rv-help-open").addEventListener("click", () => toggleHelp(true));
  document.getElementById("rv-help-close").addEventListener("click", () => toggleHelp(false));
  help.addEventListener("click", (ev) => {
    if (ev.target === help) toggleHelp(false);
  });

  const keys = {
    j: () => stepChange(1),
    k: () => stepChange(-1),
    n: () => stepFile(1),
    p: () => stepFile(-1),
    "]": () => stepPanel(1),
    "[": () => stepPanel(-1),
    1: () => setTier("t1"),
    2: () => setTier("t2"),
    3: () => setTier("t3"),
    x: () => setTier("exploit"),
    c: () => openFix(null),
    r: () => {
      // Into the rubric: the first score row (then digits and Tab).
      const row = current && current.querySelector(".rv-scores .rv-dots");
      const radio = row && (row.querySelector("input:checked") || row.querySelector("input"));
      if (radio && !radio.disabled) radio.focus();
    },
    e: () => {
      if (currentFile) for (const b of currentFile.querySelectorAll("button.d-expand")) expand(b);
    },
    v: () => {
      if (!currentFile) return;
      const li = current.querySelector('.rv-files li[data-file-id="' + currentFile.dataset.fileId + '"]');
      const box = li && li.querySelector(".rv-viewed");
      if (box && !box.disabled) {
        box.checked = !box.checked;
        saveViewed(current, box);
      }
    },
    t: () => {
      const details = current && current.querySelector(".rv-traj");
      if (details) details.open = !details.open;
    },
    m: () => {
      const other = panels[(panels.indexOf(current) + 1) % panels.length];
      const url = new URL(root.dataset.compareUrl, window.location.href);
      url.searchParams.set("a", current.dataset.token);
      url.searchParams.set("b", other.dataset.token);
      window.location.assign(url.toString());
    },
    S: () => {
      const button = document.querySelector("#rv-submit button");
      if (button) button.focus();
    },
    "?": () => toggleHelp(help.hidden),
  };
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.key === "Escape") {
      toggleHelp(false);
      const details = t.closest && t.closest(".rv-fix-new");
      if (details) details.open = false;
      if (t.blur) t.blur();
      return;
    }
    const typingTarget = t.matches && t.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
    if (typingTarget) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && t.closest(".rv-fix-form")) {
        ev.preventDefault();
        t.closest("form").requestSubmit();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t.matches && t.matches("#rv-submit button") && ev.key === "Enter") return;
    // On a rubric or confidence row, a digit picks that score (then Tab moves to the next row).
    if (t.matches && t.matches(".rv-dots input[type=radio]") && /^[1-5]$/.test(ev.key)) {
      ev.preventDefault();
      const pick = t.form.querySelector('input[name="' + t.name + '"][value="' + ev.key + '"]');
      if (pick && !pick.disabled) {
        pick.checked = true;
        pick.focus();
        pick.dispatchEvent(new Event("change", { bubbles: true }));
      }
      return;
    }
    const action = keys[ev.key];
    if (action) {
      ev.preventDefault();
      action();
    }
  });

  for (const panel of panels) {
    showViewed(panel, config.viewed[panel.dataset.token] || []);
    markFixes(panel);
    markShares(panel);
  }
  const fromHash = panels.find((p) => "#" + p.id === window.location.hash);
  showPanel(fromHash || panels[0], { quiet: true });
  send("focus");
})();
