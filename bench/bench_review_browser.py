"""Benchmark: the blind review page in headless Chromium, on a big group and on the sample group.

The big group is bench_diff_render's (16 candidates, ~5,000 changed lines of edits to standard
library modules), as bench_review_page imports it (no base repository: the hunks' own
context). The sample group is the demo's. A live server runs in this process (an SQLite file
in a temporary directory, in WAL mode as the settings set it, and a LocMem cache) and is warmed
first. It is threaded and answers requests in parallel, each thread on its own connection, as
production's gunicorn threads do: a server answering one request at a time would queue a tab's
panel fetch behind the neighbours' prefetches and the heartbeats, which production never does.

Per group it prints:
  - bytes transferred before interaction (every response's encoded body and headers, from the
    Chrome DevTools protocol, until the network is idle after load), and the uncompressed size;
  - DOMContentLoaded and load (Navigation Timing);
  - long tasks, total and longest (a `longtask` PerformanceObserver installed before any script);
  - the renderer's memory (resident set of the tab's renderer process, from /proc);
  - tab switch time: click to the next frame after the candidate's diff is shown, median over a
    walk through every candidate (the next tab each time, after READ_S seconds on the one shown,
    as a reviewer reads), and one jump to a candidate the page has not fetched ahead;
and, on the big group, the server's cold render (render caches and lexer caches cleared: the
page and every candidate's diff, as the reviewer's tabs fetch them) against Pygments alone on
the same lines (bench_diff_render's floor), in CPU time and run by run: hunks only, and again
with the group's base repository (whole files, each base file lexed once per group). Each
browser figure is also printed as a ratio to a baseline measured in the same run: the site's
small queue page loaded the same way (what the machine takes for any page), so figures from
different machines can be compared.

Targets (issue 17): <= 1 MB before interaction, DOMContentLoaded <= 350 ms, long tasks <= 150 ms
in total, tab switch <= 80 ms, cold render <= 1.2x Pygments alone.

Run: ./dev bench review_browser  (needs Chromium: GAGAR_CHROMIUM or /usr/bin/chromium)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.pop("DATABASE_URL", None)  # SQLite, whatever the shell exports
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.contrib.staticfiles.handlers import StaticFilesHandler  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.testcases import LiveServerThread  # noqa: E402

from bench._groups import base_repository, create_group  # noqa: E402
from bench.bench_diff_render import (  # noqa: E402
    build_group,
    sides,
    time_pygments,
    whole_files,
)
from review.diffs import highlight as hl  # noqa: E402
from review.diffs.lexing import LEX_STATS  # noqa: E402

CHROMIUM = os.environ.get("GAGAR_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
LOADS = 3  # page loads per group; the median is printed
# Seconds a reviewer reads a candidate before the next (a real review reads for minutes): the
# page fetches and parses the neighbours of the candidate shown in that time.
READ_S = 3
COLD_RUNS = 5
MB = 1_000_000

LONGTASKS = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longtasks.push(e.duration);
}).observe({ type: "longtask", buffered: true });
"""
# Where DOMContentLoaded goes (Navigation and Resource Timing, from the navigation's start).
NAV_TIMES = """() => {
  const n = performance.getEntriesByType("navigation")[0];
  const js = performance.getEntriesByType("resource").filter((r) => r.name.endsWith(".js"));
  const at = (t) => t - n.startTime;
  return {
    ttfb: at(n.responseStart), html: at(n.responseEnd), parsed: at(n.domInteractive),
    modules: js.length ? at(Math.max(...js.map((r) => r.responseEnd))) : 0,
    scripts: at(n.domContentLoadedEventStart), dcl: at(n.domContentLoadedEventEnd),
    load: at(n.loadEventEnd),
  };
}"""
# Click a tab, then wait until that candidate's diff is in the page and shown, then a frame.
TAB_SWITCH = """async (i) => {
  const tabs = document.querySelectorAll(".rv-tab");
  const tab = tabs[i];
  const target = document.querySelector('.rv-panel[data-token="' + tab.dataset.token + '"]');
  const ahead = !!target.dataset.loaded;
  const t0 = performance.now();
  tab.click();
  const shown = () => {
    const panel = document.querySelector(".rv-panel.is-current");
    if (!panel || panel.dataset.token !== tab.dataset.token) return false;
    const file = panel.querySelector(".rv-main .rv-file, .rv-main .muted");
    return !!(file && file.getClientRects().length);
  };
  while (!shown()) await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return [performance.now() - t0, ahead];
}"""


