// Autosave of the per-candidate label forms and of the viewed-file marks (kept on the server:
// they follow the reviewer across reloads).

import { clearFieldProblems } from "./problems.js";
import { sendForm, showProblems } from "./server.js";

const TIER_NAMES = { t1: "T1", t2: "T2", t3: "T3", exploit: "exploit" };

// One save at a time (the one label form serves every candidate); the latest state wins. What is
// sent is read when the save is asked for, so a switch of candidate right after cannot mix two
// candidates' labels. Each save sends the whole form, so a queued save that a newer one for the
// same candidate overtook is dropped, and "Saved" shows only once that candidate's newest save
// is stored (not while later ones still wait, which a reload would lose).

const latest = new Map(); // token -> number of the newest save asked for

export function save(ctx, form) {
  const token = ctx.labelToken;
  const body = new FormData(form);
  const url = form.action;
  const mine = (latest.get(token) || 0) + 1;
  latest.set(token, mine);
  ctx.labels[token] = Object.assign(ctx.labels[token] || {}, snapshot(form));
  setStatus(ctx, token, "Saving…");
  ctx.saving = ctx.saving.then(async () => {
    if (latest.get(token) !== mine) return; // a newer save of this candidate follows
    // Based on the label as this page last saved it, read now: a save asked for while the one
    // before was on its way is based on that one, not on what the form held when asked.
    if (body.has("based_on")) body.set("based_on", ctx.labels[token].based_on || "");
    const data = await sendForm(ctx, url, body).catch(() => ({ ok: false, problems: ["Network error: not saved."] }));
    if (data.ok) rebase(ctx, token, data.saved_at);
    if (latest.get(token) !== mine) return; // asked for again while this one was on its way
    if (data.ok) {
      updateTab(ctx, token, data.tier, data.rank);
      if (ctx.labels[token]) ctx.labels[token].rank_in_tier = data.rank;
      setStatus(ctx, token, "Saved " + new Date().toLocaleTimeString());
      delete ctx.problems[token];
      if (token === ctx.labelToken) clearFieldProblems(form);
    } else {
      setStatus(ctx, token, "Not saved: " + (data.problems || []).join(" "));
    }
  });
  return ctx.saving;
}

// The server refuses a save based on a label saved since (from another tab or window of the
// same review: its whole form would undo that save). What this page saved is what it is based on.
function rebase(ctx, token, savedAt) {
  ctx.labels[token].based_on = savedAt;
  const form = ctx.labelForm;
  if (form && token === ctx.labelToken && form.elements.based_on) form.elements.based_on.value = savedAt;
}

function setStatus(ctx, token, text) {
  ctx.statusText[token] = text;
  const status = ctx.labelForm && ctx.labelForm.querySelector(".rv-save-status");
  if (status && token === ctx.labelToken) status.textContent = text;
}

// Resolves once every pending save has finished (before submitting).
export function allSaved(ctx) {
  flushTyping(ctx);
  return ctx.saving;
}

function updateTab(ctx, token, tier, rank) {
  const tab = ctx.tabs.find((t) => t.dataset.token === token);
  if (!tab) return;
  tab.querySelector(".rv-tab-tier").textContent = tier ? TIER_NAMES[tier] + (rank ? "#" + rank : "") : "";
}

// The form's fields as a plain object (an unchecked radio group is null).
function snapshot(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name || el.name === "csrfmiddlewaretoken") continue;
    if (el.type === "radio") {
      if (!(el.name in out)) out[el.name] = null;
      if (el.checked) out[el.name] = el.value;
    } else out[el.name] = el.value;
  }
  return out;
}

