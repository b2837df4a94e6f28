"""Run the benchmarks: `python -m bench [name ...]`; no names runs them all.

Each benchmark prints its own figures as ratios against a baseline measured in the same run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    available = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    wanted = argv or available
    unknown = [w for w in wanted if w not in available]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available)}")
        return 2
    status = 0
    for name in wanted:
        print(f"\n=== bench_{name} ===", flush=True)
        result = subprocess.run([sys.executable, str(HERE / f"bench_{name}.py")], check=False)
        status = status or result.returncode
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
