// Moving around: candidate tabs, files, changes and the row cursor.

import { expand } from "./expand.js";
import { ensureLoaded, placeLabelForm, prefetchAround } from "./panels.js";

// Show a candidate: fetched first if it is not in the page yet (until then the one shown stays,
// so what the reviewer sees is what keys and clicks act on). Keys wait for `ctx.switching`.
export function showPanel(ctx, panel, opts) {
  if (!panel || panel === ctx.current) return ctx.switching;
  ctx.target = panel;
  // Marked on the page while a candidate is on its way (tests and styles can wait for it).
  ctx.root.dataset.switching = panel.dataset.alias;
  const done = ctx.switching.then(async () => {
    if (ctx.target !== panel) return; // a later switch asked for another one
    await ensureLoaded(ctx, panel);
    if (ctx.target === panel && panel !== ctx.current) reveal(ctx, panel, opts);
  });
  ctx.switching = done.then(() => {
    if (ctx.switching === chained) delete ctx.root.dataset.switching;
  });
  const chained = ctx.switching;
  return ctx.switching;
}

function reveal(ctx, panel, opts) {
  // Scrolled and the URL replaced first, while the layout is still the one on screen: either
  // after the switch would make the browser lay out the new panel then and there (replaceState
  // saves the scroll position, which needs the layout), and again for the frame. Not scrolled
  // on arrival: the page is at its top, and a scroll would lay out the whole page as parsed.
  if (ctx.current && !(opts && opts.keepScroll)) window.scrollTo({ top: 0 });
  // Not on arrival without a hash: the browser scrolls to the URL's fragment once the page has
  // loaded, and would then jump past what the page chose to show (the end card after Submit).
  if (!(opts && opts.quiet) || window.location.hash) history.replaceState(null, "", "#" + panel.id);
  ctx.current = panel;
  placeLabelForm(ctx, panel);
  for (const p of ctx.panels) p.classList.toggle("is-current", p === panel);
  markTabs(ctx, panel);
  setCursor(ctx, null);
  ctx.currentFile = panel.querySelector(".rv-file");
  markFile(ctx);
  if (!(opts && opts.quiet)) ctx.send("focus");
  prefetchAround(ctx, panel);
}

// The tabs say which candidate is shown (tabs.js makes them a tab widget): the selected tab is
// the one Tab reaches (roving tabindex), or the first while none is. Focus on the bar moves to
// the selected tab, so after a "]" pressed there focus is not left on a tab no longer selected.
export function markTabs(ctx, panel) {
  const focused = ctx.tabs.includes(document.activeElement);
  const selected = panel ? ctx.tabs.find((t) => t.dataset.token === panel.dataset.token) : null;
  for (const t of ctx.tabs) {
    t.classList.toggle("is-current", t === selected);
    t.setAttribute("aria-selected", String(t === selected));
    t.tabIndex = t === (selected || ctx.tabs[0]) ? 0 : -1;
  }
  if (selected && focused && document.activeElement !== selected) selected.focus();
}

export function stepPanel(ctx, delta) {
  const i = ctx.panels.indexOf(ctx.target || ctx.current);
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

// Line numbers live on the row: data-o (old side) and data-n (new side).
export function sideLine(row, side) {
  const line = row.dataset[side === "old" ? "o" : "n"];
  return line === undefined ? null : line;
}

// Which side a cell of a diff row is on: the first two cells are the old side.
export function cellSide(cell) {
  return cell.cellIndex < 2 ? "old" : "new";
}

// The code cell of `side` in a row.
export function codeCell(row, side) {
  return row.cells[side === "old" ? 1 : 3] || null;
}

export function rowLine(ctx, row) {
  // The focused line: the preferred side if that side has a line, else the other side.
  for (const side of [ctx.cursorSide, ctx.cursorSide === "new" ? "old" : "new"]) {
    const line = sideLine(row, side);
    if (line !== null) return { side: side, line: line };
  }
  return null;
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
  return file ? rowInFile(file, line, side) : null;
}

export function rowInFile(file, line, side) {
  return file.querySelector("tr[data-" + (side === "old" ? "o" : "n") + '="' + Number(line) + '"]');
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
