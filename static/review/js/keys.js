// Keyboard shortcuts and the help dialog ("?" lists them).

import { setTier, toggleViewed } from "./autosave.js";
import { expandAll } from "./expand.js";
import { openFix } from "./fixes.js";
import { stepChange, stepFile, stepPanel } from "./navigation.js";

export function installKeys(ctx) {
  const help = document.getElementById("rv-help");
  function toggleHelp(show) {
    help.hidden = !show;
    if (show) document.getElementById("rv-help-close").focus();
  }
  document.getElementById("rv-help-open").addEventListener("click", () => toggleHelp(true));
  document.getElementById("rv-help-close").addEventListener("click", () => toggleHelp(false));
  help.addEventListener("click", (ev) => {
    if (ev.target === help) toggleHelp(false);
  });

  const keys = {
    j: () => stepChange(ctx, 1),
    k: () => stepChange(ctx, -1),
    n: () => stepFile(ctx, 1),
    p: () => stepFile(ctx, -1),
    "]": () => stepPanel(ctx, 1),
    "[": () => stepPanel(ctx, -1),
    1: () => setTier(ctx, "t1"),
    2: () => setTier(ctx, "t2"),
    3: () => setTier(ctx, "t3"),
    x: () => setTier(ctx, "exploit"),
    c: () => openFix(ctx, null),
    r: () => {
      // Into the rubric: the first score row (then digits and Tab).
      const row = ctx.current && ctx.current.querySelector(".rv-scores .rv-dots");
      const radio = row && (row.querySelector("input:checked") || row.querySelector("input"));
      if (radio && !radio.disabled) radio.focus();
    },
    e: () => {
      if (ctx.currentFile) expandAll(Array.from(ctx.currentFile.querySelectorAll("button.d-expand")));
    },
    v: () => toggleViewed(ctx),
    t: () => {
      const details = ctx.current && ctx.current.querySelector(".rv-traj");
      if (details) details.open = !details.open;
    },
    m: () => {
      const other = ctx.panels[(ctx.panels.indexOf(ctx.current) + 1) % ctx.panels.length];
      const url = new URL(ctx.root.dataset.compareUrl, window.location.href);
      url.searchParams.set("a", ctx.current.dataset.token);
      url.searchParams.set("b", other.dataset.token);
      window.location.assign(url.toString());
    },
    S: () => {
      const button = document.querySelector("#rv-submit button");
      if (button) button.focus();
    },
    "?": () => toggleHelp(help.hidden),
  };

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.key === "Escape") {
      toggleHelp(false);
      const details = t.closest && t.closest(".rv-fix-new");
      if (details) details.open = false;
      if (t.blur) t.blur();
      return;
    }
    const typingTarget = t.matches && t.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
    if (typingTarget) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && t.closest(".rv-fix-form")) {
        ev.preventDefault();
        t.closest("form").requestSubmit();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t.matches && t.matches("#rv-submit button") && ev.key === "Enter") return;
    // On a rubric or confidence row, a digit picks that score (then Tab moves to the next row).
    if (t.matches && t.matches(".rv-dots input[type=radio]") && /^[1-5]$/.test(ev.key)) {
      ev.preventDefault();
      const pick = t.form.querySelector('input[name="' + t.name + '"][value="' + ev.key + '"]');
      if (pick && !pick.disabled) {
        pick.checked = true;
        pick.focus();
        pick.dispatchEvent(new Event("change", { bubbles: true }));
      }
      return;
    }
    const action = keys[ev.key];
    if (action) {
      ev.preventDefault();
      // After any candidate switch still loading: a key acts on the candidate it follows.
      ctx.switching.then(action);
    }
  });
}
