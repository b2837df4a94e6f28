// Autosave of the per-candidate label forms and of the viewed-file marks (kept on the server:
// they follow the reviewer across reloads).

import { clearFieldProblems } from "./problems.js";
import { post, sendForm, showProblems } from "./server.js";

const TIER_NAMES = { t1: "T1", t2: "T2", t3: "T3", exploit: "exploit" };

// One save at a time per form; the latest state wins.
const saving = new WeakMap();

export function save(ctx, form) {
  const status = form.querySelector(".rv-save-status");
  const previous = saving.get(form) || Promise.resolve();
  const next = previous.then(async () => {
    status.textContent = "Saving…";
    const data = await post(ctx, form).catch(() => ({ ok: false, problems: ["Network error: not saved."] }));
    if (data.ok) {
      status.textContent = "Saved " + new Date().toLocaleTimeString();
      clearFieldProblems(form);
      updateTab(ctx, form.closest(".rv-panel"), data.tier, data.rank);
    } else {
      status.textContent = "Not saved: " + (data.problems || []).join(" ");
    }
  });
  saving.set(form, next);
  return next;
}

// Resolves once every label form's pending save has finished (before submitting).
export function allSaved(ctx) {
  return Promise.all(Array.from(ctx.root.querySelectorAll("form.rv-label")).map((f) => saving.get(f)));
}

function updateTab(ctx, panel, tier, rank) {
  const tab = ctx.tabs.find((t) => t.dataset.token === panel.dataset.token);
  if (!tab) return;
  tab.querySelector(".rv-tab-tier").textContent = tier ? TIER_NAMES[tier] + (rank ? "#" + rank : "") : "";
}

export function fillRank(ctx, form, value) {
  // Default to the end of that tier; the reviewer can reorder by editing the number.
  const rank = form.querySelector('input[name="rank_in_tier"]');
  if (value === "exploit" || rank.value) return;
  let highest = 0;
  for (const other of ctx.root.querySelectorAll("form.rv-label")) {
    if (other === form) continue;
    const checked = other.querySelector('input[name="tier"]:checked');
    const r = Number(other.querySelector('input[name="rank_in_tier"]').value || 0);
    if (checked && checked.value === value) highest = Math.max(highest, r);
  }
  rank.value = String(highest + 1);
}

export function setTier(ctx, value) {
  if (!ctx.current || ctx.config.locked) return;
  const form = ctx.current.querySelector("form.rv-label");
  const radio = form.querySelector('input[name="tier"][value="' + value + '"]');
  if (!radio) return;
  radio.checked = true;
  fillRank(ctx, form, value);
  prefillRubric(ctx, form, value);
  save(ctx, form);
}

// ---- pre-filled rubric ----------------------------------------------------------------------
// Choosing a tier fills every criterion the reviewer has not set with that tier's typical score,
// marked pre-filled (and stored so) until the reviewer sets or confirms it by choosing a score.

function prefilledSet(form) {
  return new Set(form.elements.prefilled.value.split(",").filter(Boolean));
}

function writePrefilled(form, names) {
  form.elements.prefilled.value = Array.from(names).join(",");
  for (const row of form.querySelectorAll(".rv-score[data-criterion]")) {
    row.classList.toggle("is-prefilled", names.has(row.dataset.criterion));
  }
}

export function prefillRubric(ctx, form, tier) {
  const typical = (ctx.config.typicalScores || {})[tier];
  if (!typical || !form.elements.prefilled) return;
  const names = prefilledSet(form);
  for (const [criterion, score] of Object.entries(typical)) {
    const checked = form.querySelector('input[name="' + criterion + '"]:checked');
    if (checked && !names.has(criterion)) continue; // the reviewer's own score stays
    const radio = form.querySelector('input[name="' + criterion + '"][value="' + score + '"]');
    if (!radio) continue;
    radio.checked = true;
    names.add(criterion);
  }
  writePrefilled(form, names);
}

// The reviewer chose a score (a click, or a digit on the row): it is theirs now.
function confirmScore(form, radio) {
  const row = radio.closest(".rv-score[data-criterion]");
  if (!row || !form.elements.prefilled) return false;
  const names = prefilledSet(form);
  if (!names.delete(row.dataset.criterion)) return false;
  writePrefilled(form, names);
  return true;
}

export function showViewed(ctx, panel, ids) {
  for (const li of panel.querySelectorAll(".rv-files li[data-file-id]")) {
    const box = li.querySelector(".rv-viewed");
    box.checked = ids.includes(li.dataset.fileId);
    box.disabled = ctx.config.locked;
    li.classList.toggle("is-viewed", box.checked);
  }
}

// One request at a time per panel; the server's answer is shown once no newer click waits.
const viewedQueue = new WeakMap();

export function saveViewed(ctx, panel, box) {
  const li = box.closest("li[data-file-id]");
  li.classList.toggle("is-viewed", box.checked);
  const body = new FormData();
  body.append("file", li.dataset.fileId);
  body.append("viewed", box.checked ? "1" : "0");
  const entry = viewedQueue.get(panel) || { chain: Promise.resolve(), waiting: 0 };
  entry.waiting += 1;
  entry.chain = entry.chain.then(async () => {
    const data = await sendForm(ctx, panel.dataset.viewedUrl, body).catch(() => ({
      ok: false,
      problems: ["Network error: the viewed mark was not saved."],
    }));
    entry.waiting -= 1;
    if (!data.ok) {
      box.checked = !box.checked;
      li.classList.toggle("is-viewed", box.checked);
      showProblems(data.problems);
    } else if (!entry.waiting) {
      showViewed(ctx, panel, data.viewed);
    }
  });
  viewedQueue.set(panel, entry);
}

export function toggleViewed(ctx) {
  if (!ctx.currentFile) return;
  const li = ctx.current.querySelector('.rv-files li[data-file-id="' + ctx.currentFile.dataset.fileId + '"]');
  const box = li && li.querySelector(".rv-viewed");
  if (box && !box.disabled) {
    box.checked = !box.checked;
    saveViewed(ctx, ctx.current, box);
  }
}

// Saves on every change; typed fields (notes, rank) save once typing pauses.
export function installAutosave(ctx) {
  ctx.root.addEventListener("change", (ev) => {
    const el = ev.target;
    if (el.classList.contains("rv-viewed")) return saveViewed(ctx, el.closest(".rv-panel"), el);
    const form = el.closest("form.rv-label");
    if (form && el.name === "tier") {
      fillRank(ctx, form, el.value);
      prefillRubric(ctx, form, el.value);
    }
    if (form && el.type === "radio") confirmScore(form, el);
    if (form && el.type !== "textarea" && el.type !== "number") save(ctx, form);
  });
  // Clicking the pre-filled score itself fires no change: it confirms that score.
  ctx.root.addEventListener("click", (ev) => {
    const el = ev.target;
    if (!(el instanceof HTMLInputElement) || el.type !== "radio" || !el.checked) return;
    const form = el.closest("form.rv-label");
    if (form && confirmScore(form, el)) save(ctx, form);
  });
  const typing = new WeakMap();
  ctx.root.addEventListener("input", (ev) => {
    const form = ev.target.closest("form.rv-label");
    if (!form || (ev.target.type !== "textarea" && ev.target.type !== "number")) return;
    clearTimeout(typing.get(form));
    typing.set(form, setTimeout(() => save(ctx, form), 600));
  });
}
