// Moving around: candidate tabs, files, changes and the row cursor.

import { expand } from "./expand.js";

export function showPanel(ctx, panel, opts) {
  if (!panel || panel === ctx.current) return;
  ctx.current = panel;
  for (const p of ctx.panels) p.classList.toggle("is-current", p === panel);
  for (const t of ctx.tabs) t.classList.toggle("is-current", t.dataset.token === panel.dataset.token);
  // Not on arrival without a hash: the browser scrolls to the URL's fragment once the page has
  // loaded, and would then jump past what the page chose to show (the end card after Submit).
  if (!(opts && opts.quiet) || window.location.hash) history.replaceState(null, "", "#" + panel.id);
  setCursor(ctx, null);
  ctx.currentFile = panel.querySelector(".rv-file");
  markFile(ctx);
  if (!(opts && opts.quiet)) ctx.send("focus");
  if (!(opts && opts.keepScroll)) window.scrollTo({ top: 0 });
}

export function stepPanel(ctx, delta) {
  const i = ctx.panels.indexOf(ctx.current);
  showPanel(ctx, ctx.panels[(i + delta + ctx.panels.length) % ctx.panels.length]);
}

export function markFile(ctx) {
  if (!ctx.current) return;
  for (const f of ctx.current.querySelectorAll(".rv-file")) f.classList.toggle("is-current", f === ctx.currentFile);
  const id = ctx.currentFile ? ctx.currentFile.dataset.fileId : "";
  for (const li of ctx.current.querySelectorAll(".rv-files li")) li.classList.toggle("is-current", li.dataset.fileId === id);
}

export function setCursor(ctx, row, side) {
  if (ctx.cursor) ctx.cursor.classList.remove("is-cursor");
  ctx.cursor = row;
  if (side) ctx.cursorSide = side;
  if (!row) return;
  row.classList.add("is-cursor");
  ctx.currentFile = row.closest(".rv-file") || ctx.currentFile;
  markFile(ctx);
  row.scrollIntoView({ block: "center" });
}

export function rowLine(ctx, row) {
  // The focused line: the preferred side if that cell has a line, else the other side.
  const pick = (side) => row.querySelector('td.d-code[data-side="' + side + '"][data-line]');
  const cell = pick(ctx.cursorSide) || pick(ctx.cursorSide === "new" ? "old" : "new");
  return cell ? { side: cell.dataset.side, line: cell.dataset.line } : null;
}

export function stepChange(ctx, delta) {
  if (!ctx.current) return;
  const blocks = Array.from(ctx.current.querySelectorAll("tbody.d-change"));
  if (!blocks.length) return;
  const cursor = ctx.cursor;
  const here = cursor ? cursor.closest("tbody") : null;
  let target;
  if (!cursor) {
    target = delta > 0 ? blocks[0] : blocks[blocks.length - 1];
  } else if (delta > 0) {
    target = blocks.find((b) => b !== here && cursor.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  } else {
    target = blocks.filter((b) => b !== here && cursor.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_PRECEDING).pop();
  }
  if (target) setCursor(ctx, target.rows[0]);
}

export function stepFile(ctx, delta) {
  if (!ctx.current) return;
  const files = Array.from(ctx.current.querySelectorAll(".rv-file"));
  if (!files.length) return;
  const i = files.indexOf(ctx.currentFile);
  const next = files[Math.min(Math.max(i + delta, 0), files.length - 1)] || files[0];
  goFile(ctx, next);
}

export function goFile(ctx, file) {
  ctx.currentFile = file;
  const first = file.querySelector("tbody.d-change tr") || file.querySelector("tbody:not([hidden]) tr[class^=d-]");
  if (first) setCursor(ctx, first);
  else {
    setCursor(ctx, null);
    file.scrollIntoView({ block: "start" });
  }
  markFile(ctx);
}

// The row showing `line` on `side` of `path` in a panel, or null.
export function rowIn(panel, path, line, side) {
  const file = Array.from(panel.querySelectorAll(".rv-file")).find((f) => f.dataset.path === path);
  const cell = file && file.querySelector('td.d-code[data-side="' + side + '"][data-line="' + Number(line) + '"]');
  return cell ? cell.closest("tr") : null;
}

// The same row in the current panel, with its collapsed context expanded so it can be shown.
export function findRow(ctx, path, line, side) {
  const row = rowIn(ctx.current, path, line, side);
  if (!row) return null;
  const body = row.closest("tbody");
  if (body.hidden) {
    const file = row.closest(".rv-file");
    const button = file.querySelector('button.d-expand[data-expand="' + CSS.escape(body.id) + '"]');
    if (button) expand(button);
  }
  return row;
}
