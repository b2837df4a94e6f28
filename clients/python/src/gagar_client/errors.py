"""What the client raises. Server errors carry the RFC 9457 problem the API answered with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class GagarError(Exception):
    """Anything the client refuses or the server answered with an error."""


@dataclass
class Problem:
    """One `{line, field, message}` entry of a problem's `problems` list."""

    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"


class BundleError(GagarError):
    """A bundle that does not validate against gagar.group.v1 (checked before sending)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("invalid bundle:\n  " + "\n  ".join(str(p) for p in problems))


@dataclass
class ApiError(GagarError):
    """An error answer: status, the problem document's fields, and its `problems` list."""

    status: int
    type: str = "about:blank"
    title: str = ""
    detail: str = ""
    problems: list[Problem] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"HTTP {self.status} {self.title}: {self.detail}".rstrip(": ")
        return "\n  ".join([head, *(str(p) for p in self.problems)])

    @classmethod
    def from_response(cls, status: int, body: Any, text: str = "") -> ApiError:
        if not isinstance(body, dict):
            return cls(status=status, detail=text[:500])
        problems = [
            Problem(line=p.get("line"), field=str(p.get("field", "")), message=str(p["message"]))
            for p in body.get("problems") or []
            if isinstance(p, dict) and "message" in p
        ]
        return cls(
            status=status,
            type=str(body.get("type", "about:blank")),
            title=str(body.get("title", "")),
            detail=str(body.get("detail", "")),
            problems=problems,
            body=body,
        )


class DeadlineExceeded(GagarError):
    """The client-side deadline passed before the request could be made or retried."""