@dataclass
class Load:
    transferred: int
    decoded: int
    dcl: float
    load: float
    long_total: float
    long_max: float
    rss: int
    ttfb: float  # request start to the page's first byte (the server's time, mostly)
    html: float  # to the page's last byte
    parsed: float  # domInteractive: the HTML parsed
    modules: float  # the last script module received (a module's imports are a waterfall)
    scripts: float  # domContentLoadedEventStart: the modules run (review.js start-up)


def _assignment_url(group_id: int, reviewer: User, name: str) -> str:
    from grading.models import Group
    from review.services.campaigns import campaign_create
    from review.services.queue import assignment_next

    run = Group.objects.get(pk=group_id).step.run_id
    campaign = campaign_create(
        name=name, created_by=None, reviewers=[reviewer], filters={"run": run}
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None and assignment.group_id == group_id, name
    return f"/review/a/{assignment.pk}/"


def _renderer_rss(browser_pid: int) -> int:
    """The largest resident set among the browser's renderer processes (one tab: its own)."""
    best = 0
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmd = status.read_bytes()
            if b"--type=renderer" not in cmd or b"--extension-process" in cmd:
                continue
            text = (status.parent / "status").read_text()
        except OSError:
            continue
        ppid = next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("PPid"))
        if not _descends(ppid, browser_pid):
            continue
        rss = next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("VmRSS"))
        best = max(best, rss * 1024)
    return best


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("PPid"))
    return False


def _browser_pid() -> int:
    out = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True)
    # Playwright's driver is our child; Chromium is the driver's child.
    for driver in out.stdout.split():
        kids = subprocess.run(["pgrep", "-P", driver], capture_output=True, text=True)
        for kid in kids.stdout.split():
            if "chrom" in Path(f"/proc/{kid}/comm").read_text():
                return int(kid)
    return -1


def _load(pw_browser: Any, base: str, cookie: dict[str, Any], url: str, browser_pid: int) -> Load:
    context = pw_browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_cookies([cookie])
    context.add_init_script(LONGTASKS)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes: dict[str, int] = {}
    decoded: dict[str, int] = {}

    def finished(e: dict[str, Any]) -> None:
        sizes[e["requestId"]] = e["encodedDataLength"]

    def received(e: dict[str, Any]) -> None:
        decoded[e["requestId"]] = decoded.get(e["requestId"], 0) + e["dataLength"]

    cdp.on("Network.loadingFinished", finished)
    cdp.on("Network.dataReceived", received)
    page.goto(base + url, wait_until="load")
    page.wait_for_load_state("networkidle")
    nav = page.evaluate(NAV_TIMES)
    tasks = page.evaluate("() => window.__longtasks")
    rss = _renderer_rss(browser_pid)
    context.close()
    return Load(
        transferred=sum(sizes.values()),
        decoded=sum(decoded.values()),
        dcl=nav["dcl"],
        load=nav["load"],
        long_total=sum(tasks),
        long_max=max(tasks, default=0.0),
        rss=rss,
        ttfb=nav["ttfb"],
        html=nav["html"],
        parsed=nav["parsed"],
        modules=nav["modules"],
        scripts=nav["scripts"],
    )


