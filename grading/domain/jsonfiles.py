"""Read an import file as what it is: one JSON document, or JSON Lines, with every row located.

Tools write both. The SWE-bench harness writes reports as *indented* JSON objects
(`json.dumps(report, indent=4)`), ACR writes predictions as an indented array, and most
predictions and task files are JSON Lines. The rule, decided on the first non-blank line:

- it starts with `[`: one JSON document (an array; each item is a row, located by its line);
- it starts with `{` and is a complete JSON value by itself: JSON Lines (one row per line);
- it starts with `{` and is not complete (a pretty-printed object opens there): one JSON
  document, one row, with the line of each top-level key kept for error messages;
  A first line cut short (a minified report written while the disk filled: it stops inside a
  string, a number or `true`) opens a value it does not close too: it is read so, and its
  error says the text ends early;
- anything else: neither, said so.

Nothing is read into memory unbounded: a line whose text (without its line break or BOM) is over
`max_line_bytes` is refused with its line and the setting that raises the limit, unread, unless
it is a whole file of one value on one line (a minified array or object), which is a document;
a document over `max_document_bytes` is refused before it is read.

Every error says which of the two the file was read as and why. A trailing comma after the
last item of a list or object (SCHEMAS.md §2a: CodeR's `results.json`) is not JSON; it is
refused with its line and the fix, unless the reader is lenient, which removes trailing commas
outside strings and leaves a note saying so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from grading.domain import safe_json
from grading.domain.records import ImportNote, ImportProblem, ImportProblemError
from grading.domain.text_bytes import HEAD_BYTES, binary_problem, stray_byte_field, utf8_message
from grading.domain.wording import shown

JSON_LINES = "JSON Lines"
DOCUMENT = "one JSON document"
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = safe_json.DECODER
LENIENT_FLAG = "--lenient-json"
# The settings GAGAR_MAX_LINE_BYTES and GAGAR_MAX_DOCUMENT_BYTES default to these.
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
# A document is parsed whole: measured, it peaks at about three times its size in memory
# (2.8x traced by tracemalloc, 3.3x in RSS).
DEFAULT_MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class JsonRow:
    source: str
    line: int | None
    field: str  # "$" for a JSON Lines row or a whole document, "$[i]" for an array item
    value: Any
    # Top-level keys of an object document -> their line, so a problem in one entry of an
    # indented report names the line of that entry rather than line 1.
    key_lines: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def line_for(self, path: str) -> int | None:
        """The line of the top-level key `path` starts with (".key…"), else the row's line."""
        if self.key_lines and path.startswith("."):
            rest = path[1:]
            for key, line in self.key_lines.items():
                if rest == key or rest.startswith((key + ".", key + "[")):
                    return line
        return self.line


def _problem(source: str, line: int | None, message: str) -> ImportProblemError:
    return ImportProblemError(ImportProblem(source, line, "", message))


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


BOM = b"\xef\xbb\xbf"


def read_line(stream: IO[bytes], limit: int, *, first: bool = False) -> tuple[bytes, bool]:
    """The next line (b"" at the end) and whether it is longer than `limit` bytes. What counts is
    the line's text: not its line break (LF or CRLF) nor, on the first line, a UTF-8 BOM. At
    most `limit` + 5 bytes are read: the rest of a longer line is left in the stream."""
    raw = stream.readline(limit + 5)
    text = raw.removeprefix(BOM) if first else raw
    if text.endswith(b"\n"):
        text = text[:-2] if text.endswith(b"\r\n") else text[:-1]
    return raw, len(text) > limit


