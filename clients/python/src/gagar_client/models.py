"""Typed views of the API's answers. Advantages are keyed by (group id, attempt id): attempt
ids are unique within a group only, so two groups of a step may both have an attempt "r0"."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from gagar_client.bundle import default_group_id

GroupStatus = Literal["graded", "pending", "fallback", "failed"]
Key = tuple[str, str]


def group_key_of(row: dict[str, Any]) -> str:
    """The bundle's group_id, or `<run>/<step>/<task>` for a group imported without one (the
    id this client gives such groups). `gagar.v2` rows carry it as `group_id`; `gagar.v1`
    rows had the database id there and the bundle's id in `group_external_id`."""
    if "group_db_id" in row:
        return str(row["group_id"])
    external = row.get("group_external_id")
    if external:
        return str(external)
    return default_group_id(str(row["run"]), int(row["step"]), str(row["task_id"]))


def attempt_key_of(row: dict[str, Any]) -> str:
    """The bundle's attempt id (`attempt_id` in v2, `attempt_external_id` in v1)."""
    if "attempt_db_id" in row:
        return str(row["attempt_id"])
    return str(row["attempt_external_id"])


@dataclass(frozen=True)
class AdvantageRow:
    """One `gagar.v2` attempt row. `raw` holds every column the server sent."""

    group: str
    attempt: str
    run: str
    step: int
    task_id: str
    attempt_index: int
    status: str
    included: bool
    test_reward: float
    reward_used: float | None
    tier: int | None
    exploit: bool
    rank_in_tier: int | None
    coefficient: float
    adv_grpo: float
    adv_gagar: float
    reward_equivalent: float | None
    mean_reward: float | None
    fallback: bool
    fallback_reason: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> Key:
        return (self.group, self.attempt)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> AdvantageRow:
        return cls(
            group=group_key_of(row),
            attempt=attempt_key_of(row),
            run=str(row["run"]),
            step=int(row["step"]),
            task_id=str(row["task_id"]),
            attempt_index=int(row["attempt_index"]),
            status=str(row["status"]),
            included=bool(row["included"]),
            test_reward=float(row["test_reward"]),
            reward_used=_float(row.get("reward_used")),
            tier=row.get("tier"),
            exploit=bool(row.get("exploit", row.get("status") == "exploit_confirmed")),
            rank_in_tier=row.get("rank_in_tier"),
            coefficient=float(row["coefficient"]),
            adv_grpo=float(row["adv_grpo"]),
            adv_gagar=float(row["adv_gagar"]),
            reward_equivalent=_float(row.get("reward_equivalent")),
            mean_reward=_float(row.get("mean_reward")),
            fallback=bool(row.get("fallback")),
            fallback_reason=str(row.get("fallback_reason") or ""),
            raw=row,
        )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class GroupAdvantages:
    group: str
    group_db_id: Any
    run: str
    step: int
    task_id: str
    status: GroupStatus
    fallback: bool
    fallback_reason: str
    mean_reward: float | None
    n_valid: int
    attempts: tuple[AdvantageRow, ...] | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, g: dict[str, Any]) -> GroupAdvantages:
        rows = g.get("attempts")
        return cls(
            group=group_key_of(g),
            group_db_id=g.get("group_db_id", g.get("group_id")),
            run=str(g["run"]),
            step=int(g["step"]),
            task_id=str(g["task_id"]),
            status=g["status"],
            fallback=bool(g["fallback"]),
            fallback_reason=str(g.get("fallback_reason") or ""),
            mean_reward=_float(g.get("mean_reward")),
            n_valid=int(g.get("n_valid") or 0),
            attempts=None if rows is None else tuple(AdvantageRow.from_dict(r) for r in rows),
            raw=g,
        )


