"""`manage.py demo` makes a first run alive, and `demo --study` adds a synthetic study that gives
every dashboard chart, the calibration and the λ-cap report data, labelled synthetic in the
pages and the exports (issue 17). Real database, the real command, the pages through the
Django test client."""

from __future__ import annotations

import io
import json
import time
import zipfile

import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from grading.models import GraderRun, Group, GroupAdvantages, Run
from grading.selectors.synthetic import synthetic_group_count
from grading.services.demo import SAMPLE_GROUP, SAMPLE_RUN
from review.models import Assignment, Campaign, FixRequest, Label, StatsSnapshot
from review.models.reviewing import CRITERIA
from review.selectors.reviewing import reviewer_queue
from review.services.demo import (
    DEMO_CAMPAIGN,
    GRADERS,
    REVIEWERS,
    STUDY_CAMPAIGN,
    STUDY_RUN,
    STUDY_STEPS,
    STUDY_TASKS,
    study_build,
)
from review.services.queue import assignment_next
from review.services.reviewing import label_save, review_submit
from tests.analytics.conftest import run_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.GAGAR_REPO_DIR = tmp_path / "repos"
    return tmp_path


def demo(*args: str) -> str:
    out = io.StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def study(var_dir):
    """The first run plus the study, as `./dev up` then `manage.py demo --study` leave them."""
    started = time.monotonic()
    out = demo("--study")
    print(f"demo --study: {time.monotonic() - started:.1f} s")
    return out


def test_it_opens_a_campaign_for_the_demo_reviewers_and_stores_the_sample_advantages(var_dir):
    out = demo()
    assert "Sample data: 1 group created" in out
    assert "groups created" not in out
    assert "manage.py demo --study" in out  # the hint
    # The passwords are where GAGAR_VAR_DIR says, and the command says so.
    assert f"Accounts (kept in {var_dir / 'demo-accounts.json'}):" in out
    assert (var_dir / "demo-accounts.json").is_file()
    group = Group.objects.get(external_id=SAMPLE_GROUP)
    assert GraderRun.objects.get(group=group).status == GraderRun.Status.SUCCEEDED
    advantages = GroupAdvantages.objects.get(group=group)
    assert not advantages.fallback and advantages.lambda_raw is not None
    for username in ("reviewer1", "reviewer2"):
        (row,) = reviewer_queue(reviewer=User.objects.get(username=username))
        assert row.campaign.name == DEMO_CAMPAIGN and row.open_slots == 1
    again = demo()
    assert "0 groups created, 1 unchanged" in again
    assert Campaign.objects.filter(name=DEMO_CAMPAIGN).count() == 1
    assert GraderRun.objects.filter(group=group).count() == 1