// Fill the label form with one candidate's label and point it at that candidate.
export function showLabel(ctx, token) {
  const form = ctx.labelForm;
  if (!form) return;
  if (token !== ctx.labelToken) {
    flushTyping(ctx);
    ctx.labels[ctx.labelToken] = Object.assign(ctx.labels[ctx.labelToken] || {}, snapshot(form));
  }
  const state = ctx.labels[token] || {};
  ctx.labelToken = token;
  if (state.action) form.action = state.action;
  for (const el of form.elements) {
    if (!el.name || el.name === "csrfmiddlewaretoken") continue;
    const value = state[el.name] === undefined || state[el.name] === null ? "" : String(state[el.name]);
    if (el.type === "radio") el.checked = value !== "" && el.value === value;
    else el.value = value;
  }
  writePrefilled(form, prefilledSet(form));
  const status = form.querySelector(".rv-save-status");
  if (status) status.textContent = ctx.statusText[token] || "";
  clearFieldProblems(form);
  const same = form.querySelector("select[data-same-as]");
  if (same) {
    same.value = "";
    for (const option of same.options) option.hidden = option.value === token;
  }
  ctx.showProblemsFor(token);
}

// Typed fields save once typing pauses; a switch of candidate saves at once.
function flushTyping(ctx) {
  if (ctx.typingTimer === null) return;
  clearTimeout(ctx.typingTimer);
  ctx.typingTimer = null;
  save(ctx, ctx.labelForm);
}

export function fillRank(ctx, form, value) {
  // Default to the end of that tier; the reviewer can reorder by editing the number.
  const rank = form.querySelector('input[name="rank_in_tier"]');
  if (value === "exploit" || rank.value) return;
  let highest = 0;
  for (const [token, other] of Object.entries(ctx.labels)) {
    if (token === ctx.labelToken) continue;
    if (other.tier === value) highest = Math.max(highest, Number(other.rank_in_tier || 0));
  }
  rank.value = String(highest + 1);
}

// "Same rubric as candidate X": that candidate's scores. A score the reviewer set or confirmed
// there counts as set here; one still pre-filled there stays pre-filled (nobody judged it).
export function copyRubric(ctx, form, token) {
  const source = ctx.labels[token];
  if (!source) return false;
  const names = prefilledSet(form);
  const sourcePrefilled = new Set(String(source.prefilled || "").split(",").filter(Boolean));
  let copied = 0;
  for (const row of form.querySelectorAll(".rv-score[data-criterion]")) {
    const criterion = row.dataset.criterion;
    const value = source[criterion];
    if (value === undefined || value === null || value === "") continue;
    const radio = form.querySelector('input[name="' + criterion + '"][value="' + value + '"]');
    if (!radio) continue;
    radio.checked = true;
    if (sourcePrefilled.has(criterion)) names.add(criterion);
    else names.delete(criterion);
    copied += 1;
  }
  writePrefilled(form, names);
  return copied > 0;
}

export function setTier(ctx, value) {
  if (!ctx.current || ctx.config.locked) return;
  const form = ctx.labelForm;
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
    if (!form) return;
    if (el.matches("select[data-same-as]")) {
      const copied = el.value && copyRubric(ctx, form, el.value);
      el.value = "";
      if (copied) save(ctx, form);
      return;
    }
    if (el.name === "tier") {
      fillRank(ctx, form, el.value);
      prefillRubric(ctx, form, el.value);
    }
    if (el.type === "radio") confirmScore(form, el);
    if (el.type !== "textarea" && el.type !== "number") save(ctx, form);
  });
  // Clicking the pre-filled score itself fires no change: it confirms that score.
  ctx.root.addEventListener("click", (ev) => {
    const el = ev.target;
    if (!(el instanceof HTMLInputElement) || el.type !== "radio" || !el.checked) return;
    const form = el.closest("form.rv-label");
    if (form && confirmScore(form, el)) save(ctx, form);
  });
  ctx.root.addEventListener("input", (ev) => {
    const form = ev.target.closest("form.rv-label");
    if (!form || (ev.target.type !== "textarea" && ev.target.type !== "number")) return;
    clearTimeout(ctx.typingTimer);
    ctx.typingTimer = setTimeout(() => {
      ctx.typingTimer = null;
      save(ctx, form);
    }, 600);
  });
  const same = ctx.labelForm && ctx.labelForm.querySelector(".rv-same-as");
  if (same && ctx.panels.length > 1) same.hidden = false;
}
