// Expanding collapsed context: works on every page that shows diffs (review, compare,
// adjudication), so it needs nothing from the review page's state. On the review page the
// folded rows are not in the page: they are fetched from the panel's `data-context-url` (the
// server's own escaped rows), several blocks in one request.

export function expand(button) {
  return expandAll([button]);
}

export async function expandAll(buttons) {
  const found = [];
  for (const button of buttons) {
    const table = button.closest("table");
    const target = table && table.querySelector("#" + CSS.escape(button.dataset.expand || ""));
    if (target) found.push({ button, target });
  }
  const missing = found.filter((f) => !f.target.rows.length && f.button.closest("[data-context-url]"));
  if (missing.length) {
    const source = missing[0].button.closest("[data-context-url]");
    const url = new URL(source.dataset.contextUrl, window.location.href);
    for (const f of missing) url.searchParams.append("b", f.button.dataset.expand);
    const response = await fetch(url, { headers: { "X-Fragment": "1" }, credentials: "same-origin" });
    if (response.ok) {
      const template = document.createElement("template");
      template.innerHTML = await response.text();
      const bodies = new Map();
      for (const body of template.content.querySelectorAll("tbody[data-block]")) bodies.set(body.dataset.block, body);
      for (const f of missing) {
        const body = bodies.get(f.button.dataset.expand);
        if (body) f.target.append(...body.children);
      }
    }
  }
  for (const f of found) {
    if (!f.target.rows.length) continue;
    f.target.hidden = false;
    const holder = f.button.closest("tbody");
    if (holder) holder.remove();
    f.target.dispatchEvent(new CustomEvent("rv-expanded", { bubbles: true }));
  }
}

export function installExpand() {
  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest("button.d-expand");
    if (button) expand(button);
  });
}