def check_the_study_is_complete_and_synthetic() -> None:
    groups = Group.objects.filter(step__run__name=STUDY_RUN)
    assert groups.count() == STUDY_TASKS * len(STUDY_STEPS)
    assert synthetic_group_count() == groups.count()
    assert Run.objects.get(name=STUDY_RUN).metadata["synthetic"] is True
    # Two configurations grade every group; every verdict has grades.
    for rater, _ in GRADERS:
        runs = GraderRun.objects.filter(config__name=rater.name, status="succeeded")
        assert runs.count() == groups.count()
        assert not runs.filter(grades__isnull=True).exists()
    # Three reviewers who cannot log in, with realistic disagreement and costs.
    submitted = Assignment.objects.filter(campaign__name=STUDY_CAMPAIGN, status="submitted")
    reviewers = {a.reviewer.username: a.reviewer for a in submitted.select_related("reviewer")}
    assert set(reviewers) == {r.name for r in REVIEWERS}
    assert not any(u.is_active or u.has_usable_password() for u in reviewers.values())
    labels = Label.objects.filter(candidate__assignment__in=submitted)
    assert set(labels.values_list("tier", flat=True)) == {"t1", "t2", "t3", "exploit"}
    assert labels.exclude(prefilled=[]).exists() and labels.filter(prefilled=[]).exists()
    assert not submitted.filter(active_ms=0).exists()
    fixes = FixRequest.objects.filter(candidate__assignment__in=submitted)
    assert fixes.filter(severity="blocking").exists() and fixes.filter(active_ms_before__gt=0)
    # Submission's rule holds: every "not mergeable" has a blocking fix request.
    for label in labels.filter(mergeability="not_mergeable").select_related("candidate"):
        assert label.candidate.fix_requests.filter(severity="blocking").exists()
    # Advantages for both configurations in every step, the cap binding somewhere.
    stored = GroupAdvantages.objects.filter(group__in=groups)
    assert stored.count() == 2 * groups.count()
    assert stored.filter(capped=True).exists() and stored.filter(capped=False).exists()
    # The demo reviewers can take part too.
    assert Campaign.objects.get(name=STUDY_CAMPAIGN).reviewers.filter(username="reviewer1")
    # Self-consistency sentinels, as the queue serves them: every synthetic reviewer has some,
    # later than their first review of the group, none keeping a candidate's letter.
    campaign = Campaign.objects.get(name=STUDY_CAMPAIGN)
    assert campaign.sentinel_rate > 0
    repeats = submitted.filter(sentinel=True)
    assert {a.reviewer.username for a in repeats} == {r.name for r in REVIEWERS}
    for again in repeats:
        first = submitted.get(group=again.group, reviewer=again.reviewer, sentinel=False)
        assert again.started_at > first.submitted_at
        before = dict(first.candidates.values_list("attempt_id", "alias"))
        after = dict(again.candidates.values_list("attempt_id", "alias"))
        assert before.keys() == after.keys()
        if len(before) > 1:
            assert all(before[k] != after[k] for k in before)
    n_firsts = submitted.filter(sentinel=False).count()
    assert 0 < repeats.count() <= 0.25 * n_firsts


def check_the_advantages_and_package_manifests_count_synthetic_groups(tmp_path) -> None:
    from grading.models import GraderConfig
    from grading.services.advantages import DEFAULT_PARAMS
    from grading.services.exports import advantages_export
    from review.analytics.package import package_export

    n = STUDY_TASKS * len(STUDY_STEPS)
    config = GraderConfig.objects.get(name=GRADERS[0][0].name)
    result = advantages_export(
        run_name=STUDY_RUN,
        step=None,
        fmt="jsonl",
        out_dir=tmp_path / "adv",
        config=config,
        params=DEFAULT_PARAMS,
    )
    assert result.manifest["synthetic"]["groups"] == n
    sample = advantages_export(
        run_name="sample-run",
        step=None,
        fmt="jsonl",
        out_dir=tmp_path / "sample",
        config=config,
        params=DEFAULT_PARAMS,
    )
    assert sample.manifest["synthetic"] == {"groups": 0, "note": None}
    package = package_export(fmt="jsonl", out_dir=tmp_path / "package")
    assert package.manifest["synthetic"]["groups"] == n


