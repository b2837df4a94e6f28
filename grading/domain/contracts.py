"""Data contracts of the exports: a table is described once, as an Arrow schema whose fields
carry their description and allowed values in their metadata, and everything a reader needs is
derived from it — the JSON Schema of one row, the Hugging Face `datasets` features of a dataset
card (so JSON Lines columns keep their types even when every value is null) and the card itself.

Pure: no Django. The API's serializers are derived from the same schemas (grading/api/schemas.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import yaml

Kind = Literal["int", "float", "str", "bool"]
_ARROW: dict[Kind, pa.DataType] = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
}
_DOC = b"description"
_ENUM = b"enum"


@dataclass(frozen=True)
class Column:
    """One flat column: its name, type, whether null is allowed, what it means."""

    name: str
    kind: Kind
    nullable: bool = False
    doc: str = ""
    choices: tuple[str, ...] = ()

    def field(self) -> pa.Field:
        return described(self.name, _ARROW[self.kind], self.doc, self.nullable, self.choices)


def described(
    name: str,
    type_: pa.DataType,
    doc: str = "",
    nullable: bool = False,
    choices: Sequence[str] = (),
) -> pa.Field:
    """An Arrow field with its description (and allowed values) in the metadata."""
    meta = {_DOC: doc.encode()}
    if choices:
        meta[_ENUM] = json.dumps(list(choices)).encode()
    return pa.field(name, type_, nullable=nullable, metadata=meta)


def struct(*fields: pa.Field) -> pa.StructType:
    return pa.struct(list(fields))


def schema_of(columns: Iterable[Column]) -> pa.Schema:
    return pa.schema([c.field() for c in columns])


def as_csv(schema: pa.Schema) -> pa.Schema:
    """The schema of a CSV export: nested columns are JSON text there (CSV has no nesting)."""
    return pa.schema(
        [f.with_type(pa.string()) if pa.types.is_nested(f.type) else f for f in schema]
    )


def field_doc(f: pa.Field) -> str:
    doc: bytes = (f.metadata or {}).get(_DOC, b"")  # pyarrow's metadata is untyped
    return doc.decode()


def field_choices(f: pa.Field) -> list[str]:
    raw = (f.metadata or {}).get(_ENUM)
    return list(json.loads(raw)) if raw else []


# JSON Schema --------------------------------------------------------------------------------


def _json_type(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_integer(t):
        return {"type": "integer"}
    if pa.types.is_floating(t):
        return {"type": "number"}
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return {"type": "string"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _json_field(t.value_field)}
    if pa.types.is_struct(t):
        return _json_object([t.field(i) for i in range(t.num_fields)])
    raise TypeError(f"no JSON Schema type for Arrow type {t}")


def _json_field(f: pa.Field) -> dict[str, Any]:
    out = _json_type(f.type)
    if f.nullable:
        out["type"] = [out["type"], "null"]
    if doc := field_doc(f):
        out["description"] = doc
    if choices := field_choices(f):
        out["enum"] = [*choices, None] if f.nullable else choices
    return out


def _json_object(fields: Sequence[pa.Field]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [f.name for f in fields],
        "additionalProperties": False,
        "properties": {f.name: _json_field(f) for f in fields},
    }


def json_schema(schema: pa.Schema, *, id_: str, title: str, description: str) -> dict[str, Any]:
    """The JSON Schema (2020-12) of one row: every column present, nulls only where allowed."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": id_,
        "title": title,
        "description": description,
        **_json_object(list(schema)),
    }


# Hugging Face dataset card -----------------------------------------------------------------


def _hf_inner(t: pa.DataType) -> str | list[dict[str, Any]] | dict[str, Any]:
    if pa.types.is_struct(t):
        return [_hf_field(t.field(i)) for i in range(t.num_fields)]
    if pa.types.is_list(t):
        return {"list": _hf_inner(t.value_type)}
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return str(t)
    raise TypeError(f"no datasets feature for Arrow type {t}")


def _hf_field(f: pa.Field) -> dict[str, Any]:
    # The card's YAML form of datasets.Features: `dtype` for a value, `list` / `struct` nested.
    t = f.type
    if pa.types.is_struct(t):
        return {"name": f.name, "struct": _hf_inner(t)}
    if pa.types.is_list(t):
        return {"name": f.name, "list": _hf_inner(t.value_type)}
    return {"name": f.name, "dtype": _hf_inner(t)}


def hf_features(schema: pa.Schema) -> list[dict[str, Any]]:
    """`dataset_info.features` of a dataset card, equal to `Features.from_arrow_schema`."""
    return [_hf_field(f) for f in schema]


@dataclass(frozen=True)
class CardConfig:
    """One table of an export: a `datasets` configuration with one `train` split."""

    name: str
    path: str
    schema: pa.Schema
    default: bool = False


def dataset_card(
    *,
    pretty_name: str,
    configs: Sequence[CardConfig],
    body: str,
    license_: str = "other",
    tags: Sequence[str] = (),
) -> str:
    """README.md of a Hugging Face dataset: YAML metadata (configs, features, licence) and a
    Markdown body. `datasets.load_dataset(directory)` reads the features from it."""
    meta: dict[str, Any] = {
        "pretty_name": pretty_name,
        "license": license_,
        "tags": list(tags),
        "configs": [
            {
                "config_name": c.name,
                **({"default": True} if c.default else {}),
                "data_files": [{"split": "train", "path": c.path}],
            }
            for c in configs
        ],
        "dataset_info": [
            {"config_name": c.name, "features": hf_features(c.schema)} for c in configs
        ],
    }
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{head}---\n\n{body.strip()}\n"


def columns_table(schema: pa.Schema) -> str:
    """A Markdown table of the top-level columns, for a card's body."""
    lines = ["| column | type | null | meaning |", "| --- | --- | --- | --- |"]
    for f in schema:
        doc = field_doc(f).replace("|", "\\|")
        lines.append(f"| `{f.name}` | {f.type} | {'yes' if f.nullable else 'no'} | {doc} |")
    return "\n".join(lines)
