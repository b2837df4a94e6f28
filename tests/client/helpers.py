"""A two-group step whose attempt ids repeat across the groups, as client objects."""

from __future__ import annotations

from gagar_client import Attempt, Group, Task, Trajectory

from grading.advantages import AttemptInput, redistribute
from grading.advantages import GroupAdvantages as PureAdvantages
from grading.models import GraderRun
from grading.models import Group as GroupModel
from tests.importers.helpers import PATCH
from tests.training.builders import BIG_PATCH

RUN = "client-run"


def task(task_id: str) -> Task:
    return Task(
        id=task_id,
        repo="acme/pkg",
        problem_statement=f"Fix {task_id}: f(1) must be true.",
        fail_to_pass=["tests/test_f.py::test_one"],
    )


def attempts(variant: int) -> list[Attempt]:
    """Eight attempts with the same ids in every group ("r0".."r7"), different outcomes."""
    traj = Trajectory(
        events=[
            {"kind": "thought", "role": "assistant", "text": "read sizes.py"},
            {"kind": "action", "role": "assistant", "text": "", "tool": "bash", "args": "ls"},
        ]
    )
    specs = [
        ("valid", 1.0, PATCH),
        ("valid", 1.0, BIG_PATCH),
        ("valid", 1.0 if variant == 0 else 0.0, PATCH if variant == 0 else None),
        ("valid", 0.0, None),
        ("valid", 0.0, None),
        ("exploit_confirmed", 1.0, PATCH),
        ("infra_failed", 0.0, None),
        ("valid", 1.0 if variant == 1 else 0.0, BIG_PATCH if variant == 1 else None),
    ]
    return [
        Attempt(
            id=f"r{i}",
            status=status,  # type: ignore[arg-type]
            test_reward=reward,
            patch=patch,
            trajectory=traj,
            test_output="1 passed\n" if reward else "1 failed\n",
            num_turns=3,
        )
        for i, (status, reward, patch) in enumerate(specs)
    ]


def two_group_step(step: int = 0, run: str = RUN) -> list[Group]:
    return [
        Group(run=run, step=step, task=task("t-a"), attempts=attempts(0)),
        Group(run=run, step=step, task=task("t-b"), attempts=attempts(1)),
    ]


def pure_advantages(group: GroupModel, **kwargs: object) -> dict[str, float]:
    """A′ per attempt external id from the pure module, with the verdict the server used."""
    run = GraderRun.objects.filter(group=group, status="succeeded").order_by("-finished_at").first()
    grades = {} if run is None else {g.attempt_id: g for g in run.grades.all()}
    attempts_ = list(group.attempts.order_by("index"))
    inputs = [
        AttemptInput(
            status=a.status,  # type: ignore[arg-type]
            reward=a.test_reward,
            tier=grades[a.pk].tier if a.pk in grades else None,
            rank=grades[a.pk].rank_in_tier if a.pk in grades else None,
        )
        for a in attempts_
    ]
    result: PureAdvantages = redistribute(inputs, fallback=run is None, **kwargs)  # type: ignore[arg-type]
    return {a.external_id: r.adv_gagar for a, r in zip(attempts_, result.attempts, strict=True)}


def rollout_of(text: str):
    """The Rollout a test's "trainer" produced for a completion named `<task>|<variant>|<i>`:
    the i-th attempt of `attempts(variant)`, whose test output names the completion (so a test
    can find which stored attempt a sample became)."""
    import dataclasses

    from gagar_client.adapters import Rollout

    task_id, variant, i = text.split("|")
    base = attempts(int(variant))[int(i)]
    return Rollout(task=task(task_id), attempt=dataclasses.replace(base, test_output=text))


def pure_by_completion(run: str, step: int) -> dict[str, float]:
    """A′ from the pure module for every stored attempt of a step, by the completion it was."""
    out: dict[str, float] = {}
    groups = GroupModel.objects.filter(step__run__name=run, step__number=step)
    graded = GraderRun.objects.filter(group__in=groups, status="succeeded")
    # Every group graded: the comparison is with redistributed values, not GRPO against GRPO.
    assert graded.values("group").distinct().count() == groups.count() > 0
    for group in groups:
        pure = pure_advantages(group)
        for a in group.attempts.all():
            out[a.test_output().decode()] = pure[a.external_id]
    return out


def completions(step_tasks: dict[str, int]) -> list[str]:
    """Each task's eight completions, group after group (the order TRL's sampler gives)."""
    return [f"{t}|{variant}|{i}" for t, variant in step_tasks.items() for i in range(8)]
