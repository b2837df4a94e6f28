// Candidate panels on demand: the page brings the active candidate's panel; the others are
// fetched (as the server's own escaped fragment) and parsed into their hidden panels, the
// neighbours of the panel shown ahead of time while the browser is idle, any other when its tab
// is opened. Showing a panel already parsed is then a class toggle. The page's one label form
// moves into the panel shown, refilled with that candidate's label.
//
// Parsing a panel (hundreds of kilobytes of diff rows) in one go would hold the main thread for
// longer than a frame, so a panel is parsed one file at a time (the server marks where each
// file begins, templates/review/_candidate_main.html): in idle time when fetched ahead, and
// yielding between files (but not waiting for idle time) when a reviewer waits for it.

import { showViewed, showLabel } from "./autosave.js";
import { placeClaims } from "./claims.js";
import { markFixes, markShares } from "./fixes.js";
import { installTrajectories } from "./fragments.js";

const PART = "<!--rv-part-->";

const texts = new Map(); // token -> Promise of the fragment's HTML text
const loads = new Map(); // token -> Promise, resolved once the panel holds its content
const waited = new Set(); // tokens a reviewer waits for: parsed without waiting for idle time
const wakers = new Map(); // token -> ends the idle wait that panel's parsing is in

function fetchText(panel) {
  const token = panel.dataset.token;
  if (!texts.has(token)) {
    const request = fetch(panel.dataset.src, { headers: { "X-Fragment": "1" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
      .catch((e) => {
        texts.delete(token);
        throw e;
      });
    texts.set(token, request);
  }
  return texts.get(token);
}

const idleCallback = window.requestIdleCallback || ((f) => setTimeout(f, 50));

// A break in a panel's parsing: the browser's next idle period for a panel fetched ahead, a
// plain yield (input and frames first) for one a reviewer waits for.
function pause(token) {
  if (waited.has(token)) {
    return window.scheduler && scheduler.yield ? scheduler.yield() : new Promise((r) => setTimeout(r, 0));
  }
  return new Promise((resolve) => {
    const done = () => {
      if (wakers.get(token) === done) wakers.delete(token);
      resolve();
    };
    wakers.set(token, done);
    idleCallback(done, { timeout: 2000 });
  });
}

function parse(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
}

// Where a file's text may be cut (between the parts of its tables, review/diffs/html.py), and
// about how much a piece parsed at once holds.
const CUT = '<div class="d-part"';
const PIECE_CHARS = 40000;

function pieces(text) {
  const out = [];
  let start = 0;
  let at = text.indexOf(CUT, PIECE_CHARS);
  while (at !== -1) {
    out.push(text.slice(start, at));
    start = at;
    at = text.indexOf(CUT, at + PIECE_CHARS);
  }
  out.push(text.slice(start));
  return out;
}

function lastFile(column) {
  const files = column.querySelectorAll(":scope > .rv-file");
  return files[files.length - 1] || null;
}

// Fetch and parse a panel into its (hidden) section; false if it could not be fetched.
async function fill(ctx, panel) {
  const token = panel.dataset.token;
  let html;
  try {
    html = await fetchText(panel);
  } catch (e) {
    return false;
  }
  if (panel.dataset.loaded) return true;
  // The part before the first file is the panel's frame (its sidebar and the start of the
  // diff column, closed by the parser); each part after is one file, and the last also holds
  // what follows the files (test output, trajectory) with the frame's closing tags, which the
  // parser drops as stray. A long file is parsed in pieces: the first opens the file (closed by
  // the parser), each later one is parsed inside a stand-in box whose end tag is the file's
  // own, so what the piece holds after the file (the next part of the column) comes out after
  // the box, as a parser reading the whole text would place it.
  const [head, ...files] = html.split(PART);
  await pause(token);
  panel.replaceChildren(parse(head));
  const column = panel.querySelector(".rv-main") || panel;
  for (const text of files) {
    const [first, ...rest] = pieces(text);
    await pause(token);
    column.append(parse(first));
    const file = lastFile(column);
    for (const piece of rest) {
      await pause(token);
      const content = parse("<div>" + piece);
      const box = content.firstElementChild;
      (file || column).append(...box.childNodes);
      box.remove();
      column.append(content);
    }
  }
  panel.dataset.loaded = "1";
  preparePanel(ctx, panel);
  return true;
}

function load(ctx, panel) {
  const token = panel.dataset.token;
  if (panel.dataset.loaded) return Promise.resolve(true);
  if (!loads.has(token)) {
    const job = fill(ctx, panel).then((ok) => {
      if (!ok) loads.delete(token); // asked again later
      return ok;
    });
    loads.set(token, job);
  }
  return loads.get(token);
}

// Resolves once the panel holds its content (at once for a panel already there).
export async function ensureLoaded(ctx, panel) {
  if (panel.dataset.loaded) return;
  const token = panel.dataset.token;
  waited.add(token);
  const wake = wakers.get(token);
  if (wake) wake();
  const ok = await load(ctx, panel);
  if (!ok && !panel.dataset.loaded) {
    const note = document.createElement("p");
    note.className = "rv-panel-wait";
    note.textContent = "Could not load this candidate; reload the page.";
    panel.replaceChildren(note);
  }
}

// What the page script draws on a panel's server HTML.
export function preparePanel(ctx, panel) {
  // The candidate's notes come with its panel (escaped), not in the page's JSON.
  const state = ctx.labels[panel.dataset.token];
  const notes = panel.querySelector(".rv-label-notes");
  if (state && notes && !("notes" in state)) state.notes = notes.dataset.notes || "";
  showViewed(ctx, panel, ctx.config.viewed[panel.dataset.token] || []);
  markFixes(panel);
  markShares(panel);
  installTrajectories(panel);
  // After the reveal: the grader's claims on this candidate, onto its diff rows.
  placeClaims(panel);
}

// Fetch and parse the neighbours of the panel shown, in idle time (the next one first).
export function prefetchAround(ctx, panel) {
  const i = ctx.panels.indexOf(panel);
  const n = ctx.panels.length;
  const around = [ctx.panels[(i + 1) % n], ctx.panels[(i - 1 + n) % n]];
  idleCallback(
    async () => {
      for (const other of around) if (other && other !== panel) await load(ctx, other);
    },
    { timeout: 2000 },
  );
}

// Put the one label form into `panel` and fill it with that candidate's label.
export function placeLabelForm(ctx, panel) {
  const slot = panel.querySelector(".rv-label-slot");
  if (!slot || !ctx.labelForm) return;
  showLabel(ctx, panel.dataset.token);
  if (ctx.labelForm.parentElement !== slot) slot.append(ctx.labelForm);
}
