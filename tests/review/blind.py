"""What a reviewer must never receive, and a way to make database ids recognisable in output."""

from __future__ import annotations

from django.db import connection
from django.db.models import Model

from grading.models import Attempt, GraderConfig, GraderRun, Group, Run
from review.models.reviewing import CRITERIA

ATTEMPT_PK_BASE = 987_650
RUN_PK_BASE = 986_540
GRADER_SECRET = "GRADER-SUMMARY-7d1f"
GRADER_RATIONALE = "GRADER-RATIONALE-4c2e"


def make_ids_distinctive() -> None:
    """Push the attempt and run id sequences to numbers no page would show by accident."""
    for model, base in ((Attempt, ATTEMPT_PK_BASE), (Run, RUN_PK_BASE)):
        sequence_set(model, base)


def sequence_set(model: type[Model], last: int) -> None:
    """The next row of `model` gets id `last` + 1 (PostgreSQL's sequence, SQLite's
    AUTOINCREMENT counter)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", [last])
        else:
            cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = %s", [last, table])
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, last]
                )


def grader_verdict_for(group: Group) -> GraderRun:
    """A succeeded grader run with recognisable text, as the issue-3 service would store it."""
    config, _ = GraderConfig.objects.get_or_create(
        name="blind-test-grader", defaults={"backend": "heuristic", "model": "grader-model-x9"}
    )
    passing = [a for a in group.attempts.all() if a.passed]
    verdict = {
        "candidates": {str(a.pk): {"tier": 1} for a in passing},
        "evidence": {
            "e1": {
                "type": "code",
                "candidate": str(passing[0].pk),
                "path": "humanize_lite/sizes.py",
                "line_start": 9,
                "line_end": 9,
                "side": "post",
            }
        },
    }
    run = GraderRun.objects.create(
        group=group, config=config, status=GraderRun.Status.SUCCEEDED, verdict=verdict
    )
    for n, a in enumerate(passing):
        run.grades.create(
            attempt=a,
            tier=1 + n % 3,
            rank_in_tier=1,
            weighted_score=4.0,
            scores={c: {"score": 4, "rationale": GRADER_RATIONALE} for c in CRITERIA},
            severe_issues=[
                {"category": "side_effect", "description": "prints", "evidence": ["e1"]}
            ],
            summary=GRADER_SECRET,
        )
    return run


def forbidden_strings(group: Group) -> list[str]:
    out = {GRADER_SECRET, GRADER_RATIONALE, "grader-model-x9", "blind-test-grader"}
    out.add(group.step.run.name)
    if group.external_id:
        out.add(group.external_id)
    for a in group.attempts.all():
        out |= {a.agent_system, a.agent_model, a.agent_family, str(a.pk)}
        if len(a.external_id) > 3:
            out.add(a.external_id)
    out.add(str(group.step.run.pk))
    return sorted(s for s in out if s)


def leaks(body: str, forbidden: list[str]) -> list[str]:
    low = body.lower()
    return [s for s in forbidden if s.lower() in low]


CLAIM_TEXT = "GRADER-CLAIM-91ab"


def grader_claims_for(group: Group, config_name: str = "claims-grader") -> GraderRun:
    """A succeeded run whose judgements cite `code` evidence on each passing attempt's own
    first added line (its minimality score) and the base side of its first removed line
    (a severe issue), as a model grader's verdict does."""
    from review.diffs import parse_patch

    config, _ = GraderConfig.objects.get_or_create(
        name=config_name, defaults={"backend": "heuristic", "model": "grader-model-x9"}
    )
    passing = [a for a in group.attempts.order_by("index") if a.passed and a.patch_id]
    evidence: dict[str, dict[str, object]] = {}
    run = GraderRun.objects.create(
        group=group, config=config, status=GraderRun.Status.SUCCEEDED, verdict={}
    )
    for n, a in enumerate(passing):
        files = [f for f in parse_patch(a.patch.text) if f.hunks]
        added = next((f, ln) for f in files for h in f.hunks for ln in h.lines if ln.kind == "+")
        evidence[f"E{n}a"] = {
            "type": "code",
            "candidate": str(a.pk),
            "path": added[0].path,
            "line_start": added[1].new_no,
            "line_end": added[1].new_no,
            "side": "post",
        }
        removed = next(
            ((f, ln) for f in files for h in f.hunks for ln in h.lines if ln.kind == "-"), None
        )
        issue_ids = []
        if removed is not None:
            evidence[f"E{n}b"] = {
                "type": "code",
                "candidate": "base",
                "path": removed[0].old_path or removed[0].path,
                "line_start": removed[1].old_no,
                "line_end": removed[1].old_no,
                "side": "pre",
            }
            issue_ids = [f"E{n}b"]
        scores = {c: {"score": 4, "rationale": GRADER_RATIONALE, "evidence": []} for c in CRITERIA}
        scores["minimality_of_changes"] = {
            "score": 2,
            "rationale": f"{CLAIM_TEXT}: adds more than the fix needs",
            "evidence": [f"E{n}a"],
        }
        run.grades.create(
            attempt=a,
            tier=1 + n % 3,
            rank_in_tier=1,
            weighted_score=3.6,
            scores=scores,
            severe_issues=[
                {
                    "category": "side_effect",
                    "description": "drops a base line",
                    "evidence": issue_ids,
                }
            ],
            summary=GRADER_SECRET,
        )
    run.verdict = {"candidates": {str(a.pk): {"tier": 1} for a in passing}, "evidence": evidence}
    run.save(update_fields=["verdict"])
    return run
