// Blind review page script, as ES modules (no build step; js/ holds one module per concern).
// Progressive enhancement: every form and link works without it; this adds candidate tabs,
// keyboard navigation, autosave, inline fix requests, lazy trajectories and the activity
// heartbeat the server turns into active time. No inline handlers and no HTML built from
// strings: inserted HTML always comes from the server's own (escaping) templates.

import { allSaved, installAutosave, save } from "./js/autosave.js";
import { installClaims } from "./js/claims.js";
import { createContext } from "./js/context.js";
import { installExpand } from "./js/expand.js";
import { markFixes, openFix, submitFix } from "./js/fixes.js";
import { installKeys } from "./js/keys.js";
import { loadTrajectory, moreFile, moreTrajectory } from "./js/fragments.js";
import { preparePanel } from "./js/panels.js";
import { cellSide, findRow, goFile, setCursor, showPanel, sideLine } from "./js/navigation.js";
import { showFieldProblems, showProblemsFor } from "./js/problems.js";
import { post, showProblems } from "./js/server.js";
import { installTabs } from "./js/tabs.js";
import { startTiming } from "./js/timing.js";

installExpand();

const root = document.getElementById("rv");
if (root) start(root);

function start(root) {
  // The page places itself (candidate from the hash, the end card after Submit); the browser's
  // own restoring of the old scroll offset after load would undo that.
  history.scrollRestoration = "manual";
  const ctx = createContext(root);
  ctx.showProblemsFor = (token) => showProblemsFor(ctx, token);
  startTiming(ctx);

  root.addEventListener("click", (ev) => {
    const el = ev.target;
    const tab = el.closest(".rv-tab");
    if (tab) {
      // Only a plain primary click is the widget's: Ctrl/Cmd+click, Shift+click (and the
      // middle button, which fires no click) are the browser's, which opens the candidate's own
      // page of this review (?c=) in a new tab or window; Alt+click is its download.
      if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
      ev.preventDefault();
      showPanel(ctx, ctx.panels.find((p) => p.dataset.token === tab.dataset.token));
      return;
    }
    const goto = el.closest("[data-goto]");
    if (goto) {
      ev.preventDefault();
      const item = goto.closest("[data-path]");
      const row = findRow(ctx, item.dataset.path, item.dataset.line, item.dataset.side);
      if (row) setCursor(ctx, row, item.dataset.side);
      return;
    }
    const fileLink = el.closest("[data-file-link]");
    if (fileLink) {
      ev.preventDefault();
      const id = fileLink.closest("li").dataset.fileId;
      const file = Array.from(ctx.current.querySelectorAll(".rv-file")).find((f) => f.dataset.fileId === id);
      if (file) goFile(ctx, file);
      return;
    }
    const more = el.closest("[data-traj-more], [data-traj-link]");
    if (more) {
      ev.preventDefault();
      if (more.matches("[data-traj-more]")) moreTrajectory(more);
      else loadTrajectory(more.closest(".rv-traj"), more.href);
      return;
    }
    const moreFileLink = el.closest("[data-more-file]");
    if (moreFileLink) {
      ev.preventDefault();
      moreFile(moreFileLink);
      return;
    }
    const cell = el.closest("td.d-ln, td.d-code");
    const row = cell && cell.closest("tr[data-o], tr[data-n]");
    if (row && !el.closest("a, button") && sideLine(row, cellSide(cell)) !== null) {
      setCursor(ctx, row, cellSide(cell));
      if (cell.classList.contains("d-ln")) openFix(ctx, row);
    }
  });

  installAutosave(ctx);

  root.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (form.matches("form.rv-label")) {
      ev.preventDefault();
      save(ctx, form);
      return;
    }
    if (submitFix(ctx, form)) {
      ev.preventDefault();
    } else if (form.matches(".rv-traj-search")) {
      ev.preventDefault();
      const url = form.action + "?q=" + encodeURIComponent(form.elements.q.value);
      loadTrajectory(form.closest(".rv-traj"), url);
    } else if (form.id === "rv-submit") {
      ev.preventDefault();
      await allSaved(ctx);
      const data = await post(ctx, form);
      if (data.ok) window.location.assign(data.url);
      else if (data.fields) showFieldProblems(ctx, data.fields);
      else showProblems(data.problems);
    }
  });
  installKeys(ctx);

  for (const panel of ctx.panels) if (panel.dataset.loaded) preparePanel(ctx, panel);
  // Fix marks and the like on context rows fetched when expanded.
  root.addEventListener("rv-expanded", (ev) => markFixes(ev.target.closest(".rv-panel") || root));
  installClaims(ctx);
  const fromHash = ctx.panels.find((p) => "#" + p.id === window.location.hash);
  const active = ctx.panels.find((p) => p.dataset.token === ctx.config.active);
  const first = fromHash || active || ctx.panels[0];
  // The server marked the candidate it brought as current (shown as the page arrives); another
  // one named by the URL's hash is on its way: until it is here no candidate shows, rather than
  // one the reviewer did not ask for.
  if (first !== active) for (const el of ctx.root.querySelectorAll(".rv-panel.is-current, .rv-tab.is-current")) el.classList.remove("is-current");
  installTabs(ctx);
  showPanel(ctx, first, { quiet: true }).then(() => {
    // Just submitted: the end of the review is what to see, with where to go next focused.
    const done = document.getElementById("rv-done");
    if (done && !fromHash) {
      done.scrollIntoView({ block: "start" });
      const next = document.getElementById("rv-next-group") || document.getElementById("rv-back-to-queue");
      if (next) next.focus({ preventScroll: true });
    }
    // One activity clock per review: a page opened in a background tab (a Ctrl+click on a
    // tab) says "focus" once shown (timing.js), not while the reviewer reads another page.
    if (!document.hidden) ctx.send("focus");
    // Keys, forms and tabs answer from here on: what a test (or a script) waits for before
    // acting, since a click that comes earlier is the browser's plain form post.
    root.dataset.ready = "";
  });
}
