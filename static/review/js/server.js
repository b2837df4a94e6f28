// Calls to the server. Inserted HTML always comes from the server's own (escaping) templates;
// nothing here builds HTML from strings.

export async function sendForm(ctx, url, body) {
  const response = await fetch(url, {
    method: "POST",
    body: body,
    credentials: "same-origin",
    headers: { Accept: "application/json", "X-CSRFToken": ctx.csrf },
  });
  let data = {};
  try {
    data = await response.json();
  } catch (e) {
    data = { ok: false, problems: ["The server answered " + response.status + "."] };
  }
  return data;
}

export function post(ctx, form) {
  return sendForm(ctx, form.action, new FormData(form));
}

export async function fragment(url) {
  const response = await fetch(url, { headers: { "X-Fragment": "1" }, credentials: "same-origin" });
  const template = document.createElement("template");
  template.innerHTML = response.ok ? await response.text() : "<p>Could not load this part.</p>";
  return template.content;
}

// The page's list of problems (those that belong to no one field); scrolled to unless told not.
export function showProblems(list, opts) {
  const box = document.getElementById("rv-problems");
  box.replaceChildren();
  for (const text of list || []) {
    const li = document.createElement("li");
    li.textContent = text;
    box.append(li);
  }
  box.hidden = !box.children.length;
  if (!box.hidden && !(opts && opts.scroll === false)) box.scrollIntoView({ block: "start" });
}
