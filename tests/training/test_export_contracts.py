"""The exports' data contracts (`gagar.v2`): every export folder is a Hugging Face dataset whose
card declares the features, so JSON Lines columns keep their types when all values are null;
every row validates against the table's JSON Schema (checked in under docs/formats/); ids are
strings and one tier encoding (1–3 or null, plus `exploit`) holds in every export."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from grading.domain.contracts import hf_features
from grading.services.advantages import AdvantageParams
from grading.services.exports import ADVANTAGE_TABLES, advantages_export
from review.analytics.exports import LABEL_TABLES, labels_export
from review.analytics.label_refresh import labels_refresh
from review.analytics.package import PACKAGE_TABLES, package_export, report_as_struct
from tests.analytics.test_labels_and_exports import study3
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
FORMATS_DIR = Path(__file__).resolve().parents[2] / "docs" / "formats"
TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)}
VERSIONS = {
    ADVANTAGE_TABLES: "gagar.v2",
    LABEL_TABLES: "gagar.labels.v2",
    PACKAGE_TABLES: "gagar.package.v2",
}


@pytest.fixture
def hf(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    return datasets


def _export(tmp_path: Path, name: str, **params) -> Path:
    out = tmp_path / name
    advantages_export(
        run_name="run-1",
        step=None,
        fmt="jsonl",
        out_dir=out,
        config=config(),
        params=AdvantageParams(**params),
    )
    return out


def _card(folder: Path) -> dict:
    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_a_plain_and_a_normalize_std_jsonl_export_load_together(tmp_path, hf):
    cfg = config()
    groups = import_groups(step_group("t-0"), step_group("t-1"))
    grade(groups[0], cfg, TIERS)  # the other group falls back: verdict_id null everywhere
    plain = _export(tmp_path, "plain")
    normalized = _export(tmp_path, "norm", normalize_std=True)
    # In the plain export every reward_std is null: JSON alone cannot say it is a float.
    assert all(
        json.loads(line)["reward_std"] is None
        for line in (plain / "advantages_attempts.jsonl").read_text().splitlines()
    )
    a = hf.load_dataset(str(plain), split="train")
    b = hf.load_dataset(str(normalized), split="train")
    assert a.features["reward_std"] == hf.Value("float64") == b.features["reward_std"]
    assert a.features == b.features
    both = hf.concatenate_datasets([a, b])
    assert both.num_rows == 32
    # Groups imported without an id are keyed as the client keys them: <run>/<step>/<task>.
    assert {r["group_id"] for r in both} == {"run-1/0/t-0", "run-1/0/t-1"}
    # The same files through data_files= with the card's features, as a reader of many exports.
    features = hf.Features._from_yaml_list(_card(plain)["dataset_info"][0]["features"])
    many = hf.load_dataset(
        "json",
        data_files=[
            str(plain / "advantages_attempts.jsonl"),
            str(normalized / "advantages_attempts.jsonl"),
        ],
        features=features,
        split="train",
    )
    assert many.num_rows == 32 and many.features["verdict_id"] == hf.Value("string")
    # Other tables are configurations of the same dataset.
    cap = hf.load_dataset(str(plain), "lambda_cap", split="train")
    assert cap.features["capped_share"] == hf.Value("float64")


def test_ids_are_strings_and_database_ids_extra_columns(tmp_path):
    cfg = config()
    (g,) = import_groups(step_group("t-0"))
    grade(g, cfg, TIERS)
    out = tmp_path / "pq"
    advantages_export(
        run_name="run-1",
        step=None,
        fmt="parquet",
        out_dir=out,
        config=cfg,
        params=AdvantageParams(),
    )
    rows = pq.read_table(out / "advantages_attempts.parquet").to_pylist()
    assert {r["group_id"] for r in rows} == {g.external_id or "run-1/0/t-0"}
    assert {r["group_db_id"] for r in rows} == {g.pk}
    assert {r["attempt_id"] for r in rows} == {a.external_id for a in g.attempts.all()}
    assert {r["attempt_db_id"] for r in rows} == {a.pk for a in g.attempts.all()}
    by_id = {r["attempt_id"]: r for r in rows}
    assert by_id["x1"]["exploit"] is True and by_id["x1"]["tier"] is None
    assert by_id["p1"]["exploit"] is False and by_id["p1"]["tier"] == 1
    assert isinstance(by_id["p1"]["verdict_id"], str)


def _rows(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_every_row_of_every_export_validates_against_its_json_schema(tmp_path, fmt, hf):
    study3()
    labels_refresh()
    labels_export(fmt=fmt, out_dir=tmp_path / "labels")
    package_export(fmt=fmt, out_dir=tmp_path / "pkg", batch=5)
    cfg = config()
    (g,) = import_groups(step_group("t-0", run="run-x"))
    grade(g, cfg, TIERS)
    advantages_export(
        run_name="run-x",
        step=None,
        fmt=fmt,
        out_dir=tmp_path / "adv",
        config=cfg,
        params=AdvantageParams(),
    )
    for folder, tables in (
        (tmp_path / "labels", LABEL_TABLES),
        (tmp_path / "pkg", PACKAGE_TABLES),
        (tmp_path / "adv", ADVANTAGE_TABLES),
    ):
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["schema"] == VERSIONS[tables]
        card = _card(folder)
        for t in tables:
            schema = json.loads((folder / t.schema_file()).read_text())
            validator = jsonschema.Draft202012Validator(schema)
            rows = _rows(folder / t.file(fmt))
            if t.stem != "lambda_cap":
                assert rows, t.stem
            for row in rows:
                errors = [e.message for e in validator.iter_errors(row)]
                assert not errors, (t.stem, errors[:3])
            # The card's features are datasets' own reading of the Arrow schema.
            declared = next(c for c in card["dataset_info"] if c["config_name"] == t.stem)
            assert hf.Features._from_yaml_list(declared["features"]) == (
                hf.Features.from_arrow_schema(t.schema)
            )
            assert declared["features"] == hf_features(t.schema)


def test_one_tier_encoding_for_reviewers_exploit_labels(tmp_path):
    study = study3()
    labels_refresh()
    labels_export(fmt="parquet", out_dir=tmp_path / "labels")
    package_export(fmt="parquet", out_dir=tmp_path / "pkg")
    first = study.attempts[0][0]  # two of three reviewers said "exploit"
    labels = [
        r for r in _rows(tmp_path / "labels" / "labels.parquet") if r["attempt_db_id"] == first.pk
    ]
    humans = labels[0]["human_tiers"]
    assert sorted(((h["tier"], h["exploit"]) for h in humans), key=str) == [
        (1, False),
        (None, True),
        (None, True),
    ]
    assert labels[0]["consensus_tier"] is None and labels[0]["consensus_exploit"] is True
    assert {r["grader_tier"] for r in labels} <= {1, 2, 3}
    assert all(isinstance(r["grader_exploit_suspected"], bool) for r in labels)
    package = _rows(tmp_path / "pkg" / "attempts.parquet")
    exploit_reviews = [rv for r in package for rv in r["reviews"] if rv["exploit"]]
    assert exploit_reviews and all(rv["tier"] is None for rv in exploit_reviews)
    assert all(rv["tier"] in (1, 2, 3) for r in package for rv in r["reviews"] if not rv["exploit"])


def test_a_test_report_of_any_shape_keeps_everything():
    swebench = {
        "patch_is_None": False,
        "resolved": True,
        "tests_status": {
            "FAIL_TO_PASS": {"success": ["t_a"], "failure": []},
            "PASS_TO_PASS": {"success": ["t_b"], "failure": ["t_c"]},
            "ODD": {"success": []},
        },
    }
    got = report_as_struct(swebench)
    assert got["resolved"] is True
    assert got["tests_status"]["PASS_TO_PASS"] == {"success": ["t_b"], "failure": ["t_c"]}
    assert got["tests_status"]["FAIL_TO_FAIL"] is None
    assert json.loads(got["other"]) == {
        "patch_is_None": False,
        "tests_status": {"ODD": {"success": []}},
    }
    assert report_as_struct({}) == {"resolved": None, "tests_status": None, "other": None}
    assert json.loads(report_as_struct(["odd"])["other"]) == {"value": ["odd"]}


def test_the_published_json_schemas_are_the_ones_the_exports_write():
    """docs/formats/ holds each table's JSON Schema; GAGAR_WRITE_SCHEMAS=1 rewrites them."""
    for tables, version in VERSIONS.items():
        for t in tables:
            path = FORMATS_DIR / f"{version}.{t.stem}.schema.json"
            want = json.dumps(t.json_schema(version), indent=2, ensure_ascii=False) + "\n"
            if os.environ.get("GAGAR_WRITE_SCHEMAS") == "1":
                path.write_text(want, encoding="utf-8")
            assert path.read_text(encoding="utf-8") == want, f"{path.name} is out of date"


def test_csv_exports_declare_nested_columns_as_text(tmp_path, hf):
    study3()
    labels_refresh()
    labels_export(fmt="csv", out_dir=tmp_path / "labels")
    ds = hf.load_dataset(str(tmp_path / "labels"), split="train")
    assert ds.features["human_tiers"] == hf.Value("string")
    assert ds.features["consensus_tier"] == hf.Value("int64")
    frame = pd.read_csv(tmp_path / "labels" / "labels.csv")
    assert len(frame) == ds.num_rows