def check_a_demo_reviewer_can_review_a_synthetic_group_and_see_its_verdict(client) -> None:
    reviewer = User.objects.get(username="reviewer1")
    campaign = Campaign.objects.get(name=STUDY_CAMPAIGN)
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None
    client.force_login(reviewer)
    first = client.get(f"/review/a/{assignment.pk}/")
    assert first.status_code == 200
    # The review and compare pages of a synthetic group say so; the sample group's do not.
    assert ">synthetic study</span>" in first.content.decode()
    compare = client.get(f"/review/a/{assignment.pk}/compare").content.decode()
    assert ">synthetic study</span>" in compare
    sample = assignment_next(campaign=Campaign.objects.get(name=DEMO_CAMPAIGN), reviewer=reviewer)
    assert sample is not None
    assert "synthetic-badge" not in client.get(f"/review/a/{sample.pk}/").content.decode()
    for candidate in assignment.candidates.all():
        label_save(
            candidate=candidate,
            values={
                "tier": "t1",
                "rank_in_tier": candidate.position + 1,
                "mergeability": "as_is",
                **dict.fromkeys(CRITERIA, 4),
            },
        )
    review_submit(assignment=assignment)
    page = client.get(f"/review/a/{assignment.pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Grader&#x27;s verdict" in body or "Grader's verdict" in body
    assert "Synthetic verdict" in body


def check_it_is_built_once_and_removed_cleanly() -> None:
    counts = (Group.objects.count(), Label.objects.count(), GraderRun.objects.count())
    assert "already present" in demo("--study")
    assert (Group.objects.count(), Label.objects.count(), GraderRun.objects.count()) == counts
    assert not study_build().created

    assert "removed" in demo("--remove-study")
    assert synthetic_group_count() == 0
    assert Group.objects.filter(external_id=SAMPLE_GROUP).exists()
    assert not Campaign.objects.filter(name=STUDY_CAMPAIGN).exists()


def check_every_dashboard_chart_has_data_and_the_pages_say_synthetic(client) -> None:
    admin = User.objects.get(username="admin")
    client.force_login(admin)
    client.get("/dashboards/")
    # Fewer bootstrap resamples than the page's 2000, for the suite's time (same code path).
    snapshot = StatsSnapshot.objects.get(status=StatsSnapshot.Status.PENDING)
    snapshot.params = {**snapshot.params, "n_resamples": 200}
    snapshot.save(update_fields=["params"])
    assert run_worker() == 1
    response = client.get("/dashboards/")
    body = response.content.decode()
    payload = response.context["payload"]
    assert "synthetic-badge" in body and "data-synthetic-groups" in body
    configs = {c["name"]: c for c in payload["per_config"]}
    assert {r.name for r, _ in GRADERS} <= set(configs)
    for rater, _ in GRADERS:
        stats = configs[rater.name]["stats"]
        assert stats["kappa"]["estimate"] is not None
        assert stats["concordance"]["estimate"] is not None
    assert payload["headline"]["alpha_humans"]["estimate"] is not None
    assert sum(map(sum, payload["confusion"]["matrix_with_exploit"])) > 0
    assert len([s for s in payload["by_step"] if s["n_reviewed"]]) == len(STUDY_STEPS)
    assert payload["calibration"]["curve"] and payload["calibration"]["empirical"]
    assert any(c["n_labelled"] for c in payload["calibration"]["per_config"])
    assert {t["tier"] for t in payload["cost"]} == {"T1", "T2", "T3", "exploit"}
    assert any(t["first_issue_median_s"] for t in payload["cost"])
    assert payload["stability"]
    lam = [r for r in payload["lambda_cap"] if r["run"] == STUDY_RUN]
    assert len(lam) == len(STUDY_STEPS) and any(r["capped_groups"] for r in lam)
    assert any(c["n_prefilled"] for c in payload["criteria"])
    assert all(c["n"] for c in payload["criteria"])
    assert "No stored advantages" not in body
    # The self-consistency table has a row per synthetic reviewer and one pooled, with flips.
    consistency = {r["reviewer"]: r for r in payload["sentinels"]}
    assert set(consistency) == {r.name for r in REVIEWERS} | {"all reviewers"}
    assert all(r["n_sentinels"] and r["flip_rate"] is not None for r in consistency.values())
    assert consistency["all reviewers"]["n_flips"] > 0
    assert consistency["all reviewers"]["rank_concordance"] is not None

    # The pickers mark the synthetic run and the configurations that graded its groups (the
    # values sent stay the names), not the sample's run or grader.
    sample_config = GraderRun.objects.get(group__external_id=SAMPLE_GROUP).config.name
    marked = f'<option value="{STUDY_RUN}">{STUDY_RUN} (synthetic)</option>'
    export = client.get("/dashboards/export").content.decode()
    assert marked in body and marked in export
    assert f'<option value="{SAMPLE_RUN}">{SAMPLE_RUN}</option>' in body
    for rater, _ in GRADERS:
        assert f">{rater.name} (synthetic)</option>" in body
    assert f">{sample_config}</option>" in body
    audit = client.get("/dashboards/audit").content.decode()
    assert f"grader {GRADERS[0][0].name} (weighted score) (synthetic)</option>" in audit
    assert f"grader {sample_config} (weighted score)</option>" in audit
    # So do the admin's lists of grader runs and of runs.
    for url in ("/admin/grading/graderrun/", "/admin/grading/run/"):
        listed = client.get(url).content.decode()
        assert "column-synthetic" in listed and 'alt="True"' in listed and 'alt="False"' in listed
    for url in ("/review/staff/", "/dashboards/export", "/dashboards/gate"):
        assert "synthetic-badge" in client.get(url).content.decode(), url
    # The gate badges the synthetic configurations' rows, not the sample's grader.
    gate = client.get("/dashboards/gate").content.decode()
    for rater, _ in GRADERS:
        row = gate.split(f'<tr data-config="{rater.name}">', 1)[1].split("</tr>", 1)[0]
        assert "synthetic-badge" in row, row
    row = gate.split(f'<tr data-config="{sample_config}">', 1)[1].split("</tr>", 1)[0]
    assert "synthetic-badge" not in row, row
    # The audit page says so when a side is synthetic, and only then.
    audit = client.get(f"/dashboards/audit?a={STUDY_RUN}@1&b={STUDY_RUN}@4").content.decode()
    assert "synthetic-badge" in audit and "data-synthetic-sides" in audit
    assert f"{STUDY_RUN} (synthetic)</option>" in audit
    assert "synthetic-badge" not in client.get("/dashboards/audit").content.decode()
    campaign = Campaign.objects.get(name=STUDY_CAMPAIGN)
    detail = client.get(f"/review/staff/{campaign.pk}/").content.decode()
    assert "synthetic-badge" in detail
    demo_campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    assert (
        "synthetic-badge" not in client.get(f"/review/staff/{demo_campaign.pk}/").content.decode()
    )
    client.force_login(User.objects.get(username="reviewer1"))
    queue = client.get("/review/").content.decode()
    assert queue.count("synthetic-badge") == 1, queue  # the study, not the sample's campaign


def check_the_labels_export_says_which_rows_are_synthetic(client) -> None:
    client.force_login(User.objects.get(username="admin"))
    response = client.get("/dashboards/export/labels.zip?format=jsonl")
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        rows = pd.read_json(zf.open("labels.jsonl"), lines=True)
    n = STUDY_TASKS * len(STUDY_STEPS)
    assert manifest["synthetic"]["groups"] == n and "demo --study" in manifest["synthetic"]["note"]
    study_rows = rows[rows["run"] == STUDY_RUN]
    assert study_rows["synthetic"].all() and not rows[rows["run"] != STUDY_RUN]["synthetic"].any()
    assert study_rows["calibrated_tier"].notna().any()
    humans = [h for hs in study_rows["human_tiers"] for h in hs]
    assert any(h["rubric_prefilled"] for h in humans) and any(
        not h["rubric_prefilled"] for h in humans
    )


def test_the_study_gives_every_chart_data_labelled_synthetic_and_is_built_once(
    study, client, enqueued, tmp_path
):
    assert "synthetic study: 20 groups" in study
    check_the_study_is_complete_and_synthetic()
    check_every_dashboard_chart_has_data_and_the_pages_say_synthetic(client)
    check_the_labels_export_says_which_rows_are_synthetic(client)
    check_the_advantages_and_package_manifests_count_synthetic_groups(tmp_path)
    check_a_demo_reviewer_can_review_a_synthetic_group_and_see_its_verdict(client)
    check_it_is_built_once_and_removed_cleanly()
