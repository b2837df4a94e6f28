import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.models import GraderRun, GroupAdvantages
from grading.selectors.training import advantages_for_groups, attempt_rows, lambda_cap_report
from grading.services.advantages import AdvantageParams, group_advantages_refresh
from tests.training.builders import config, expected, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (1, 2), "p4": (2, 1)}
# λ_raw = 4 / (1 + 3·0.2) = 2.5: the default cap of 1.5 binds.
CAPPED = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (3, 1)}


def stored(group, cfg, params=None):
    params = params or AdvantageParams()
    return GroupAdvantages.objects.get(group=group, config=cfg, params_hash=params.key)


def test_it_stores_the_pure_modules_advantages_for_the_latest_verdict():
    (g,) = import_groups(step_group("t-1"))
    cfg = config()
    run = grade(g, cfg, TIERS)
    assert group_advantages_refresh(group_ids=[g.pk], config=cfg) == 1
    ga = stored(g, cfg)
    attempts, want = expected(
        g, {a.pk: TIERS[a.external_id] for a in g.attempts.all() if a.external_id in TIERS}
    )
    assert not ga.fallback and ga.grader_run_id == run.pk
    assert ga.lambda_raw == pytest.approx(want.lambda_raw, abs=1e-12)
    assert ga.capped == want.capped and ga.mean_shift == pytest.approx(want.mean_shift, abs=1e-12)
    for row, a, w in zip(ga.attempts, attempts, want.attempts, strict=True):
        assert row["attempt_external_id"] == a.external_id
        assert row["adv_gagar"] == pytest.approx(w.adv_gagar, abs=1e-12)
        assert row["coefficient"] == w.coefficient
    by_ext = {r["attempt_external_id"]: r for r in ga.attempts}
    assert by_ext["x1"]["reward_used"] == 0.0 and by_ext["x1"]["adv_gagar"] < 0
    assert by_ext["i1"]["included"] is False and by_ext["i1"]["adv_gagar"] == 0.0
    assert by_ext["p1"]["tier"] == 1 and by_ext["p2"]["coefficient"] == 0.2


def test_a_second_refresh_writes_nothing_and_a_newer_verdict_recomputes():
    (g,) = import_groups(step_group("t-1"))
    cfg = config()
    grade(g, cfg, TIERS)
    group_advantages_refresh(group_ids=[g.pk], config=cfg)
    assert group_advantages_refresh(group_ids=[g.pk], config=cfg) == 0
    newer = grade(g, cfg, {"p1": (3, 1), "p2": (1, 1), "p3": (3, 1), "p4": (3, 1)}, replica=1)
    assert group_advantages_refresh(group_ids=[g.pk], config=cfg) == 1
    ga = stored(g, cfg)
    assert ga.grader_run_id == newer.pk
    assert {r["attempt_external_id"]: r["tier"] for r in ga.attempts}["p2"] == 1
    assert GroupAdvantages.objects.count() == 1


@pytest.mark.parametrize(
    ("run_status", "reason"),
    [
        (None, "never_requested"),
        ("pending", "pending"),
        ("running", "pending"),
        ("failed", "failed"),
    ],
)
def test_without_a_verdict_it_falls_back_to_plain_grpo_with_the_reason(run_status, reason):
    (g,) = import_groups(step_group("t-1"))
    cfg = config()
    if run_status:
        GraderRun.objects.create(group=g, config=cfg, status=run_status)
    group_advantages_refresh(group_ids=[g.pk], config=cfg)
    ga = stored(g, cfg)
    _, want = expected(g, None)
    assert ga.fallback and ga.fallback_reason == reason and ga.grader_run_id is None
    assert [r["adv_gagar"] for r in ga.attempts] == pytest.approx(
        [a.adv_grpo for a in want.attempts]
    )
    assert all(r["coefficient"] == 1.0 for r in ga.attempts)


def test_a_verdict_missing_a_passer_is_refused_as_fallback():
    (g,) = import_groups(step_group("t-1"))
    cfg = config()
    run = grade(g, cfg, {"p1": (1, 1)})
    group_advantages_refresh(group_ids=[g.pk], config=cfg)
    ga = stored(g, cfg)
    assert ga.fallback and ga.fallback_reason == "invalid_verdict" and ga.grader_run_id == run.pk
    assert group_advantages_refresh(group_ids=[g.pk], config=cfg) == 0


def test_lambda_max_is_a_parameter_with_its_own_row():
    (g,) = import_groups(step_group("t-1"))
    cfg = config()
    grade(g, cfg, CAPPED)
    uncapped = AdvantageParams(lambda_max=None)
    group_advantages_refresh(group_ids=[g.pk], config=cfg)
    group_advantages_refresh(group_ids=[g.pk], config=cfg, params=uncapped)
    assert stored(g, cfg).capped and not stored(g, cfg, uncapped).capped
    assert stored(g, cfg, uncapped).lambda_applied == stored(g, cfg).lambda_raw


def test_the_cap_report_counts_bound_groups_per_step():
    groups = import_groups(*(step_group(f"t-{i}", step=i % 2) for i in range(4)))
    cfg = config()
    for g in groups[:3]:
        grade(g, cfg, CAPPED)
    group_advantages_refresh(group_ids=[g.pk for g in groups], config=cfg)
    report = {r["step"]: r for r in lambda_cap_report(run_name="run-1")}
    assert report[0]["groups"] == 2 and report[0]["capped_groups"] == 2
    assert report[1]["fallback_groups"] == 1 and report[1]["capped_groups"] == 1
    assert report[0]["capped_share"] == 1.0 and report[0]["lambda_max"] == 1.5
    assert report[0]["mean_shift_capped"] < 0


def test_the_fetch_is_one_query_whatever_the_number_of_groups():
    cfg = config()
    groups = import_groups(*(step_group(f"t-{i}") for i in range(6)))
    for g in groups:
        grade(g, cfg, TIERS)
    ids = [g.pk for g in groups]
    group_advantages_refresh(group_ids=ids, config=cfg)
    with CaptureQueriesContext(connection) as ctx:
        group_advantages_refresh(group_ids=ids, config=cfg)
        rows = [
            r
            for ga in advantages_for_groups(
                group_ids=ids, config=cfg, params_hash=AdvantageParams().key
            )
            for r in attempt_rows(ga)
        ]
    # grading states + stored keys (nothing stale) + the select_related fetch.
    assert len(ctx.captured_queries) == 3
    assert len(rows) == 6 * 8
