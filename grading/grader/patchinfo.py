"""A candidate's unified diff indexed by file and line number (tools, evidence, heuristics)."""

from __future__ import annotations

from dataclasses import dataclass, field

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet


@dataclass
class FileDiff:
    path: str  # the post-patch path, or the pre-patch path for a deleted file
    source_path: str | None
    target_path: str | None
    hunks: int = 0
    added: dict[int, str] = field(default_factory=dict)  # post-side line number -> text
    removed: dict[int, str] = field(default_factory=dict)  # pre-side line number -> text
    context_pre: set[int] = field(default_factory=set)
    context_post: set[int] = field(default_factory=set)

    @property
    def is_new(self) -> bool:
        return self.source_path is None

    @property
    def is_deleted(self) -> bool:
        return self.target_path is None

    def has_lines(self, side: str, start: int, end: int) -> bool:
        """Whether every line in [start, end] is an added (post) or removed/context (pre) line."""
        if side == "post":
            return all(n in self.added or n in self.context_post for n in range(start, end + 1))
        return all(n in self.removed or n in self.context_pre for n in range(start, end + 1))


@dataclass
class PatchIndex:
    files: dict[str, FileDiff] = field(default_factory=dict)
    error: str | None = None

    @property
    def added(self) -> int:
        return sum(len(f.added) for f in self.files.values())

    @property
    def removed(self) -> int:
        return sum(len(f.removed) for f in self.files.values())

    @property
    def hunks(self) -> int:
        return sum(f.hunks for f in self.files.values())

    def find(self, path: str) -> FileDiff | None:
        """Look a file up by its post path, falling back to its pre path (renames, deletions)."""
        if path in self.files:
            return self.files[path]
        return next((f for f in self.files.values() if f.source_path == path), None)


def _strip(path: str) -> str | None:
    if path == "/dev/null":
        return None
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_patch(text: str) -> PatchIndex:
    index = PatchIndex()
    if not text.strip():
        return index
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        index.error = str(exc)
        return index
    for pf in patch:
        source, target = _strip(pf.source_file), _strip(pf.target_file)
        path = target or source or pf.path
        fd = FileDiff(path=path, source_path=source, target_path=target, hunks=len(pf))
        for hunk in pf:
            for line in hunk:
                if line.is_added and line.target_line_no is not None:
                    fd.added[line.target_line_no] = line.value.rstrip("\n")
                elif line.is_removed and line.source_line_no is not None:
                    fd.removed[line.source_line_no] = line.value.rstrip("\n")
                elif line.is_context:
                    if line.source_line_no is not None:
                        fd.context_pre.add(line.source_line_no)
                    if line.target_line_no is not None:
                        fd.context_post.add(line.target_line_no)
        index.files[path] = fd
    return index
