"""Bytes that are not UTF-8 text, said for what they are (pure).

An import file or request body is UTF-8 JSON text. What arrives instead is, in practice, one of
three things, and each needs its own answer:

- a compressed file or archive (`results.json.gz`, a zip of a run folder): known by its magic
  bytes, reported once with what to do ("decompress it first");
- some other binary file (NUL bytes, or mostly bytes that decode as nothing): reported once,
  rather than once per newline-separated chunk of noise;
- text with a stray byte in another encoding (Latin-1 `é` in a problem statement): reported on
  its line, with the byte, its offset and the JSON field it is in when the line still parses;
  a patch or test output that really is not UTF-8 has a base64 field, and only then is that
  field suggested.
"""

from __future__ import annotations

import json

from grading.domain.wording import string_path

# How much of the start decides whether it is binary.
HEAD_BYTES = 8192
# Magic numbers of what people compress or pack JSON into.
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (zstd -d)"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (xz -d)"),
    (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)"),
    (b"PK\x03\x04", "a zip archive", "extract the JSON file from it first (unzip)"),
    (b"PK\x05\x06", "a zip archive (empty)", "extract the JSON file from it first (unzip)"),
)
# Of the first HEAD_BYTES, the share that may fail to decode before it is binary, not text.
_BINARY_SHARE = 0.3
# Fields whose bytes may legitimately be any bytes, and the field that carries them as base64.
_BASE64_FIELDS = {"patch": "patch_base64", "test_output": "test_output_base64"}


def binary_problem(head: bytes) -> str | None:
    """What is wrong with input starting with `head`, when it is not text at all (else None)."""
    data = head.removeprefix(b"\xef\xbb\xbf")
    for magic, what, fix in _MAGIC:
        if data.startswith(magic):
            return f"{what} data, not JSON text; {fix}"
    if not data:
        return None
    nul = data.find(b"\0")
    if nul >= 0:
        return (
            f"binary data, not JSON text: it holds NUL bytes (the first at byte {nul}); "
            "send the JSON file itself"
        )
    undecodable = data.decode("utf-8", "replace").count("\ufffd")
    if undecodable > _BINARY_SHARE * len(data):
        return (
            f"binary data, not JSON text: {undecodable} of its first {len(data)} bytes are not "
            "UTF-8; send the JSON file itself"
        )
    return None


def _stray(text: str) -> bool:
    """A byte decoded by `surrogateescape` (U+DC80..U+DCFF) is in the text."""
    return any("\udc80" <= c <= "\udcff" for c in text)


def stray_byte_field(line: bytes) -> str | None:
    """The JSON path (`$.task.problem_statement`) of the value a non-UTF-8 byte of this line (one
    JSON value) is in, when the line parses with the byte kept aside; else None."""
    try:
        value = json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    return string_path(value, "$", _stray)


def utf8_message(data: bytes, exc: UnicodeDecodeError, field: str | None, *, unit: str) -> str:
    """Why `data` (a line, or a whole document: `unit`) is refused: the byte, where it is (the
    problem carries `field`), and what to do: the base64 field when it is in a patch or test
    output, else save as UTF-8."""
    byte = data[exc.start]
    latin = bytes([byte]).decode("cp1252", "replace")
    guess = (
        f" (0x{byte:02x} is {json.dumps(latin, ensure_ascii=False)} in Latin-1/Windows-1252)"
        if byte >= 0xA0 and latin != "\ufffd"
        else ""
    )
    message = f"not UTF-8: byte 0x{byte:02x} at byte {exc.start} of the {unit}{guess}"
    leaf = field.rsplit(".", 1)[-1] if field else ""
    if leaf in _BASE64_FIELDS:
        return f"{message}; send bytes that are not UTF-8 as {_BASE64_FIELDS[leaf]}"
    return f"{message}; save the file as UTF-8"
