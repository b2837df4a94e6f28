// The review page's shared state: one object every module reads and updates, so the modules
// stay independent of each other's internals (no module-level globals).

export function createContext(root) {
  const csrfInput = root.querySelector("input[name=csrfmiddlewaretoken]");
  const config = JSON.parse(document.getElementById("rv-config").textContent);
  return {
    root: root,
    config: config,
    csrf: csrfInput ? csrfInput.value : "",
    panels: Array.from(root.querySelectorAll(".rv-panel")),
    tabs: Array.from(root.querySelectorAll(".rv-tab")),
    current: null, // the candidate panel shown
    currentFile: null, // the file the cursor is in (or was last moved to)
    cursor: null, // the focused diff row
    cursorSide: "new", // which side of that row the reviewer last clicked
    // The page's one label form, the candidate it shows, and every candidate's label (kept
    // here as the reviewer edits, so the form can be refilled for whichever candidate is shown).
    labelForm: root.querySelector("form.rv-label"),
    labelToken: config.active,
    labels: config.labels || {},
    problems: {}, // token -> [{field, text}] from the last failed Submit
    saving: Promise.resolve(), // the label saves, one at a time
    statusText: {}, // token -> the last save status shown for that candidate
    typingTimer: null, // a pending save of typed fields
    showProblemsFor: () => {}, // problems.js: show a candidate's field problems in the form
    switching: Promise.resolve(), // the latest candidate switch (keys wait for it)
    send: () => {}, // the activity heartbeat's sender (timing.js replaces it)
  };
}