def _tab_switches(
    pw_browser: Any, base: str, cookie: dict[str, Any], url: str
) -> tuple[list[float], int, float]:
    """The walk through the candidates (next tab, each after reading the one shown for READ_S),
    how many of its candidates were parsed ahead when clicked, and one jump to a candidate far
    from the one shown (not fetched ahead)."""
    context = pw_browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_cookies([cookie])
    page = context.new_page()
    page.goto(base + url, wait_until="load")
    page.wait_for_selector(".rv-panel.is-current")
    page.wait_for_load_state("networkidle")
    n = page.locator(".rv-tab").count()
    page.wait_for_timeout(READ_S * 1000)
    far = n // 2
    jump, _ = page.evaluate(TAB_SWITCH, far)
    walk = []
    for step in range(1, n + 1):
        page.wait_for_timeout(READ_S * 1000)
        walk.append(page.evaluate(TAB_SWITCH, (far + step) % n))
    context.close()
    return [t for t, _ in walk], sum(1 for _, ahead in walk if ahead), jump


def _median_load(loads: list[Load]) -> Load:
    def med(attr: str) -> Any:
        return statistics.median(getattr(x, attr) for x in loads)

    return Load(*(med(a) for a in Load.__dataclass_fields__))


def _panel_urls(url: str) -> list[str]:
    """The review page and every candidate's panel, as its tabs fetch them."""
    from django.urls import reverse

    from review.models import Assignment

    assignment = Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    tokens = list(assignment.candidates.values_list("token", flat=True))
    return [url] + [reverse("review:panel", args=[assignment.pk, t]) for t in tokens]


@dataclass
class Cold:
    cold: float  # CPU seconds, median
    pygments: float
    ratio: float  # median of the runs' ratios
    lexed: int  # lines that went through Pygments in one cold render
    shown: int  # lines Pygments alone highlights


