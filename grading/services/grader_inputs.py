"""What a grader run needs besides the database: its group as plain inputs, a backend, a sandbox.

The pure loop (`grading.grader.loop`) knows nothing of Django; this module copies rows into its
dataclasses. Trajectories stay compressed in the database: the loop gets a reader per attempt and
pulls only the slices the grader asks for.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields

import httpx
from django.conf import settings

from grading.domain.candidates import distinct_patches
from grading.domain.repos import NO_COMMIT, SourceLookup
from grading.grader.backends.base import Backend
from grading.grader.backends.registry import (
    BackendConfigError,
    backend_from_config,
)
from grading.grader.context import DEFAULT_CONTEXT_TARGET, DEFAULT_CONTEXT_WINDOW, ContextWindow
from grading.grader.inputs import (
    Budget,
    CandidateInput,
    Event,
    GroupInput,
    Pricing,
    Rubric,
    TaskInput,
)
from grading.grader.sandbox.base import Sandbox, SandboxError
from grading.grader.sandbox.docker_sandbox import DockerSandbox
from grading.grader.sandbox.local import NOBODY, LocalSandbox, available_isolation
from grading.models import Attempt, GraderConfig, Group, Task, Trajectory
from grading.selectors.rollouts import group_identity_names, group_with_attempts, trajectory_events
from grading.services.repo_sources import task_source_lookup

logger = logging.getLogger(__name__)


def _trajectory_reader(trajectory: Trajectory) -> Callable[[int, int], Sequence[Event]]:
    def read(start: int, count: int) -> Sequence[Event]:
        return trajectory_events(trajectory=trajectory, start=start, count=count)

    return read


def _candidate(attempt: Attempt) -> CandidateInput:
    trajectory: Trajectory | None = getattr(attempt, "trajectory", None)
    tokens = None
    if attempt.tokens_in is not None or attempt.tokens_out is not None:
        tokens = (attempt.tokens_in or 0) + (attempt.tokens_out or 0)
    return CandidateInput(
        key=str(attempt.pk),
        patch=attempt.patch.text if attempt.patch is not None else "",
        passed=attempt.passed,
        status=attempt.status,
        test_output=attempt.test_output().decode("utf-8", errors="replace"),
        test_report=attempt.test_report or {},
        trajectory=_trajectory_reader(trajectory) if trajectory is not None else (),
        num_turns=attempt.num_turns,
        tokens=tokens,
        num_events=trajectory.event_count if trajectory is not None else 0,
    )


def candidate_attempts(attempts: Iterable[Attempt]) -> list[list[Attempt]]:
    """The grader's candidates: attempts with byte-identical patches (and the same test
    outcome) are one candidate; the first of each is the one shown, its grade goes to all."""
    return distinct_patches(
        attempts, lambda a: (a.patch_id, a.passed) if a.patch_id is not None else None
    )


def _prompt_source_note(task: Task, lookup: SourceLookup) -> str:
    # What the grader is told: the kind of absence, not the grading host's folders.
    if lookup.status == NO_COMMIT:
        return f"base commit {task.base_commit or '(none)'} not found in {task.repo}"
    return f"no local clone or mirror of {task.repo}"


def group_input(*, group_id: int) -> GroupInput:
    """The group as the loop sees it. Infra-failed attempts are left out of everything
    (method §4); identical patches are one candidate; `task.repo_path` is None (and
    `task.source_note` says why) when no source was found."""
    group: Group = group_with_attempts(group_id=group_id)
    task = group.task
    attempts = [a for a in group.attempts.all() if a.status != Attempt.Status.INFRA_FAILED]
    lookup = task_source_lookup(task=task)
    return GroupInput(
        task=TaskInput(
            problem_statement=task.problem_statement,
            repo_path=lookup.path if lookup.found else None,
            base_commit=task.base_commit,
            test_command=task.test_command,
            fail_to_pass=list(task.fail_to_pass or []),
            pass_to_pass=list(task.pass_to_pass or []),
            test_patch=task.test_patch.text if task.test_patch is not None else "",
            reference_patch=task.gold_patch.text if task.gold_patch is not None else "",
            repo=task.repo,
            source_note="" if lookup.found else _prompt_source_note(task, lookup),
        ),
        candidates=[_candidate(unit[0]) for unit in candidate_attempts(attempts)],
        identity_names=group_identity_names(group_id=group_id),
        identity_patterns=list(settings.GAGAR_REVIEW_FINGERPRINTS),
    )


def endpoint_settings() -> dict[str, str]:
    """The endpoint settings (gagar_site/settings.py) as the registry's string config keys;
    empty ones are left out, so the registry applies its own defaults and names the variable."""
    values = {
        "backend": settings.GAGAR_GRADER_BACKEND,
        "base_url": settings.GAGAR_GRADER_BASE_URL,
        "api_key": settings.GAGAR_GRADER_API_KEY,
        "model": settings.GAGAR_GRADER_MODEL,
        "timeout_s": str(settings.GAGAR_GRADER_TIMEOUT_S),
        "max_retries": str(settings.GAGAR_GRADER_MAX_RETRIES),
        "transcript": settings.GAGAR_GRADER_TRANSCRIPT,
    }
    return {key: value for key, value in values.items() if value != ""}


def backend_settings(config: GraderConfig) -> dict[str, str]:
    """Registry settings for `config`: the row names the backend; keys and tuning come from the
    settings.

    The API key is never stored in the database, so it is always GAGAR_GRADER_API_KEY. Backend
    options come from the settings, then from the configuration's own `options`.
    """
    mapping = {
        "stream": str(settings.GAGAR_GRADER_STREAM),
        "idle_timeout_s": str(settings.GAGAR_GRADER_IDLE_TIMEOUT_S),
        "reasoning": str(settings.GAGAR_GRADER_REASONING),
        "reasoning_effort": settings.GAGAR_GRADER_REASONING_EFFORT,
        "thinking_budget": str(settings.GAGAR_GRADER_THINKING_BUDGET),
    }
    mapping.update(endpoint_settings())
    mapping["backend"] = config.backend
    for key in ("model", "base_url"):
        value = getattr(config, key)
        if value:
            mapping[key] = value
    for key in BACKEND_OPTIONS:
        if key in (config.options or {}):
            mapping[key] = str(config.options[key])
    if config.backend == GraderConfig.Backend.ANALYSIS:
        # The newest stored fit of this configuration; none: the shipped default fit.
        fit = config.fits.order_by("-created_at", "-pk").first()
        if fit is not None:
            mapping["fit"] = json.dumps(fit.fit)
    return mapping


BACKEND_OPTIONS = (
    "stream", "idle_timeout_s", "reasoning", "reasoning_effort", "limit_parameter",
    "thinking_budget", "timeout_s", "max_retries",
)  # fmt: skip


def discover_model(base_url: str, api_key: str = "", timeout_s: float = 10.0) -> str:
    """The first model an OpenAI-compatible server lists (vLLM, SGLang and llama.cpp serve one).

    This is what lets GAGAR_GRADER_BASE_URL alone switch the default grader to a local server.
    """
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout_s)
        response.raise_for_status()
        models = response.json().get("data") or []
        return str(models[0]["id"])
    except (httpx.HTTPError, ValueError, LookupError, TypeError, AttributeError) as exc:
        raise BackendConfigError(
            f"no model configured and {base_url}/models did not name one ({exc}); "
            "set GAGAR_GRADER_MODEL"
        ) from exc


def backend_for(config: GraderConfig) -> Backend:
    mapping = backend_settings(config)
    if mapping["backend"] == GraderConfig.Backend.OPENAI and not mapping.get("model"):
        mapping["model"] = discover_model(mapping.get("base_url", ""), mapping.get("api_key", ""))
    return backend_from_config(mapping)


def rubric_for(config: GraderConfig) -> Rubric:
    return Rubric(weights=dict(config.rubric_weights)) if config.rubric_weights else Rubric()


def budget_for(config: GraderConfig) -> Budget:
    known = {f.name for f in fields(Budget)}
    values = {k: v for k, v in (config.budget or {}).items() if k in known}
    # The configuration's spend limits per run are budget limits the loop plans around.
    if config.max_usd_per_run is not None:
        values["max_usd"] = float(config.max_usd_per_run)
    if config.max_tokens_per_run is not None:
        values["max_total_tokens"] = int(config.max_tokens_per_run)
    return Budget(**values)


def pricing_for(config: GraderConfig) -> Pricing:
    def pick(own: float | None, default: float) -> float:
        return float(own) if own is not None else default

    return Pricing(
        input=pick(config.usd_per_mtok_in, settings.GAGAR_GRADER_USD_PER_MTOK_IN),
        cached_input=pick(
            config.usd_per_mtok_cached_in,
            settings.GAGAR_GRADER_USD_PER_MTOK_CACHED_IN
            if config.usd_per_mtok_in is None
            else float(config.usd_per_mtok_in),
        ),
        output=pick(config.usd_per_mtok_out, settings.GAGAR_GRADER_USD_PER_MTOK_OUT),
    )


def context_window_for(config: GraderConfig, backend: Backend) -> ContextWindow:
    """The model's window: the configuration's, else what the server says, else the setting,
    else a default (a server's context-length error then teaches the loop the real one)."""
    options = config.options or {}
    target = int(options.get("context_target") or DEFAULT_CONTEXT_TARGET)
    if options.get("context_window"):
        return ContextWindow(int(options["context_window"]), target, "the configuration")
    ask = getattr(backend, "limits", None)
    if callable(ask):
        found = ask()
        if found.context_window:
            return ContextWindow(found.context_window, target, found.source)
    if settings.GAGAR_GRADER_CONTEXT_WINDOW:
        return ContextWindow(settings.GAGAR_GRADER_CONTEXT_WINDOW, target, "the setting")
    return ContextWindow(DEFAULT_CONTEXT_WINDOW, target, "default (nothing said otherwise)")


def sandbox_image_for(task_id: str, metadata: Mapping[str, object]) -> tuple[str, str]:
    """(image, what it contains) for a task: its own image when it names one (real
    repositories need their toolchains), else the template, else the shared image."""
    own = metadata.get("sandbox_image") if isinstance(metadata, Mapping) else None
    if isinstance(own, str) and own:
        return own, f"the task's own image (the repository's environment for {task_id})"
    if settings.GAGAR_SANDBOX_TASK_IMAGE:
        image = settings.GAGAR_SANDBOX_TASK_IMAGE.format(task=task_id.lower())
        return image, f"the task's image (the repository's environment for {task_id})"
    return settings.GAGAR_SANDBOX_IMAGE, settings.GAGAR_SANDBOX_IMAGE_CONTENTS


def sandbox_for(
    kind: str | None = None, *, task_id: str = "", task_metadata: Mapping[str, object] | None = None
) -> Sandbox | None:
    """The configured sandbox, or None: the grader is then told `run_check` is unavailable."""
    kind = (kind or settings.GAGAR_SANDBOX).strip().lower()
    if kind == "none":
        return None
    if kind == "docker":
        image, contents = sandbox_image_for(task_id, task_metadata or {})
        return DockerSandbox(image, contents=contents)
    try:
        available_isolation(NOBODY)
    except SandboxError as exc:
        # Never run a check with network access: without isolation there is no run_check.
        logger.warning("local sandbox unavailable, run_check disabled: %s", exc)
        return None
    return LocalSandbox()
