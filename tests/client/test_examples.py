"""Each adapter's example runs against the live server and gets graded advantages."""

from __future__ import annotations

import importlib
import sys

import pytest

from grading.models import GraderRun
from tests.conftest import PROJECT_ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
EXAMPLES = PROJECT_ROOT / "clients" / "python" / "examples"


@pytest.fixture
def examples():
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.mark.parametrize(
    "name", ["trl_reward", "verl_estimator", "openrlhf_reward_func", "rllm_precomputed"]
)
def test_the_adapter_example_runs(name, examples, live_server, token, grading_worker, capsys):
    module = importlib.import_module(name)
    module.main(["--url", live_server.url, "--token", token, "--deadline", "30"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8, lines
    runs = GraderRun.objects.filter(group__step__run__name__startswith="example-")
    assert runs.count() == 2 and all(r.status == "succeeded" for r in runs)
