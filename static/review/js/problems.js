// Problems shown where they are: next to the candidate and the field they concern, with the
// tab marked and the first problem focused, instead of a list at the top of the page.

import { showPanel } from "./navigation.js";
import { showProblems } from "./server.js";

// Where each label field's problem goes in the candidate's form.
const ANCHORS = {
  tier: "fieldset.rv-tier",
  rank_in_tier: "label.rv-rank",
  rubric: "fieldset.rv-scores",
  mergeability: "label.rv-merge",
};

export function clearFieldProblems(scope) {
  for (const el of scope.querySelectorAll(".rv-field-error")) el.remove();
  for (const el of scope.querySelectorAll(".has-problem")) el.classList.remove("has-problem");
}

// `fields`: [{candidate: token, field, text}] from the submit endpoint. Each candidate's field
// problems are shown in the label form when that candidate is shown (its tab is marked until
// then); problems that belong to no field of a candidate go to the page's list.
export async function showFieldProblems(ctx, fields) {
  ctx.problems = {};
  for (const tab of ctx.tabs) tab.classList.remove("has-problem");
  const loose = [];
  let first = null;
  for (const item of fields) {
    const panel = ctx.panels.find((p) => p.dataset.token === item.candidate);
    if (!panel || !ANCHORS[item.field]) {
      loose.push(item.text);
      continue;
    }
    (ctx.problems[item.candidate] = ctx.problems[item.candidate] || []).push(item);
    const tab = ctx.tabs.find((t) => t.dataset.token === item.candidate);
    if (tab) tab.classList.add("has-problem");
    if (!first) first = panel;
  }
  showProblems(loose, { scroll: !first });
  if (!first) return;
  if (first !== ctx.current) await showPanel(ctx, first, { keepScroll: true });
  const anchor = showProblemsFor(ctx, first.dataset.token);
  if (anchor) {
    const control = anchor.querySelector("input:not([disabled]), select, textarea") || anchor;
    control.focus();
    anchor.scrollIntoView({ block: "nearest" });
  }
}

// Draw one candidate's stored field problems in the label form; returns the first anchor.
export function showProblemsFor(ctx, token) {
  const form = ctx.labelForm;
  if (!form) return null;
  clearFieldProblems(form);
  let first = null;
  for (const item of ctx.problems[token] || []) {
    const anchor = form.querySelector(ANCHORS[item.field]);
    if (!anchor) continue;
    const note = document.createElement("p");
    note.className = "rv-field-error";
    note.setAttribute("role", "alert");
    note.textContent = item.text;
    anchor.after(note);
    anchor.classList.add("has-problem");
    if (!first) first = anchor;
  }
  return first;
}

// A problem of one small form (a fix request), shown inside that form.
export function showFormProblems(form, list) {
  let box = form.querySelector(".rv-form-errors");
  if (!box) {
    box = document.createElement("ul");
    box.className = "rv-form-errors";
    box.setAttribute("role", "alert");
    form.prepend(box);
  }
  box.replaceChildren();
  for (const text of list || []) {
    const li = document.createElement("li");
    li.textContent = text;
    box.append(li);
  }
  box.hidden = !box.children.length;
}
