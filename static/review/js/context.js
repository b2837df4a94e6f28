// The review page's shared state: one object every module reads and updates, so the modules
// stay independent of each other's internals (no module-level globals).

export function createContext(root) {
  const csrfInput = root.querySelector("input[name=csrfmiddlewaretoken]");
  return {
    root: root,
    config: JSON.parse(document.getElementById("rv-config").textContent),
    csrf: csrfInput ? csrfInput.value : "",
    panels: Array.from(root.querySelectorAll(".rv-panel")),
    tabs: Array.from(root.querySelectorAll(".rv-tab")),
    current: null, // the candidate panel shown
    currentFile: null, // the file the cursor is in (or was last moved to)
    cursor: null, // the focused diff row
    cursorSide: "new", // which side of that row the reviewer last clicked
    send: () => {}, // the activity heartbeat's sender (timing.js replaces it)
  };
}
