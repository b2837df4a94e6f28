import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from grading.models import GroupAdvantages
from grading.services.advantages import AdvantageParams
from grading.services.exports import ExportInvariantError, advantages_export
from tests.training.builders import config, expected, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)}


@pytest.fixture
def run_data():
    cfg = config()
    groups = import_groups(*(step_group(f"t-{i}", step=i % 2) for i in range(5)))
    for g in groups[:4]:
        grade(g, cfg, TIERS)
    return cfg, groups


def read(path):
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pandas()
    if path.suffix == ".jsonl":
        return pd.read_json(path, lines=True)
    return pd.read_csv(path)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_exports_open_with_pandas_and_match_the_pure_module(run_data, tmp_path, fmt):
    cfg, groups = run_data
    result = advantages_export(
        run_name="run-1",
        step=None,
        fmt=fmt,
        out_dir=tmp_path,
        config=cfg,
        params=AdvantageParams(),
        batch_groups=2,
    )
    attempts = read(tmp_path / f"advantages_attempts.{fmt}")
    per_group = read(tmp_path / f"advantages_groups.{fmt}")
    assert len(attempts) == 5 * 8 and len(per_group) == 5
    for g in groups:
        rows = attempts[attempts.group_db_id == g.pk].sort_values("attempt_index")
        graded = g != groups[4]
        grades = (
            {a.pk: TIERS[a.external_id] for a in g.attempts.all() if a.external_id in TIERS}
            if graded
            else None
        )
        _, want = expected(g, grades)
        assert rows.adv_gagar.tolist() == pytest.approx(
            [w.adv_gagar for w in want.attempts], abs=1e-12
        )
        assert rows.coefficient.tolist() == [w.coefficient for w in want.attempts]
        head = per_group[per_group.group_db_id == g.pk].iloc[0]
        assert bool(head.fallback) == (not graded)
        assert bool(head.capped) == want.capped
        assert abs(rows[rows.included].adv_gagar.sum()) < 1e-9
    # reward_equivalent minus the group mean reproduces A' (for mean-only trainers).
    valid = attempts[attempts.included]
    assert (valid.reward_equivalent - valid.mean_reward).tolist() == pytest.approx(
        valid.adv_gagar.tolist(), abs=1e-12
    )
    assert attempts[~attempts.included].adv_gagar.eq(0).all()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["schema"] == "gagar.v2" and manifest["counts"]["groups"] == 5
    assert manifest["counts"]["fallback_groups"] == 1 and manifest["filters"]["step"] is None
    assert manifest["configurations"][0]["grader_config"] == cfg.name
    cap = read(tmp_path / f"lambda_cap.{fmt}")
    assert sorted(cap.step.tolist()) == [0, 1] and cap.capped_groups.sum() == 4
    assert result.counts["attempts"] == 40


def test_a_step_filter_exports_only_that_step(run_data, tmp_path):
    cfg, _ = run_data
    advantages_export(
        run_name="run-1",
        step=1,
        fmt="parquet",
        out_dir=tmp_path,
        config=cfg,
        params=AdvantageParams(),
    )
    assert set(read(tmp_path / "advantages_groups.parquet").step) == {1}


def test_an_export_that_would_break_an_invariant_fails_and_leaves_no_files(run_data, tmp_path):
    cfg, groups = run_data
    params = AdvantageParams()
    advantages_export(
        run_name="run-1", step=None, fmt="csv", out_dir=tmp_path / "ok", config=cfg, params=params
    )
    # Corrupt one stored group: a shifted advantage no longer sums to 0.
    ga = GroupAdvantages.objects.get(group=groups[0], config=cfg)
    ga.attempts[0]["adv_gagar"] += 0.1
    ga.save()
    with pytest.raises(ExportInvariantError, match="Σ A'"):
        advantages_export(
            run_name="run-1",
            step=None,
            fmt="csv",
            out_dir=tmp_path / "bad",
            config=cfg,
            params=params,
        )
    assert not any((tmp_path / "bad").iterdir())


def test_the_command_writes_every_format(run_data, tmp_path, capsys):
    call_command(
        "export_advantages",
        "--run",
        "run-1",
        "--format",
        "jsonl",
        "--out",
        str(tmp_path),
        "--config",
        "test-config",
        "--lambda-max",
        "none",
    )
    assert "40 attempt rows and 5 group rows" in capsys.readouterr().out
    groups = read(tmp_path / "advantages_groups.jsonl")
    assert groups.capped.sum() == 0 and groups.lambda_max.isna().all()
    with pytest.raises(CommandError, match="no groups"):
        call_command("export_advantages", "--run", "nope", "--out", str(tmp_path))
