// Lazily loaded pieces: trajectories (paged and searchable) and further pages of long files,
// each a server-rendered fragment.

import { fragment } from "./server.js";

export async function loadTrajectory(details, url) {
  const body = details.querySelector(".rv-traj-body");
  body.replaceChildren(await fragment(url || details.dataset.src));
  details.dataset.loaded = "1";
}

export async function moreTrajectory(link) {
  const content = await fragment(link.href);
  const list = link.closest(".rv-traj-content").querySelector(".rv-events");
  const items = content.querySelector(".rv-events");
  if (items) list.append(...items.children);
  const nextLink = content.querySelector("[data-traj-more]");
  if (nextLink) link.replaceWith(nextLink);
  else link.remove();
}

export async function moreFile(link) {
  const pager = link.closest(".rv-pager");
  const content = await fragment(link.href);
  const page = content.querySelector(".rv-file-page");
  if (!page) return;
  const file = pager.closest(".rv-file");
  pager.replaceWith(...page.children);
  // Fix marks and grader claims on the rows just added (listeners in review.js and claims.js).
  if (file) file.dispatchEvent(new CustomEvent("rv-expanded", { bubbles: true }));
}

export function installTrajectories(root) {
  for (const details of root.querySelectorAll(".rv-traj")) {
    details.addEventListener("toggle", () => {
      if (details.open && !details.dataset.loaded) loadTrajectory(details);
    });
  }
}