def _nothing_after(stream: IO[bytes], line_ended: bool) -> bool:
    """Whether only whitespace follows the current line (read on in 1 MiB chunks to its end)."""
    while chunk := stream.read(1024 * 1024):
        if not line_ended:
            end = chunk.find(b"\n")
            if end < 0:
                continue
            line_ended, chunk = True, chunk[end + 1 :]
        if chunk.strip():
            return False
    return True


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _trailing_comma(text: str, pos: int) -> int | None:
    """Where the trailing comma is, if the parse error at `pos` is one (else None).

    Python 3.13 reports the comma itself ("Illegal trailing comma …"); earlier versions report
    the closing bracket after it ("Expecting value"): both are recognised.
    """
    if pos < len(text) and text[pos] == ",":
        after = _skip_ws(text, pos + 1)
        return pos if after < len(text) and text[after] in "]}" else None
    if pos < len(text) and text[pos] in "]}":
        before = pos - 1
        while before >= 0 and text[before] in " \t\n\r":
            before -= 1
        return before if before >= 0 and text[before] == "," else None
    return None


# A JSON string (skipped whole, so a comma inside one stays) or a comma that only whitespace
# separates from a closing bracket. An unterminated string matches nothing: the scan goes on
# after its quote, and the text stays invalid JSON either way.
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=[ \t\n\r]*[\]}])')


def remove_trailing_commas(text: str) -> tuple[str, list[int]]:
    """The text without commas that directly precede `]` or `}` (outside strings), and the
    lines they were on. Scanned by one regular expression and joined from slices: a large
    document costs a copy of itself, not a Python object per character."""
    parts: list[str] = []
    lines: list[int] = []
    last, line, counted = 0, 1, 0
    for match in _STRING_OR_TRAILING_COMMA.finditer(text):
        if match.group() != ",":
            continue
        pos = match.start()
        line += text.count("\n", counted, pos)
        counted = pos
        lines.append(line)
        parts.append(text[last:pos])
        last = pos + 1
    parts.append(text[last:])
    return "".join(parts), lines


def _members(text: str, start: int) -> tuple[list[tuple[str | None, Any, int]], int]:
    """Top-level items of the array or object opening at `start`: (key, value, position).

    Values are parsed by the standard decoder; only the top level is walked here, to know where
    each item starts.
    """
    closer = "]" if text[start] == "[" else "}"
    items: list[tuple[str | None, Any, int]] = []
    pos = _skip_ws(text, start + 1)
    if pos < len(text) and text[pos] == closer:
        return items, pos + 1
    while True:
        item_pos = pos
        key: str | None = None
        if closer == "}":
            if pos >= len(text) or text[pos] != '"':
                raise json.JSONDecodeError(
                    "Expecting property name enclosed in double quotes", text, pos
                )
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            pos = _skip_ws(text, pos + 1)
        value, pos = _DECODER.raw_decode(text, pos)
        items.append((key, value, item_pos))
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
            if pos < len(text) and text[pos] == closer:
                raise json.JSONDecodeError("Illegal trailing comma", text, pos)
            continue
        if pos < len(text) and text[pos] == closer:
            return items, pos + 1
        raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