def _cold_render(client: Client, url: str, floor: list[tuple[str, str]]) -> Cold:
    """The page and every candidate's panel (as the tabs fetch them), from cold caches, each
    run paired with Pygments alone on `floor` (old and new text per candidate file).

    Timed in this process's CPU time (the live server's requests run in it too): on a shared
    machine other processes' load then slows both sides alike, where wall time would count
    waiting for a core. Runs alternate with their Pygments run, and the ratio is the median
    of the runs' ratios.
    """
    urls = _panel_urls(url)
    colds, floors = [], []
    for _ in range(COLD_RUNS):
        cache.clear()
        hl.clear_caches()
        LEX_STATS.clear()
        start = time.process_time()
        for u in urls:
            response = client.get(u, HTTP_X_FRAGMENT="1") if u != url else client.get(u)
            assert response.status_code == 200, u
        colds.append(time.process_time() - start)
        floors.append(time_pygments([], clock=time.process_time, texts=floor))
    return Cold(
        cold=statistics.median(colds),
        pygments=statistics.median(floors),
        ratio=statistics.median(c / f for c, f in zip(colds, floors, strict=True)),
        lexed=LEX_STATS["lines"],
        shown=sum(o.count("\n") + n.count("\n") for o, n in floor),
    )


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"needs Chromium at {CHROMIUM} (set GAGAR_CHROMIUM)")
        return 2
    # A file, not the in-memory database: an in-memory SQLite database is one connection that
    # the server's threads would have to share one request at a time.
    tmp = tempfile.mkdtemp(prefix="bench-review-browser-")
    connection.settings_dict["TEST"]["NAME"] = str(Path(tmp) / "bench.sqlite3")
    try:
        return _run()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run() -> int:
    from playwright.sync_api import sync_playwright

    from grading.services.demo import sample_load

    connection.creation.create_test_db(verbosity=0)
    patches = build_group()
    changed = sum(o.count("\n") + n.count("\n") for p in patches for o, n in sides(p))
    big = create_group(patches).pk
    sample = sample_load(grade=False).results[0].group_id
    reviewer = User.objects.create_user("bench-reviewer")
    urls = {
        "big": _assignment_url(big, reviewer, "bench big"),
        "sample": _assignment_url(sample, reviewer, "bench sample"),
        "queue": "/review/",
    }
    client = Client()
    client.force_login(reviewer)
    cookie = {
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "domain": "127.0.0.1",
        "path": "/",
    }

    thread = LiveServerThread("127.0.0.1", StaticFilesHandler)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    base = f"http://127.0.0.1:{thread.port}"
    for u in urls.values():  # warm server: imports, templates, rendered fragments
        for part in _panel_urls(u) if u != "/review/" else [u]:
            client.get(part)

    print(f"big group: {len(patches)} candidates, {changed} hunk lines; sample group: demo's")
    results: dict[str, Load] = {}
    switches: dict[str, tuple[list[float], int, float]] = {}
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pid = _browser_pid()
        for name, url in urls.items():
            _load(chromium, base, cookie, url, pid)  # the browser's own first-use costs
            results[name] = _median_load(
                [_load(chromium, base, cookie, url, pid) for _ in range(LOADS)]
            )
            if name != "queue":
                switches[name] = _tab_switches(chromium, base, cookie, url)
        chromium.close()
    thread.terminate()

    q = results["queue"]
    print(f"\nbaseline (queue page): DOMContentLoaded {q.dcl:.0f} ms (first byte "
          f"{q.ttfb:.0f} ms), load {q.load:.0f} ms, {q.transferred / 1e3:.0f} kB, "
          f"renderer {q.rss / MB:.0f} MB")  # fmt: skip
    for name in ("big", "sample"):
        r, (s, ahead, jump) = results[name], switches[name]
        ok = lambda v, t: "ok" if v <= t else "MISSED"  # noqa: E731
        print(f"\n{name} group (median of {LOADS} loads; ratio to the queue page in brackets)")
        print(
            f"  transferred before interaction {r.transferred / MB:6.2f} MB "
            f"(uncompressed {r.decoded / MB:.2f} MB; target <= 1 MB: {ok(r.transferred, MB)})"
        )
        print(
            f"  DOMContentLoaded               {r.dcl:6.0f} ms [{r.dcl / q.dcl:.1f}x] "
            f"(target <= 350 ms: {ok(r.dcl, 350)})"
        )
        print(
            f"    of which: first byte {r.ttfb:.0f} ms, last byte {r.html:.0f} ms, parsed "
            f"{r.parsed:.0f} ms, last module {r.modules:.0f} ms, modules run {r.scripts:.0f} ms"
        )
        print(f"  load                           {r.load:6.0f} ms [{r.load / q.load:.1f}x]")
        print(
            f"  long tasks total / longest     {r.long_total:6.0f} ms / {r.long_max:.0f} ms "
            f"(target <= 150 ms total: {ok(r.long_total, 150)})"
        )
        print(f"  renderer memory (RSS)          {r.rss / MB:6.0f} MB [{r.rss / q.rss:.1f}x]")
        print(f"  tab switch median / max        {statistics.median(s):6.0f} ms / {max(s):.0f} ms "
              f"over {len(s)}, {ahead} parsed ahead (target <= 80 ms: "
              f"{ok(statistics.median(s), 80)})")  # fmt: skip
        print(f"  jump to a candidate not fetched ahead {jump:6.0f} ms")

    _print_cold(client, reviewer, patches, urls["big"])
    return 0


def _print_cold(client: Client, reviewer: User, patches: list[str], big_url: str) -> None:
    """The server's cold render of the big group, hunks only (as the browser figures) and
    with its base repository (whole files: each distinct base file is lexed once per group)."""
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        base = (Path(tmp), base_repository(Path(tmp)))
        with_base = create_group(patches, name="bench-base", base=base).pk
        base_url = _assignment_url(with_base, reviewer, "bench base")
        for u in _panel_urls(base_url):
            client.get(u)
        runs = {
            "hunks only": _cold_render(client, big_url, [x for p in patches for x in sides(p)]),
            "with base": _cold_render(
                client, base_url, [x for p in patches for x in whole_files(p)]
            ),
        }
    print(f"\nserver, big group, cold render (caches cleared; CPU time, median of {COLD_RUNS}; "
          f"load average {os.getloadavg()[0]:.1f}):")  # fmt: skip
    for name, c in runs.items():
        verdict = "ok" if c.ratio <= 1.2 else "MISSED"
        print(f"  {name:10s}: {c.cold * 1000:5.0f} ms; Pygments alone on the same "
              f"{c.shown} lines {c.pygments * 1000:5.0f} ms: {c.ratio:.2f}x "
              f"(target <= 1.2x: {verdict}); {c.lexed} lines lexed")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
