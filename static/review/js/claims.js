// The grader's claims on the code, after the reveal (templates/review/_claims.html): each
// claim is moved from its candidate's list onto the diff row it cites, and marked correct /
// wrong / can't tell by click or key (g / G next / previous claim; y, n, u on a claim).
// Nothing here builds HTML from strings: the claims are the server's own elements, moved.

import { expand } from "./expand.js";
import { rowIn } from "./navigation.js";
import { sendForm } from "./server.js";

const KEYS = { y: "correct", n: "wrong", u: "unsure" };

function typing(t) {
  return t.matches && t.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
}

// The rows a claim cites, with any collapsed context around them opened.
function citedRows(panel, claim) {
  const rows = [];
  const { path, side } = claim.dataset;
  const end = Number(claim.dataset.lineEnd);
  for (let line = Number(claim.dataset.lineStart); line <= end; line++) {
    const row = rowIn(panel, path, line, side);
    if (!row) continue;
    const body = row.closest("tbody");
    if (body.hidden) {
      const table = row.closest("table");
      const button = table.querySelector('button.d-expand[data-expand="' + CSS.escape(body.id) + '"]');
      if (button) expand(button);
    }
    rows.push(row);
  }
  return rows;
}

// Claims about a candidate's own lines (or the base's, shown on its old side) go on its diff;
// one citing another candidate's lines stays in the list, which names where they are.
function place(claim) {
  const panel = claim.closest(".rv-panel");
  if (!panel || claim.closest(".rv-claim-row") || claim.dataset.target !== panel.dataset.token) return true;
  const rows = citedRows(panel, claim);
  if (!rows.length) return false;
  for (const row of rows) row.classList.add("is-claimed");
  const last = rows[rows.length - 1];
  let holder = last.nextElementSibling;
  if (!holder || !holder.classList.contains("rv-claim-row")) {
    holder = document.createElement("tr");
    holder.className = "rv-claim-row";
    const cell = document.createElement("td");
    cell.colSpan = last.cells.length > 4 ? last.cells.length : 4;
    holder.append(cell);
    last.after(holder);
  }
  holder.cells[0].append(claim);
  const slot = panel.querySelector('.rv-claim-slot[data-slot="' + CSS.escape(claim.dataset.claim) + '"]');
  const placed = slot && slot.querySelector(".rv-claim-placed");
  if (placed) placed.hidden = false;
  return true;
}

// Places the claims still listed under `scope` (a panel, or the page) on their diff rows. The
// panel loader calls it for each candidate's panel as it arrives (panels.js), and the page for
// rows fetched later (folded context, further pages of a long file).
let placing = false; // placing may open folded context, which asks again: once is enough

export function placeClaims(scope) {
  if (placing) return;
  placing = true;
  try {
    for (const claim of scope.querySelectorAll(".rv-claim-list .rv-claim")) place(claim);
  } finally {
    placing = false;
  }
}

async function save(ctx, form) {
  const status = form.querySelector(".rv-claim-status");
  status.textContent = "Saving…";
  const data = await sendForm(ctx, form.action, new FormData(form));
  const claim = form.closest(".rv-claim");
  if (data.ok) {
    status.textContent = "Saved";
    claim.classList.add("is-marked");
  } else {
    status.textContent = (data.problems || ["Not saved."]).join(" ");
  }
}

function claimsIn(ctx) {
  const scope = ctx.current || ctx.root;
  return Array.from(scope.querySelectorAll(".rv-claim")).filter((c) => c.offsetParent !== null);
}

function step(ctx, delta) {
  const claims = claimsIn(ctx);
  if (!claims.length) return;
  const here = document.activeElement && document.activeElement.closest(".rv-claim");
  const i = claims.indexOf(here);
  const next = claims[i < 0 ? (delta > 0 ? 0 : claims.length - 1) : (i + delta + claims.length) % claims.length];
  next.focus({ preventScroll: true });
  next.scrollIntoView({ block: "center" });
}

function pick(ctx, claim, value) {
  const radio = claim.querySelector('input[name="mark"][value="' + value + '"]');
  if (!radio) return;
  radio.checked = true;
  radio.focus({ preventScroll: true });
  save(ctx, radio.form);
}

export function installClaims(ctx) {
  const root = ctx.root;
  // Claims exist only after Submit (and only where the campaign reveals the verdict).
  if (!ctx.config.locked && !root.querySelector(".rv-claim")) return;
  placeClaims(root);
  // Rows that arrive later inside a panel (folded context expanded, a long file's next page).
  root.addEventListener("rv-expanded", (ev) => placeClaims(ev.target.closest(".rv-panel") || root));
  root.addEventListener("change", (ev) => {
    const form = ev.target.closest && ev.target.closest(".rv-claim-form");
    if (form) save(ctx, form);
  });
  root.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form.matches(".rv-claim-form")) {
      ev.preventDefault();
      save(ctx, form);
    }
  });
  root.addEventListener("click", (ev) => {
    const link = ev.target.closest && ev.target.closest("[data-claim-link]");
    if (!link) return;
    ev.preventDefault();
    const claim = document.getElementById("claim-" + link.dataset.claimLink);
    if (claim) {
      claim.focus({ preventScroll: true });
      claim.scrollIntoView({ block: "center" });
    }
  });
  // Capturing, so a claim's keys are handled before the page's own (keys.js: "n" is next file).
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(t)) return;
    const claim = t.closest && t.closest(".rv-claim");
    if (claim && KEYS[ev.key]) {
      ev.preventDefault();
      ev.stopPropagation();
      pick(ctx, claim, KEYS[ev.key]);
    } else if (ev.key === "g" || ev.key === "G") {
      ev.preventDefault();
      ev.stopPropagation();
      step(ctx, ev.key === "g" ? 1 : -1);
    }
  }, true);
}
