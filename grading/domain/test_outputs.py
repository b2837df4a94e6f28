"""Test output, bounded: a file beside its report (`logs/<id>/test_output.txt`) or sent inline.

The harness writes whatever the tests print: usually kilobytes, but a test stuck in a loop that
logs writes gigabytes. Such a file is not refused, since the attempt's label and patch are
sound and graders and reviewers need its output; it is kept as its start and its end, `limit`
bytes in all, with one marker line between them saying how many bytes were dropped and which
setting keeps more. The end gets three quarters: pytest's failures, tracebacks and short
summary come last; the start holds the eval script's trace (checkout, `git apply`). The cuts
fall on line breaks when one is near, so no line is kept half.

Only the two kept parts are ever read (the rest is skipped by seeking), so memory stays within
the limit whatever the file's size.

What is stored says how much it dropped (`KeptOutput.dropped`, kept on the attempt): a group
imported again under a larger limit has the same identity (the whole output's digest), and its
stored copy is rewritten in place when this import keeps more of it
(`AttemptRecord.fuller_test_output`), so a cut output is made whole without deleting a group
that may have been reviewed and graded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# The setting GAGAR_MAX_TEST_OUTPUT_BYTES defaults to this.
DEFAULT_MAX_TEST_OUTPUT_BYTES = 16 * 1024 * 1024
SETTING = "GAGAR_MAX_TEST_OUTPUT_BYTES"
# A cut moves back (or on) to a line break at most this far, so a file of one huge line is
# still cut where the budget says.
_SNAP = 4096


@dataclass(frozen=True)
class KeptOutput:
    """What is stored of a test output: the whole of it, or its start, a marker and its end;
    `dropped` is how many of the output's bytes are not in it (0 when it is whole)."""

    data: bytes
    dropped: int = 0

    @property
    def whole(self) -> bool:
        return self.dropped == 0


@dataclass(frozen=True)
class TestOutputFile:
    path: Path
    limit: int = DEFAULT_MAX_TEST_OUTPUT_BYTES

    __test__ = False  # not a pytest test class, despite its name

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def truncated(self) -> bool:
        return self.size > self.limit

    def read(self) -> KeptOutput:
        """The whole file when it is within the limit, else its start, a marker and its end."""
        head, tail, size = self._parts()
        if size <= self.limit:
            return KeptOutput(head)
        return _cut(size, head, tail, self.limit)

    def may_keep_more(self, dropped: int) -> bool:
        """Whether this limit might keep more of the file than a stored copy of it that
        dropped `dropped` bytes, told from the file's size alone (no cut keeps more than the
        limit): when the copy kept that much already, the file is left unread."""
        return self.size - dropped < self.limit

    def digest(self) -> str:
        """The SHA-256 of the whole file, streamed, whatever the limit: what the harness wrote
        is the attempt's identity, the cut only how much of it is stored. So importing the same
        folder again is "unchanged" under any limit (an import of many groups never fails over
        one output stored whole before, or cut under another limit), and a copy stored cut stays
        cut; its marker says so."""
        digest = hashlib.sha256()
        with self.path.open("rb") as handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
        return digest.hexdigest()

    def note(self) -> str:
        """What the import report says of a file over the limit. Said of the file, not of this
        import's write: a group imported before keeps the copy it has unless this import keeps
        more of the file (the group is then reported "completed", with a note of its own)."""
        head, tail, size = self._parts()
        return (
            f"the test output is {size:,} bytes, over the {self.limit:,} bytes {SETTING} "
            f"keeps: a group written from it keeps its first {len(head):,} and last "
            f"{len(tail):,} bytes, with a marker line where {size - len(head) - len(tail):,} "
            f"bytes were dropped; to keep it whole, raise {SETTING} and import it again (a "
            "group stored cut is completed in place, its reviews and grades kept)"
        )

    def _parts(self) -> tuple[bytes, bytes, int]:
        """(start, end, file size); the start is the whole file when it is within the limit.
        Only what is kept is read: the middle is skipped by seeking."""
        size = self.size
        with self.path.open("rb") as handle:
            if size <= self.limit:
                return handle.read(self.limit), b"", size

            def read_at(offset: int, n: int) -> bytes:
                handle.seek(offset)
                return handle.read(n)

            return *_kept(size, self.limit, read_at), size


def bounded(data: bytes, limit: int) -> KeptOutput:
    """Test output sent inline (a bundle's `test_output`), cut as a file over `limit` is."""
    if len(data) <= limit:
        return KeptOutput(data)
    head, tail = _kept(len(data), limit, lambda offset, n: data[offset : offset + n])
    return _cut(len(data), head, tail, limit)


def _cut(size: int, head: bytes, tail: bytes, limit: int) -> KeptOutput:
    dropped = size - len(head) - len(tail)
    return KeptOutput(head + _marker(size, len(head), len(tail), limit) + tail, dropped)


def _kept(size: int, limit: int, read_at: Callable[[int, int], bytes]) -> tuple[bytes, bytes]:
    """The start and end kept of an output of `size` bytes over `limit`, read with
    `read_at(offset, n)`: a quarter of the budget to the start, the rest to the end."""
    head = _head(read_at(0, limit // 4))
    budget = limit - len(head)
    return head, _tail(read_at(size - budget, budget))


def _marker(size: int, head: int, tail: int, limit: int) -> bytes:
    return (
        f"\n[… {size - head - tail:,} bytes of test output dropped here: the output is {size:,} "
        f"bytes, over the {limit:,} bytes {SETTING} keeps (its start and end are kept) …]\n"
    ).encode()


def _head(data: bytes) -> bytes:
    """The start, up to its last line break when one is within reach, else without the UTF-8
    character the cut went through."""
    cut = data.rfind(b"\n", max(0, len(data) - _SNAP))
    if cut >= 0:
        return data[: cut + 1]
    end = len(data)
    while end > 0 and len(data) - end < 4 and data[end - 1] & 0xC0 == 0x80:
        end -= 1  # continuation bytes
    if end > 0 and data[end - 1] >= 0xC0:
        end -= 1  # and the lead byte whose character they may not finish
    return data[:end]


def _tail(data: bytes) -> bytes:
    """The end, from just after its first line break when one is within reach, else from the
    first whole UTF-8 character."""
    cut = data.find(b"\n", 0, _SNAP)
    if cut >= 0:
        return data[cut + 1 :]
    start = 0
    while start < min(len(data), 3) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]
