// Line-anchored fix requests (opened from the cursor or a line number, added and removed
// without a reload) and the shared-change badges drawn on the diff.

import { codeCell, rowInFile, rowLine } from "./navigation.js";
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
  const files = filesByPath(panel);
  for (const li of panel.querySelectorAll(".rv-fix")) {
    const file = files.get(li.dataset.path);
    const row = file && rowInFile(file, li.dataset.line, li.dataset.side);
    const cell = row && codeCell(row, li.dataset.side);
    if (cell) cell.classList.add("has-fix");
  }
}

function filesByPath(panel) {
  const files = new Map();
  for (const f of panel.querySelectorAll(".rv-file[data-path]")) if (!files.has(f.dataset.path)) files.set(f.dataset.path, f);
  return files;
}

// Shared changes, marked in the diff itself: the first old-side line of each hunk gets the same
// badge as the sidebar list ("3/5", "only this one"), drawn by CSS from data attributes so it
// never becomes part of the code's text (copying code copies no badge). One pass: each file's
// old-side rows are indexed once, however many hunks it has.
export function markShares(panel) {
  const items = panel.querySelectorAll(".rv-shared li[data-path]");
  if (!items.length) return;
  const files = filesByPath(panel);
  const rows = new Map(); // path -> Map(old line -> row)
  for (const li of items) {
    const badge = li.querySelector(".rv-badge");
    const path = li.dataset.path;
    if (!badge || !files.has(path)) continue;
    if (!rows.has(path)) {
      const byLine = new Map();
      for (const tr of files.get(path).querySelectorAll("tr[data-o]")) byLine.set(tr.dataset.o, tr);
      rows.set(path, byLine);
    }
    const row = rows.get(path).get(String(Number(li.dataset.line)));
    if (!row) continue;
    const unique = li.classList.contains("is-unique");
    const common = li.classList.contains("is-common");
    for (const cell of [row.cells[0], row.cells[1]]) {
      if (!cell) continue;
      cell.dataset.share = badge.textContent;
      if (unique) cell.classList.add("is-unique");
      if (common) cell.classList.add("is-common");
    }
    row.title = unique ? "No other candidate made this hunk" : badge.textContent + " candidates made this hunk";
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
