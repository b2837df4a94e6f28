// The candidate tabs as a WAI-ARIA tab widget (tablist, tab, tabpanel). The roles are set here,
// not by the server: without the script the bar is a list of links that each load the page for
// one candidate, and every panel is shown, which the tab roles would misdescribe.
//
// Automatic activation: Left/Right (wrapping), Home and End move focus along the bar and show
// that candidate; Enter and Space show the focused one (the tabs are links, which take Enter
// but not Space: Space scrolled the page and left the tab as it was). Only those keys, only on
// a tab and only without modifiers (Alt+Left is the browser's Back, Shift+Space scrolls up):
// every other key goes on to the page's shortcuts (keys.js) untouched.
// Ids and names come from the panels' anonymous ids (cand-<alias>), as the links already do.

import { markTabs, showPanel } from "./navigation.js";

export function installTabs(ctx) {
  const bar = ctx.root.querySelector(".rv-tabs");
  if (!bar || !ctx.tabs.length) return;
  const panelOf = (tab) => ctx.panels.find((p) => p.dataset.token === tab.dataset.token);
  bar.setAttribute("role", "tablist");
  for (const tab of ctx.tabs) {
    const panel = panelOf(tab);
    tab.id = panel.id + "-tab";
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", panel.id);
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", tab.id);
  }
  // Panels not shown are display: none (review.css), which hides them from assistive
  // technology as well: there is no second, ARIA-only state to keep in step.
  markTabs(ctx, ctx.panels.find((p) => p.classList.contains("is-current")));

  bar.addEventListener("keydown", (ev) => {
    const i = ctx.tabs.indexOf(ev.target);
    if (i === -1 || ev.ctrlKey || ev.metaKey || ev.altKey || ev.shiftKey) return;
    const n = ctx.tabs.length;
    const moves = { ArrowRight: (i + 1) % n, ArrowLeft: (i - 1 + n) % n, Home: 0, End: n - 1 };
    const to = ev.key === "Enter" || ev.key === " " ? i : moves[ev.key];
    if (to === undefined) return;
    // Not stopped: the activity clock (timing.js) listens for every key.
    ev.preventDefault();
    const tab = ctx.tabs[to];
    // Focus moves now; a candidate still to be fetched is selected once it is shown
    // (navigation.js), until then Tab comes back to the tab the reviewer moved to.
    for (const t of ctx.tabs) t.tabIndex = t === tab ? 0 : -1;
    tab.focus();
    showPanel(ctx, panelOf(tab));
  });
}
