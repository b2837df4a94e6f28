"""What a run gets from its configuration and task: sandbox image, context window, prices."""

from __future__ import annotations

from typing import Any

import pytest

from grading.grader.backends.base import ModelLimits
from grading.grader.toolspecs import run_check_spec
from grading.models import GraderConfig
from grading.services.grader_inputs import (
    context_window_for,
    pricing_for,
    sandbox_for,
    sandbox_image_for,
)


def test_a_task_names_its_own_sandbox_image_or_the_template_does(settings: Any) -> None:
    settings.GAGAR_SANDBOX_IMAGE = "gagar-sandbox:local"
    settings.GAGAR_SANDBOX_IMAGE_CONTENTS = "busybox only"
    settings.GAGAR_SANDBOX_TASK_IMAGE = ""
    assert sandbox_image_for("django__django-1", {}) == ("gagar-sandbox:local", "busybox only")
    own = sandbox_image_for("django__django-1", {"sandbox_image": "swe/django:1"})
    assert own[0] == "swe/django:1" and "task's own image" in own[1]
    settings.GAGAR_SANDBOX_TASK_IMAGE = "registry/sweb.eval.{task}"
    image, contents = sandbox_image_for("Django__django-1", {})
    assert image == "registry/sweb.eval.django__django-1" and "django" in contents.lower()


def test_run_check_tells_the_grader_what_the_sandbox_holds(settings: Any) -> None:
    settings.GAGAR_SANDBOX_IMAGE_CONTENTS = "Python 3.11 with pytest and the repository's deps"
    settings.GAGAR_SANDBOX_TASK_IMAGE = ""
    sandbox = sandbox_for("docker", task_id="t", task_metadata={})
    spec = run_check_spec(sandbox)
    assert "Python 3.11 with pytest" in spec.description
    assert "gagar-sandbox" in spec.description
    settings.GAGAR_SANDBOX_IMAGE_CONTENTS = ""
    spec = run_check_spec(sandbox_for("docker", task_id="t", task_metadata={}))
    assert "not described" in spec.description


class _Stating:
    def __init__(self, window: int | None) -> None:
        self.window = window

    def limits(self) -> ModelLimits:
        return ModelLimits(self.window, None, "GET /models max_model_len")


@pytest.mark.django_db
def test_the_context_window_comes_from_configuration_server_setting_or_default(
    settings: Any,
) -> None:
    settings.GAGAR_GRADER_CONTEXT_WINDOW = 0
    configured = GraderConfig(backend="openai", options={"context_window": 200_000})
    assert context_window_for(configured, _Stating(32768)).window == 200_000
    plain = GraderConfig(backend="openai")
    w = context_window_for(plain, _Stating(32768))
    assert (w.window, w.source) == (32768, "GET /models max_model_len")
    settings.GAGAR_GRADER_CONTEXT_WINDOW = 65536
    assert context_window_for(plain, _Stating(None)).window == 65536
    settings.GAGAR_GRADER_CONTEXT_WINDOW = 0
    assert context_window_for(plain, _Stating(None)).window == 128_000


def test_prices_come_from_the_configuration_else_the_settings(settings: Any) -> None:
    settings.GAGAR_GRADER_USD_PER_MTOK_IN = 2.0
    settings.GAGAR_GRADER_USD_PER_MTOK_CACHED_IN = 0.2
    settings.GAGAR_GRADER_USD_PER_MTOK_OUT = 8.0
    p = pricing_for(GraderConfig(backend="openai"))
    assert (p.input, p.cached_input, p.output) == (2.0, 0.2, 8.0)
    own = pricing_for(GraderConfig(backend="openai", usd_per_mtok_in=3.0, usd_per_mtok_out=15.0))
    # A configuration with its own input price but no cached price pays the input price for
    # cached tokens rather than the settings' (another provider's) cached price.
    assert (own.input, own.cached_input, own.output) == (3.0, 3.0, 15.0)
    assert own.cost(1_000_000, 500_000, 100_000) == pytest.approx(1.5 + 1.5 + 1.5)


@pytest.mark.django_db
def test_the_default_configuration_and_its_key_come_from_the_settings(settings: Any) -> None:
    from grading.services.grader_inputs import backend_settings
    from grading.services.grader_runs import grader_config_default, grader_config_for

    settings.GAGAR_GRADER_BACKEND = ""
    settings.GAGAR_GRADER_BASE_URL = "http://127.0.0.1:9/v1"
    settings.GAGAR_GRADER_MODEL = "local-model"
    settings.GAGAR_GRADER_API_KEY = "k-1"
    settings.GAGAR_GRADER_TIMEOUT_S = 120.0
    config = grader_config_default()
    assert (config.backend, config.model, config.base_url) == (
        "openai",
        "local-model",
        "http://127.0.0.1:9/v1",
    )
    assert grader_config_for(name=None) == config
    assert grader_config_for(name=config.name) == config
    mapping = backend_settings(config)
    assert (mapping["api_key"], mapping["timeout_s"]) == ("k-1", "120.0")
    with pytest.raises(GraderConfig.DoesNotExist):
        grader_config_for(name="no-such-config")


@pytest.mark.django_db
def test_a_runs_inputs_carry_the_names_its_trajectories_are_redacted_of(settings: Any) -> None:
    from grading.models import Group
    from grading.services.demo import sample_load
    from grading.services.grader_inputs import group_input

    settings.GAGAR_REVIEW_FINGERPRINTS = [r"site-\d+"]
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    given = group_input(group_id=group.pk)
    systems = {a.agent_system for a in group.attempts.all()}
    assert systems <= set(given.identity_names)
    assert group.step.run.name in given.identity_names
    assert list(given.identity_patterns) == [r"site-\d+"]
    # and none of it is in what the loop is told about the group
    assert not any(s in repr(given.task) for s in systems)
