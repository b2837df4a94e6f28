"""Import of one synthetic training step into PostgreSQL vs a raw COPY of the same bytes.

128 groups × 16 attempts with ~200 KB trajectories (~400 MB of JSON Lines). Baseline: the same
file streamed with `COPY` into a bare one-column table. Both run in child processes so each one's
peak memory (ru_maxrss) is its own. Needs PostgreSQL: BENCH_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/gagar_bench, created if missing).

Usage: python bench/bench_import.py [--groups 128] [--attempts 16] [--trajectory-kb 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/gagar_bench"

_WORDS = [
    "def",
    "return",
    "self",
    "value",
    "None",
    "if",
    "else",
    "for",
    "in",
    "range",
    "len",
    "import",
    "from",
    "class",
    "raise",
    "try",
    "except",
    "assert",
    "test",
    "patch",
    "file",
    "line",
    "error",
    "result",
    "config",
    "path",
    "request",
    "response",
    "handler",
    "cache",
]


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        line = " ".join(rng.choices(_WORDS, k=rng.randint(3, 12)))
        line = "    " * rng.randint(0, 3) + line + f"  # {rng.randint(0, 99999)}"
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)


def _diff(rng: random.Random, index: int) -> str:
    lines = [
        f"diff --git a/pkg/mod{index % 7}.py b/pkg/mod{index % 7}.py",
        f"--- a/pkg/mod{index % 7}.py",
        f"+++ b/pkg/mod{index % 7}.py",
        "@@ -10,6 +10,7 @@ def handler(request):",
    ]
    lines += ["     " + _text(rng, 40).split("\n")[0] for _ in range(3)]
    lines += ["-    return value", "+    if value is None:", "+        return default"]
    lines += ["     " + _text(rng, 40).split("\n")[0] for _ in range(3)]
    return "\n".join(lines) + "\n"


def write_step(path: Path, groups: int, attempts: int, trajectory_kb: int) -> int:
    rng = random.Random(7)
    with path.open("w") as handle:
        for g in range(groups):
            atts = []
            for a in range(attempts):
                events: list[dict[str, str]] = []
                size = 0
                while size < trajectory_kb * 1024:
                    kind = ("thought", "action", "observation")[len(events) % 3]
                    text = _text(rng, rng.randint(200, 4000))
                    events.append(
                        {
                            "kind": kind,
                            "role": "tool" if kind == "observation" else "assistant",
                            "text": text,
                        }
                    )
                    size += len(text) + 40
                atts.append(
                    {
                        "id": f"a{a}",
                        "status": "valid",
                        "test_reward": float(rng.random() < 0.5),
                        "test_output": _text(rng, 2000),
                        "patch": _diff(rng, a),
                        "trajectory": {"format": "native", "events": events},
                        "num_turns": len(events) // 3,
                        "tokens_in": 100_000,
                        "tokens_out": 5_000,
                        "agent": {"system": "bench-loop", "model": "bench-model"},
                    }
                )
            group = {
                "schema": "gagar.group.v1",
                "run": "bench",
                "step": 0,
                "task": {
                    "id": f"task-{g}",
                    "repo": "bench/repo",
                    "problem_statement": _text(rng, 800),
                },
                "attempts": atts,
            }
            handle.write(json.dumps(group) + "\n")
    return path.stat().st_size


def _child(mode: str, path: str, url: str) -> None:
    start = time.perf_counter()
    if mode == "copy":
        import psycopg

        with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS bench_raw")
            conn.execute("CREATE UNLOGGED TABLE bench_raw (line text)")
            conn.execute("DROP TABLE bench_raw")
            conn.execute("CREATE TABLE bench_raw (line text)")
            start = time.perf_counter()
            # CSV with quote/delimiter bytes JSON never contains: the bytes go through unchanged.
            sql = (
                "COPY bench_raw (line) FROM STDIN (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')"
            )
            with conn.cursor() as cur, cur.copy(sql) as copy, open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    copy.write(chunk)
            elapsed = time.perf_counter() - start
            conn.execute("DROP TABLE bench_raw")
    else:
        os.environ["DATABASE_URL"] = url
        os.environ.setdefault("SECRET_KEY", "bench")
        sys.path.insert(0, str(ROOT))
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
        django.setup()
        from django.core.management import call_command

        call_command("flush", "--noinput", verbosity=0)
        from grading.services.imports import groups_import
        from grading.services.sources import bundle_records

        start = time.perf_counter()
        with open(path, "rb") as handle:
            _, records = bundle_records(stream=handle, source=path, base_dir=Path(path).parent)
            report = groups_import(records=records)
        elapsed = time.perf_counter() - start
        assert report.ok, report.problems[:3]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "peak_mb": peak_mb}))


def _run_child(mode: str, path: Path, url: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path), url],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0].replace("postgres://", "postgresql://") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    env = dict(os.environ, DATABASE_URL=url, SECRET_KEY=os.environ.get("SECRET_KEY", "bench"))
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        check=True,
        cwd=ROOT,
        env=env,
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=128)
    parser.add_argument("--attempts", type=int, default=16)
    parser.add_argument("--trajectory-kb", type=int, default=200)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    _ensure_database(url)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "step.jsonl"
        size = write_step(path, args.groups, args.attempts, args.trajectory_kb)
        mb = size / 1e6
        print(
            f"synthetic step: {args.groups} groups × {args.attempts} attempts, "
            f"~{args.trajectory_kb} KB trajectories: {mb:.0f} MB"
        )
        copy = _run_child("copy", path, url)
        ours = _run_child("import", path, url)
    print(f"{'':24}{'seconds':>10}{'MB/s':>10}{'peak RSS MB':>14}")
    for label, row in (("raw COPY (baseline)", copy), ("gagar import", ours)):
        rate = mb / row["seconds"]
        print(f"{label:24}{row['seconds']:>10.2f}{rate:>10.1f}{row['peak_mb']:>14.0f}")
    ratio = copy["seconds"] / ours["seconds"]
    print(
        f"import throughput = {ratio:.0%} of raw COPY (target ≥ 40%); "
        f"peak memory {ours['peak_mb']:.0f} MB (target < 400 MB)"
    )


if __name__ == "__main__":
    main()