@dataclass
class JsonReader:
    """Reads import files; collects the notes of repairs made when lenient."""

    lenient: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    notes: list[ImportNote] = dataclasses.field(default_factory=list)

    def rows(self, path: Path) -> Iterator[JsonRow]:
        """Every row, each refused (with its line and field) when `safe_json` would refuse it."""
        source = str(path)
        try:
            for row in self._rows(path):
                try:
                    safe_json.check(row.value, row.field)
                except safe_json.JsonLimitError as exc:
                    raise _problem(source, row.line, str(exc)) from exc
                yield row
        except RecursionError as exc:
            raise _problem(
                source, None, f"nested deeper than {safe_json.MAX_DEPTH} levels"
            ) from exc
        except safe_json.JsonLimitError as exc:
            raise _problem(source, None, str(exc)) from exc

    def _overlong(self, source: str, line_no: int, why: str = "") -> ImportProblemError:
        because = f" ({why})" if why else ""
        return _problem(
            source,
            line_no,
            f"the line is longer than the {_mib(self.max_line_bytes)} a line may hold{because}; "
            "it was not read (the limit is GAGAR_MAX_LINE_BYTES)",
        )

    def _rows(self, path: Path) -> Iterator[JsonRow]:
        source = str(path)
        with path.open("rb") as handle:
            binary = binary_problem(handle.read(HEAD_BYTES))
            if binary:
                raise _problem(source, None, binary)
            handle.seek(0)
            line_no = 0
            while True:
                line_no += 1
                raw, too_long = read_line(handle, self.max_line_bytes, first=line_no == 1)
                if not raw:
                    return  # empty or blank: no rows
                head = (raw.removeprefix(BOM) if line_no == 1 else raw).strip()
                if too_long or head:
                    break
            if too_long:
                # One value on one line (a minified array or keyed object, as `json.dump` writes
                # without indent) is a document: its size, not its line, is the limit.
                if head.startswith(b"["):
                    yield from self._document(path, f"line {line_no} opens an array")
                    return
                if head.startswith(b"{") and _nothing_after(handle, raw.endswith(b"\n")):
                    yield from self._document(path, f"the file is one object on line {line_no}")
                    return
                raise self._overlong(source, line_no)
        row = _first_row(head) if head.startswith(b"{") else None
        if row is not None:
            yield from self._lines(path, first=line_no, whole=row)
            return
        if head.startswith((b"[", b"{")):
            yield from self._document(path, f"line {line_no} opens a value it does not close")
            return
        raise _problem(
            source,
            line_no,
            f"neither JSON Lines nor one JSON document: the first line starts with "
            f"{shown(head[:20].decode('utf-8', 'replace'))}, not {{ or [",
        )

    def _lines(self, path: Path, *, first: int = 1, whole: bool = True) -> Iterator[JsonRow]:
        """Each line a row; `first` is the first line that is not blank (the one read to decide)."""
        source = str(path)
        # Say why truthfully: a first row broken mid-line is no complete value.
        reason = "is a complete JSON value" if whole else "breaks off before its end"
        why = f"read as {JSON_LINES}, since line {first} {reason}"
        with path.open("rb") as handle:
            line_no = 0
            while True:
                line_no += 1
                raw, too_long = read_line(handle, self.max_line_bytes, first=line_no == 1)
                if not raw:
                    return
                if too_long:
                    raise self._overlong(source, line_no, why)
                body = raw.removeprefix(BOM) if line_no == 1 else raw
                if not body.strip():
                    continue
                try:
                    # Without its line break: an error at the end is on this line.
                    text = body.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    # The encoding, not the layout, is the problem: no "read as" reason here
                    # (line 1 undecodable is neither complete nor cut off).
                    field = stray_byte_field(body)
                    raise ImportProblemError(
                        ImportProblem(
                            source,
                            line_no,
                            field or "",
                            utf8_message(body, exc, field, unit="line"),
                        )
                    ) from exc
                value = self._parse(text, source, why, line_offset=line_no - 1)
                yield JsonRow(source, line_no, "$", value)

    def _document(self, path: Path, because: str) -> Iterator[JsonRow]:
        source = str(path)
        why = f"read as {DOCUMENT}, since {because}"
        size = path.stat().st_size
        if size > self.max_document_bytes:
            raise _problem(
                source,
                None,
                f"the file is {_mib(size)}, over the {_mib(self.max_document_bytes)} one JSON "
                f"document may hold ({why}); it was not read. Write it as JSON Lines (one row "
                "per line), or raise GAGAR_MAX_DOCUMENT_BYTES",
            )
        data = path.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            field = stray_byte_field(data.removeprefix(BOM))
            message = utf8_message(data, exc, field, unit="file")
            raise ImportProblemError(ImportProblem(source, line, field or "", message)) from exc
        try:
            start = _skip_ws(text, 0)
            items, end = _members(text, start)
            if _skip_ws(text, end) != len(text):
                raise json.JSONDecodeError("Extra data", text, _skip_ws(text, end))
        except json.JSONDecodeError as exc:
            text = self._repaired(text, exc, source, why)
            start = _skip_ws(text, 0)
            items, _ = _members(text, start)
        if text[start] == "[":
            line = _line_of(text, start)
            for index, (_, value, pos) in enumerate(items):
                line = line + text.count("\n", start, pos)
                start = pos
                yield JsonRow(source, line, f"$[{index}]", value)
            return
        key_lines: dict[str, int] = {}
        value_map: dict[str, Any] = {}
        line, at = _line_of(text, start), start
        for key, value, pos in items:
            line += text.count("\n", at, pos)
            at = pos
            assert key is not None
            key_lines.setdefault(key, line)
            value_map[key] = value
        yield JsonRow(source, _line_of(text, start), "$", value_map, key_lines)

    def _parse(self, text: str, source: str, why: str, *, line_offset: int) -> Any:
        try:
            try:
                return safe_json.decode(text)
            except json.JSONDecodeError as exc:
                fixed = self._repaired(text, exc, source, why, line_offset=line_offset)
                return safe_json.decode(fixed)
        except safe_json.JsonLimitError as exc:
            raise _problem(source, line_offset + 1, f"{exc} ({why})") from exc

    def _repaired(
        self,
        text: str,
        exc: json.JSONDecodeError,
        source: str,
        why: str,
        *,
        line_offset: int = 0,
    ) -> str:
        """The text with trailing commas removed, when that is the problem and lenient; else
        the error, located and explained."""
        comma = _trailing_comma(text, exc.pos)
        if comma is None:
            line = _line_of(text, exc.pos) + line_offset
            cut = (
                "; the text ends before the value it opens does: is the file cut short?"
                if _ends_early(text, exc)
                else ""
            )
            raise _problem(
                source, line, f"not valid JSON ({why}): {safe_json.error_text(exc)}{cut}"
            ) from exc
        comma_line = _line_of(text, comma) + line_offset
        if not self.lenient:
            raise _problem(
                source,
                comma_line,
                "trailing comma after the last item of a list or object: not valid JSON "
                f"({why}). Remove that comma, or re-run with {LENIENT_FLAG} to repair "
                "trailing commas",
            ) from exc
        fixed, lines = remove_trailing_commas(text)
        try:
            json.loads(fixed)
        except json.JSONDecodeError as again:
            line = _line_of(fixed, again.pos) + line_offset
            raise _problem(
                source,
                line,
                f"not valid JSON even without trailing commas ({why}): "
                f"{safe_json.error_text(again)}",
            ) from again
        where = ", ".join(str(n + line_offset) for n in lines)
        self.notes.append(
            ImportNote(
                source,
                lines[0] + line_offset,
                f"{LENIENT_FLAG}: removed {len(lines)} trailing comma"
                f"{'s' if len(lines) != 1 else ''} (line{'s' if len(lines) != 1 else ''} "
                f"{where}); nothing else was changed",
            )
        )
        return fixed


_NUMBER_OR_LITERAL_START = re.compile(r"[-+.eE0-9]*|t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?")


def _ends_early(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the parse failed because the text ran out (a value still open where it ends: a
    cut file), not on a wrong token before its end."""
    rest = text[exc.pos :].rstrip()
    return (
        not rest
        or exc.msg.startswith("Unterminated string")
        or _NUMBER_OR_LITERAL_START.fullmatch(rest) is not None
    )


def _first_row(first_line: bytes) -> bool | None:
    """How a first line starting with `{` reads: True when it holds one whole JSON value (a JSON
    Lines row), False when it breaks off before its end (a wrong token: still JSON Lines, a row
    broken in the middle, or not UTF-8), None when a value is still open at its end (the start
    of an indented document, or a one-line document cut short)."""
    try:
        json.loads(first_line)
    except UnicodeDecodeError:
        return False
    except json.JSONDecodeError as exc:
        return None if _ends_early(exc.doc, exc) else False
    return True
