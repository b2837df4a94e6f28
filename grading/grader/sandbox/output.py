"""Bounded capture of a check's output: keep the head and the tail, mark the cut.

Test runners print their summary last, so the tail matters as much as the head.
"""

from __future__ import annotations

from collections import deque


class BoundedOutput:
    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        head_room = self.limit // 2 - len(self._head)
        if head_room > 0:
            self._head += chunk[:head_room]
            chunk = chunk[head_room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        tail_limit = self.limit - self.limit // 2
        # Drop whole old chunks while the rest still fills the tail budget.
        while self._tail and self._tail_size - len(self._tail[0]) >= tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        keep = self.limit - len(self._head)
        tail = tail[len(tail) - keep :] if keep else b""
        dropped = self.total - len(self._head) - len(tail)
        marker = f"\n[... {dropped} bytes of output cut; {self.total} bytes in all ...]\n"
        head = bytes(self._head).decode("utf-8", errors="replace")
        return head + marker + tail.decode("utf-8", errors="replace")
