// Expanding collapsed context: works on every page that shows diffs (review, compare,
// adjudication), so it needs nothing from the review page's state.

export function expand(button) {
  const table = button.closest("table");
  const target = table && table.querySelector("#" + CSS.escape(button.dataset.expand || ""));
  if (target) {
    target.hidden = false;
    button.closest("tbody").remove();
  }
}

export function installExpand() {
  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest("button.d-expand");
    if (button) expand(button);
  });
}
