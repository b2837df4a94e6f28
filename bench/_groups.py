"""The big review group the review benchmarks put in their database (one builder for both).

Django must be set up before calling: the models are imported inside.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

from bench.bench_diff_render import MODULES, module_text

STATEMENT = "Make the standard library stricter about missing values."


def base_repository(where: Path) -> str:
    """A git repository at `where` holding, at lib/<module>, the standard library modules
    `build_group` edits (their base); returns the commit."""
    for name in MODULES:
        path = where / "lib" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(module_text(name) + "\n", encoding="utf-8")
    env = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], [*env, "commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True)
    head = ["git", "-C", str(where), "rev-parse", "HEAD"]
    return subprocess.run(head, check=True, capture_output=True, text=True).stdout.strip()


def create_group(
    patches: list[str],
    *,
    statement: str = STATEMENT,
    name: str = "bench",
    base: tuple[Path, str] | None = None,
) -> Any:
    """A run, step, task and group with one candidate per patch. Without `base` (a
    repository and commit, from `base_repository`) the review page shows the hunks' own
    context; with it, whole files. Returns the `Group`."""
    from grading.models import Attempt, Group, Patch, Run, Step, Task

    run = Run.objects.create(name=f"{name}-run")
    step = Step.objects.create(run=run, number=1)
    task = Task.objects.create(
        external_id=f"{name}-task",
        repo="bench/repo",
        problem_statement=statement,
        content_hash="0" * 64,
        **(
            {"source_status": "found", "source_path": str(base[0]), "base_commit": base[1]}
            if base is not None
            else {}
        ),
    )
    group = Group.objects.create(step=step, task=task, content_hash="0" * 64)
    for i, text in enumerate(patches):
        data = text.encode()
        patch, _ = Patch.objects.get_or_create(
            sha256=hashlib.sha256(data).hexdigest(), defaults={"content": data, "size": len(data)}
        )
        Attempt.objects.create(
            group=group,
            external_id=f"{name}-{i}",
            index=i,
            test_reward=1.0,
            patch=patch,
            agent_system="bench-agent/1.0",
            agent_model="bench-model-7b",
        )
    return group
