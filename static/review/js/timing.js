// The activity heartbeat the server turns into active time: input resets the idle clock,
// hidden tabs and idle spells are reported, and each event names the candidate on screen.

export function startTiming(ctx) {
  let lastInput = Date.now();
  let state = "";
  const idle = () => Date.now() - lastInput > ctx.config.idleMs;
  function send(kind) {
    if (ctx.config.locked) return;
    state = kind;
    const body = JSON.stringify({
      events: [{ kind: kind, candidate: ctx.current ? ctx.current.dataset.token : null }],
    });
    fetch(ctx.root.dataset.eventsUrl, {
      method: "POST",
      keepalive: true,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": ctx.csrf },
      body: body,
    }).catch(() => {});
  }
  for (const type of ["keydown", "mousedown", "mousemove", "wheel", "scroll", "touchstart"]) {
    window.addEventListener(
      type,
      () => {
        const wasIdle = state === "idle";
        lastInput = Date.now();
        if (wasIdle && !document.hidden) send("focus");
      },
      { passive: true, capture: true },
    );
  }
  document.addEventListener("visibilitychange", () => send(document.hidden ? "hidden" : "focus"));
  window.addEventListener("pagehide", () => send("hidden"));
  setInterval(() => {
    if (document.hidden) return;
    if (idle()) {
      if (state !== "idle") send("idle");
    } else {
      send("heartbeat");
    }
  }, ctx.config.heartbeatMs);
  ctx.send = send;
  return send;
}
