// Line-anchored fix requests (opened from the cursor or a line number, added and removed
// without a reload) and the shared-change badges drawn on the diff.

import { rowIn, rowLine } from "./navigation.js";
import { showFormProblems } from "./problems.js";
import { post, showProblems } from "./server.js";

export function openFix(ctx, row) {
  if (!ctx.current || ctx.config.locked) return;
  const details = ctx.current.querySelector(".rv-fix-new");
  if (!details) return;
  const form = details.querySelector("form");
  const target = row || ctx.cursor;
  if (target) {
    const at = rowLine(ctx, target);
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

export function markFixes(panel) {
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
export function markShares(panel) {
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

async function addFix(ctx, form) {
  const data = await post(ctx, form);
  if (!data.ok) {
    // Beside the form the reviewer is typing in, which stays open with what they wrote.
    showFormProblems(form, data.problems);
    form.elements.line.focus();
    return;
  }
  showFormProblems(form, []);
  const list = form.closest(".rv-side").querySelector(".rv-fixes");
  const template = document.createElement("template");
  template.innerHTML = data.html;
  list.append(template.content);
  form.elements.text.value = "";
  form.closest("details").open = false;
  document.activeElement.blur();
  markFixes(form.closest(".rv-panel"));
}

async function deleteFix(ctx, form) {
  const data = await post(ctx, form);
  if (data.ok) {
    const panel = form.closest(".rv-panel");
    form.closest(".rv-fix").remove();
    markFixes(panel);
  } else showProblems(data.problems);
}

// Handles a fix request form's submit; true when the form was one of ours.
export function submitFix(ctx, form) {
  if (form.matches(".rv-fix-form")) addFix(ctx, form);
  else if (form.matches(".rv-fix-delete")) deleteFix(ctx, form);
  else return false;
  return true;
}
