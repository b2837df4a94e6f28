"""Benchmark: the blind review page for a 16-candidate group with ~5,000 changed lines.

Prints, in one run: server time for the whole review page (Django test client, in-memory
SQLite, LocMem cache) cold (render caches and lexer caches cleared) and warm (median), its
query count, Pygments alone highlighting the same hunk lines (the floor for a cold render),
and diff2html-cli on the same diff when installed under /tmp/d2h
(`npm install --prefix /tmp/d2h diff2html-cli`). Targets: cold <= 2x Pygments alone; warm
median <= 50 ms. The group is the one bench_diff_render builds (edits of stdlib modules).

Run: .venv/bin/python bench/bench_review_page.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench._groups import create_group  # noqa: E402
from bench.bench_diff_render import build_group, sides, time_diff2html, time_pygments  # noqa: E402
from review.diffs import highlight as hl  # noqa: E402

COLD_RUNS = 5
WARM_RUNS = 30


def _setup(patches: list[str]) -> tuple[str, User]:
    from review.services.campaigns import campaign_create
    from review.services.queue import assignment_next

    connection.creation.create_test_db(verbosity=0)
    create_group(patches)
    reviewer = User.objects.create_user("bench-reviewer")
    campaign = campaign_create(name="bench", created_by=None, reviewers=[reviewer], filters={})
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None
    return f"/review/a/{assignment.pk}/", reviewer


def _get(client: Client, url: str) -> float:
    start = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.status_code
    return elapsed


def main() -> None:
    patches = build_group()
    hunk_lines = sum(o.count("\n") + n.count("\n") for p in patches for o, n in sides(p))
    url, reviewer = _setup(patches)
    client = Client()
    client.force_login(reviewer)
    client.get(url)  # import and template-loading costs are not the page's

    colds = []
    for _ in range(COLD_RUNS):
        cache.clear()
        hl.clear_caches()
        colds.append(_get(client, url))
    warms = [_get(client, url) for _ in range(WARM_RUNS)]
    with CaptureQueriesContext(connection) as queries:
        size = len(client.get(url).content)
    pyg = statistics.median(time_pygments(patches) for _ in range(COLD_RUNS))
    cold, warm = statistics.median(colds), statistics.median(warms)

    print(
        f"{len(patches)} candidates, {hunk_lines} hunk lines highlighted, page {size / 1e6:.1f} MB"
    )
    print(f"(a) Pygments alone, same hunk lines:  {pyg * 1000:8.1f} ms (median of {COLD_RUNS})")
    print(f"(b) review page cold (server):        {cold * 1000:8.1f} ms (median of {COLD_RUNS})")
    print(f"    ratio b/a: {cold / pyg:.2f}x (target <= 2x)")
    print(
        f"(c) review page warm (server):        {warm * 1000:8.1f} ms "
        f"(median of {WARM_RUNS}; target <= 50 ms)"
    )
    print(f"    queries per page: {len(queries.captured_queries)}")
    d2h = time_diff2html(patches)
    if d2h is None:
        print("diff2html-cli not installed under /tmp/d2h; skipped")
    else:
        print(
            f"(d) diff2html-cli side-by-side:       {d2h * 1000:8.1f} ms "
            "(one run, incl. node start)"
        )


if __name__ == "__main__":
    main()
