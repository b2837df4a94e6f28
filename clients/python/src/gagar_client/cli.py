"""`gagar submit | advantages | export`: the client from a shell.

export GAGAR_URL=https://gagar.example GAGAR_TOKEN=gagar_…
gagar submit step-0042.jsonl --wait 120          # validate, send, wait, print the counts
gagar advantages run-7 42 --deadline 60 --format csv > adv.csv
gagar export advantages --run run-7 --format parquet --out adv.zip
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from gagar_client.bundle import validate
from gagar_client.client import Client
from gagar_client.errors import GagarError

ROW_COLUMNS = (
    "group",
    "attempt",
    "status",
    "included",
    "test_reward",
    "tier",
    "rank_in_tier",
    "coefficient",
    "adv_grpo",
    "adv_gagar",
    "reward_equivalent",
    "fallback",
    "fallback_reason",
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gagar", description="GAGAR Review API client")
    p.add_argument("--url", default=os.environ.get("GAGAR_URL"), help="server (env GAGAR_URL)")
    p.add_argument("--token", default=os.environ.get("GAGAR_TOKEN"), help="env GAGAR_TOKEN")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("submit", help="validate and submit a gagar.group.v1 bundle")
    s.add_argument("bundle", type=Path, help="JSON Lines, one group per line")
    s.add_argument("--config", help="grader configuration name")
    s.add_argument("--partial", action="store_true", help="import the valid groups only")
    s.add_argument("--wait", type=float, metavar="SECONDS", help="then wait for the grades")

    a = sub.add_parser("advantages", help="print a step's advantages")
    a.add_argument("run")
    a.add_argument("step", type=int)
    a.add_argument("--config", help="grader configuration name")
    a.add_argument("--deadline", type=float, help="wait up to this many seconds")
    a.add_argument("--lambda-max", default="default", help="λ_max, or 'none' for uncapped")
    a.add_argument("--normalize-std", action="store_true", help="divide by σ(r) + ε")
    a.add_argument("--std-ddof", type=int, choices=[0, 1], help="ddof of σ with --normalize-std")
    a.add_argument("--format", choices=["json", "jsonl", "csv"], default="jsonl")

    e = sub.add_parser("export", help="download an export (a zip with its manifest)")
    e.add_argument("kind", choices=["advantages", "labels", "package"])
    e.add_argument("--out", type=Path, required=True, help="the zip to write")
    e.add_argument("--format", choices=["parquet", "jsonl", "csv"], default="parquet")
    e.add_argument("--run", help="run name (required for advantages)")
    e.add_argument("--step", type=int, help="one step")
    e.add_argument("--config", help="grader configuration name")
    return p


def _read_bundle(path: Path) -> list[dict[str, Any]]:
    if path.is_dir():
        raise GagarError(f"{path}: is a folder, not a bundle file (give the .jsonl file)")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise GagarError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise GagarError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at byte {exc.start}); "
            "a bundle is UTF-8 JSON Lines (decompress a .gz first)"
        ) from exc
    except OSError as exc:
        raise GagarError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    groups = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            groups.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise GagarError(f"{path}:{n}: not JSON: {exc.msg}") from exc
    return groups


def _lambda(value: str) -> Any:
    if value == "default":
        return "default"
    return None if value.lower() == "none" else float(value)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.url or not args.token:
        print("gagar: set --url and --token (or GAGAR_URL and GAGAR_TOKEN)", file=sys.stderr)
        return 2
    try:
        with Client(args.url, args.token) as client:
            if args.command == "submit":
                groups = validate(_read_bundle(args.bundle))
                sub = client.submit(groups, config=args.config, partial=args.partial)
                print(json.dumps(sub.raw, indent=2))
                if args.wait is not None and sub.groups:
                    run, step = sub.groups[0].run, sub.groups[0].step
                    adv = client.wait(run, step, deadline_s=args.wait, config=args.config)
                    print(json.dumps({"run": run, "step": step, "counts": adv.counts}))
            elif args.command == "advantages":
                adv = client.advantages(
                    args.run,
                    args.step,
                    config=args.config,
                    deadline_s=args.deadline,
                    lambda_max=_lambda(args.lambda_max),
                    normalize_std=args.normalize_std,
                    std_ddof=args.std_ddof,
                )
                _print_rows(adv, args.format)
            else:
                filters = {"run": args.run, "step": args.step, "config": args.config}
                path = client.export(args.kind, args.out, format=args.format, **filters)
                print(path)
    except GagarError as exc:
        print(f"gagar: {exc}", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        # The server down, a timeout, a TLS failure: one line, not httpx's traceback.
        reason = str(exc) or type(exc).__name__
        print(f"gagar: cannot reach {args.url}: {reason}", file=sys.stderr)
        return 1
    except OSError as exc:
        # Writing --out (a missing folder, no space left).
        print(
            f"gagar: {exc.filename or ''}: {exc.strerror or exc}".replace(": : ", ": "),
            file=sys.stderr,
        )
        return 1
    return 0


def _print_rows(adv: Any, fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(adv.raw, indent=2))
        return
    rows = [{**r.raw, "group": r.group, "attempt": r.attempt} for r in adv.rows()]
    if fmt == "jsonl":
        for r in rows:
            print(json.dumps(r))
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=list(ROW_COLUMNS), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