@dataclass(frozen=True)
class Advantages:
    """A step's (or some groups') advantages, indexed by (group id, attempt id)."""

    schema: str
    grader_config: str
    params: dict[str, Any]
    complete: bool
    counts: dict[str, int]
    waited_seconds: float
    groups: tuple[GroupAdvantages, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)
    _index: dict[Key, AdvantageRow] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> Advantages:
        groups = tuple(GroupAdvantages.from_dict(g) for g in payload["groups"])
        index: dict[Key, AdvantageRow] = {}
        for g in groups:
            for row in g.attempts or ():
                if row.key in index:
                    raise ValueError(f"two rows for group {row.group!r}, attempt {row.attempt!r}")
                index[row.key] = row
        return cls(
            schema=str(payload.get("schema", "")),
            grader_config=str(payload.get("grader_config", "")),
            params=dict(payload.get("params") or {}),
            complete=bool(payload.get("complete")),
            counts=dict(payload.get("counts") or {}),
            waited_seconds=float(payload.get("waited_seconds") or 0.0),
            groups=groups,
            raw=payload,
            _index=index,
        )

    def get(self, group: str, attempt: str) -> AdvantageRow:
        """The row of one attempt; KeyError if that group has no such attempt (or is pending)."""
        return self._index[(group, attempt)]

    def group(self, group: str) -> GroupAdvantages:
        for g in self.groups:
            if g.group == group:
                return g
        raise KeyError(group)

    def rows(self) -> Iterator[AdvantageRow]:
        for g in self.groups:
            yield from g.attempts or ()

    def by_key(self) -> dict[Key, AdvantageRow]:
        return dict(self._index)

    def adv_gagar(self) -> dict[Key, float]:
        """A′ per (group id, attempt id): what a trainer trains on (infra failures: 0)."""
        return {k: r.adv_gagar for k, r in self._index.items()}

    @property
    def pending(self) -> list[str]:
        return [g.group for g in self.groups if g.status == "pending"]


@dataclass(frozen=True)
class GraderRun:
    """One grader run of a group (`gagar.v2`: ids are strings, the group by its external id)."""

    grader_run_id: str
    group: str
    group_db_id: int
    config: str
    replica: int
    status: str
    deliveries: int
    failure_reason: str
    llm_calls: int
    cost_usd: float | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> GraderRun:
        return cls(
            grader_run_id=str(row["grader_run_id"]),
            group=str(row["group_id"]),
            group_db_id=int(row["group_db_id"]),
            config=str(row["config"]),
            replica=int(row["replica"]),
            status=str(row["status"]),
            deliveries=int(row["deliveries"]),
            failure_reason=str(row.get("failure_reason") or ""),
            llm_calls=int(row.get("llm_calls") or 0),
            cost_usd=_float(row.get("cost_usd")),
            raw=row,
        )


@dataclass(frozen=True)
class Grade:
    """The grader's grade of one attempt: tier 1–3 or null, with `exploit_suspected` (the
    grader's flag) and `exploit` (a confirmed exploit: the attempt's status)."""

    group: str
    attempt: str
    tier: int | None
    exploit_suspected: bool
    exploit: bool
    rank_in_tier: int | None
    weighted_score: float
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> Key:
        return (self.group, self.attempt)


@dataclass(frozen=True)
class Verdict:
    """A succeeded grader run: its grades, keyed by (group id, attempt id), and the verdict
    document (candidates named by the bundle's attempt ids)."""

    grader_run_id: str
    group: str
    group_db_id: int
    config: str
    replica: int
    grades: tuple[Grade, ...]
    document: dict[str, Any] | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Verdict:
        group = str(row["group_id"])
        grades = tuple(
            Grade(
                group=group,
                attempt=str(g["attempt_id"]),
                tier=g.get("tier"),
                exploit_suspected=bool(g.get("exploit_suspected")),
                exploit=bool(g.get("exploit")),
                rank_in_tier=g.get("rank_in_tier"),
                weighted_score=float(g["weighted_score"]),
                raw=g,
            )
            for g in row.get("grades") or ()
        )
        return cls(
            grader_run_id=str(row["grader_run_id"]),
            group=group,
            group_db_id=int(row["group_db_id"]),
            config=str(row["config"]),
            replica=int(row["replica"]),
            grades=grades,
            document=row.get("verdict"),
            raw=row,
        )

    def by_key(self) -> dict[Key, Grade]:
        return {g.key: g for g in self.grades}
