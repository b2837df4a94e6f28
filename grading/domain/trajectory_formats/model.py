"""The normalized trajectory event, its JSON shape and the error every reader raises."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal, cast, get_args

from grading.domain.wording import shown

type JsonValue = bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None

EventKind = Literal["message", "thought", "action", "observation", "error"]
Role = Literal["system", "user", "assistant", "tool"]

EVENT_KINDS: frozenset[str] = frozenset(get_args(EventKind))
ROLES: frozenset[str] = frozenset(get_args(Role))

# A read-only empty mapping: a dataclass refuses a plain `{}` default, and sharing one mutable
# dict between every event would be a trap.
_NO_EXTRA: Mapping[str, JsonValue] = MappingProxyType({})

_KEYS = frozenset({"kind", "role", "text", "tool", "args", "extra"})


class TrajectoryFormatError(ValueError):
    """Input is not a trajectory we can read; the message starts with the JSON path at fault."""


class TrajectoryFormat(StrEnum):
    NATIVE = "native"
    SWE_AGENT = "swe-agent"
    OPENHANDS = "openhands"
    CHAT = "chat"
    MOATLESS = "moatless"


@dataclass(frozen=True, slots=True)
class TrajectoryEvent:
    """One step of an agent trajectory, whatever format it came from.

    `text` is always a self-contained human-readable rendering (for an action: the command as the
    agent wrote it); `tool` and `args` are its structured parts when the format has them. `role`
    is None for events the harness wrote (e.g. the final exit status). `extra` is read-only by
    convention and holds small leftovers only; model names are never copied into it because
    reviewers must not learn which system produced an attempt.
    """

    kind: EventKind
    role: Role | None
    text: str
    tool: str | None = None
    args: str | None = None
    extra: Mapping[str, JsonValue] = _NO_EXTRA

    def to_json(self) -> dict[str, object]:
        # None fields and empty text/extra are omitted; from_json restores the same defaults,
        # so the round trip is exact (an empty-string tool is kept, it is not None).
        out: dict[str, object] = {"kind": self.kind}
        if self.role is not None:
            out["role"] = self.role
        if self.text:
            out["text"] = self.text
        if self.tool is not None:
            out["tool"] = self.tool
        if self.args is not None:
            out["args"] = self.args
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: object, path: str = "$") -> TrajectoryEvent:
        data = expect_dict(obj, path)
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise TrajectoryFormatError(f"{path}: unexpected keys {unknown}")
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in EVENT_KINDS:
            raise TrajectoryFormatError(
                f"{path}.kind: expected one of {sorted(EVENT_KINDS)}, got {shown(kind)}"
            )
        role = data.get("role")
        if role is not None and (not isinstance(role, str) or role not in ROLES):
            raise TrajectoryFormatError(
                f"{path}.role: expected one of {sorted(ROLES)} or null, got {shown(role)}"
            )
        text = data.get("text", "")
        if not isinstance(text, str):
            raise TrajectoryFormatError(f"{path}.text: expected a string")
        extra = data.get("extra", {})
        return cls(
            kind=cast(EventKind, kind),
            role=cast(Role | None, role),
            text=text,
            tool=optional_str(data, "tool", path),
            args=optional_str(data, "args", path),
            extra=expect_json_object(extra, f"{path}.extra"),
        )


def expect_dict(obj: object, path: str) -> dict[str, object]:
    if not isinstance(obj, dict):
        raise TrajectoryFormatError(f"{path}: expected an object, got {type_name(obj)}")
    return cast(dict[str, object], obj)


def expect_list(obj: object, path: str) -> list[object]:
    if not isinstance(obj, list):
        raise TrajectoryFormatError(f"{path}: expected a list, got {type_name(obj)}")
    return cast(list[object], obj)


def optional_str(data: Mapping[str, object], key: str, path: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise TrajectoryFormatError(f"{path}.{key}: expected a string, got {type_name(value)}")
    return value


def expect_json_object(obj: object, path: str) -> dict[str, JsonValue]:
    data = expect_dict(obj, path)
    for key, value in data.items():
        _check_json(value, f"{path}.{key}")
    return cast(dict[str, JsonValue], data)


def _check_json(value: object, path: str) -> None:
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TrajectoryFormatError(f"{path}: expected a finite number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TrajectoryFormatError(f"{path}: object keys must be strings")
            _check_json(item, f"{path}.{key}")
        return
    raise TrajectoryFormatError(f"{path}: expected a JSON value, got {type_name(value)}")


def type_name(value: object) -> str:
    """JSON's name for a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
