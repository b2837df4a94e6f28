"""The quick start's sample data: the project's own repository and group, plus demo accounts."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

from grading.domain.bundle import group_from_object
from grading.models import GraderConfig, GraderRun, Group
from grading.sample.build import build_repo, load_committed_group
from grading.services.advantages import group_advantages_refresh
from grading.services.grader_runs import (
    grader_config_default,
    grader_run_execute,
    grader_runs_request,
)
from grading.services.imports import ImportReport, groups_import

DEMO_USERS = (("admin", True), ("reviewer1", False), ("reviewer2", False))


@dataclass(frozen=True)
class DemoAccount:
    username: str
    password: str
    is_staff: bool


def sample_repo_path() -> Path:
    return Path(settings.GAGAR_REPO_DIR) / "humanize-lite"


SAMPLE_GROUP = "sample-humanize-lite-1024"
SAMPLE_RUN = "sample-run"
# Backends that need no model endpoint: a run takes seconds, so the demo grades in-process.
OFFLINE_BACKENDS = (GraderConfig.Backend.ANALYSIS, GraderConfig.Backend.HEURISTIC)


@dataclass(frozen=True)
class SampleGrading:
    config: str
    status: str  # the grader run's status
    advantages_stored: bool
    on_worker: bool  # left to the worker (a model endpoint is configured)

    def summary(self) -> str:
        if self.on_worker:
            return (
                f"sent to the worker ({self.config}); its advantages are computed on the first "
                "fetch (training API or export)"
            )
        stored = "advantages stored" if self.advantages_stored else "no advantages stored"
        return f"graded by {self.config} ({self.status}), {stored}"


def sample_load(*, grade: bool = True) -> ImportReport:
    """Build the sample git repository (once) and import the sample group (a no-op when present).

    With `grade`, the sample group is also sent to the grader with the default configuration
    (the analysis grader unless an endpoint is configured); the worker of `./dev up` grades it.
    """
    repo = sample_repo_path()
    if not (repo / ".git").is_dir():
        sample_repo_build(repo)
    group = load_committed_group()
    group["task"]["repo_url"] = str(repo)
    report = groups_import(records=[group_from_object(group, source="sample")])
    if grade:
        groups = Group.objects.filter(pk__in=[r.group_id for r in report.results])
        grader_runs_request(groups=groups, config=grader_config_default())
    return report


def sample_repo_build(repo: Path) -> None:
    """Build the repository beside `repo`, then rename it into place: another process (a test
    worker, the server and the worker of `./dev up`) never sees a half-built repository whose
    `.git` exists before its commit does."""
    repo.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{repo.name}-", dir=repo.parent))
    try:
        build_repo(scratch)
        try:
            scratch.rename(repo)
        except OSError:
            if not (repo / ".git").is_dir():  # not lost to a concurrent build: a real error
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sample_grade() -> SampleGrading:
    """Grade the sample group now with the default configuration when it needs no endpoint
    (the offline graders take seconds), then store its advantages, so a first run's λ-cap
    report and reveal have data before the worker starts. With a model endpoint configured
    the run is left to the worker. A finished run is not graded again."""
    config = grader_config_default()
    group = Group.objects.get(external_id=SAMPLE_GROUP)
    if config.backend not in OFFLINE_BACKENDS:
        grader_runs_request(groups=[group], config=config)
        return SampleGrading(config.name, "pending", False, True)
    (run,) = grader_runs_request(groups=[group], config=config, enqueue=False)
    if run.status in (GraderRun.Status.PENDING, GraderRun.Status.RUNNING):
        grader_run_execute(run_id=run.pk, worker="demo")
        run.refresh_from_db()
    group_advantages_refresh(group_ids=[group.pk], config=config)
    stored = group.advantages.filter(config=config, fallback=False).exists()
    return SampleGrading(config.name, run.status, stored, False)


def demo_accounts_path() -> Path:
    """Where the demo accounts' passwords are kept: GAGAR_VAR_DIR (var/ by default)."""
    return Path(settings.VAR_DIR) / "demo-accounts.json"


def demo_accounts_ensure() -> list[DemoAccount]:
    """Create the demo accounts once; their passwords live in GAGAR_VAR_DIR so they survive
    restarts."""
    store = demo_accounts_path()
    known: dict[str, str] = json.loads(store.read_text()) if store.exists() else {}
    model = get_user_model()
    accounts = []
    for username, is_staff in DEMO_USERS:
        password = known.get(username) or secrets.token_urlsafe(9)
        user, created = model.objects.get_or_create(username=username)
        if created or not user.check_password(password):
            user.set_password(password)
        user.is_staff = is_staff
        user.is_superuser = is_staff
        user.save()
        known[username] = password
        accounts.append(DemoAccount(username, password, is_staff))
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(known))
    store.chmod(0o600)
    return accounts
