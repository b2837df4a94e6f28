// Candidate panels on demand: the page brings the active candidate's panel; the others are
// fetched (as the server's own escaped fragment) when their tab is opened, and the page's one
// label form moves into the panel shown, refilled with that candidate's label.

import { showViewed, showLabel } from "./autosave.js";
import { placeClaims } from "./claims.js";
import { markFixes, markShares } from "./fixes.js";
import { installTrajectories } from "./fragments.js";

const texts = new Map(); // token -> Promise of the fragment's HTML text

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

// Resolves once the panel holds its content (at once for a panel already there).
export async function ensureLoaded(ctx, panel) {
  if (panel.dataset.loaded) return;
  let html;
  try {
    html = await fetchText(panel);
  } catch (e) {
    const note = document.createElement("p");
    note.className = "rv-panel-wait";
    note.textContent = "Could not load this candidate; reload the page.";
    panel.replaceChildren(note);
    return;
  }
  if (panel.dataset.loaded) return;
  const template = document.createElement("template");
  template.innerHTML = html;
  panel.replaceChildren(template.content);
  panel.dataset.loaded = "1";
  preparePanel(ctx, panel);
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

// Fetch (not parse) the neighbours of the panel shown, when the browser is idle.
export function prefetchAround(ctx, panel) {
  const i = ctx.panels.indexOf(panel);
  const n = ctx.panels.length;
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
  idle(() => {
    for (const other of [ctx.panels[(i + 1) % n], ctx.panels[(i - 1 + n) % n]]) {
      if (other && !other.dataset.loaded) fetchText(other).catch(() => {});
    }
  });
}

// Put the one label form into `panel` and fill it with that candidate's label.
export function placeLabelForm(ctx, panel) {
  const slot = panel.querySelector(".rv-label-slot");
  if (!slot || !ctx.labelForm) return;
  showLabel(ctx, panel.dataset.token);
  if (ctx.labelForm.parentElement !== slot) slot.append(ctx.labelForm);
}
