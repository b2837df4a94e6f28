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

// `fields`: [{candidate: token, field, text}] from the submit endpoint. Problems that belong to
// no field of a shown candidate go to the page's list.
export function showFieldProblems(ctx, fields) {
  clearFieldProblems(ctx.root);
  const loose = [];
  let first = null;
  for (const item of fields) {
    const panel = ctx.panels.find((p) => p.dataset.token === item.candidate);
    const anchor = panel && ANCHORS[item.field] && panel.querySelector("form.rv-label " + ANCHORS[item.field]);
    if (!anchor) {
      loose.push(item.text);
      continue;
    }
    const note = document.createElement("p");
    note.className = "rv-field-error";
    note.setAttribute("role", "alert");
    note.textContent = item.text;
    anchor.after(note);
    anchor.classList.add("has-problem");
    const tab = ctx.tabs.find((t) => t.dataset.token === item.candidate);
    if (tab) tab.classList.add("has-problem");
    if (!first) first = { panel: panel, anchor: anchor };
  }
  showProblems(loose, { scroll: !first });
  if (first) {
    if (first.panel !== ctx.current) showPanel(ctx, first.panel, { keepScroll: true });
    const control = first.anchor.querySelector("input:not([disabled]), select, textarea") || first.anchor;
    control.focus();
    first.anchor.scrollIntoView({ block: "nearest" });
  }
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
