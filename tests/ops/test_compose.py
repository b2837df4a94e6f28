"""No compose engine runs here, so compose.yaml is checked against the code it names:
commands, queues, environment variables, secrets, volumes and the Dockerfile's sources."""

from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.util
import re
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml  # PyYAML: installed with the dev extras (through `datasets`)
from django.conf import settings
from django.core.management import get_commands

from tests.conftest import PROJECT_ROOT

COMPOSE = PROJECT_ROOT / "compose.yaml"
DOCKERFILE = PROJECT_ROOT / "Dockerfile"
IMAGE_SERVICES = ("migrate", "web", "worker-grading", "worker-default", "beat")
# Read by something other than our code, each for a stated reason.
EXTERNAL_ENV = {"TMPDIR": "Python's tempfile: where grader workspaces are created"}
_INTERPOLATION = re.compile(r"\$\{[^}]*\}")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command")
    if command is None:
        # The image's CMD.
        return _dockerfile_exec_form("CMD")
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def _dockerfile_exec_form(instruction: str) -> list[str]:
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith(f"{instruction} "):
            return list(ast.literal_eval(line.split(" ", 1)[1]))
    raise AssertionError(f"no {instruction} in the Dockerfile")


def _option(argv: list[str], short: str, long: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg in (short, long) and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{long}="):
            return arg.split("=", 1)[1]
    return None


def _env_names_read_by_the_code() -> set[str]:
    names: set[str] = set()
    settings_py = (PROJECT_ROOT / "gagar_site" / "settings.py").read_text()
    for name in re.findall(r"env_(?:str|bool|int|float|list)\(\s*\"([A-Z0-9_]+)\"", settings_py):
        names |= {name, f"{name}_FILE"}  # gagar_site/env.py reads NAME_FILE for every NAME
    # The grader's backend settings (grading.grader.backends.registry.ENV_VARS).
    from grading.grader.backends.registry import ENV_VARS

    names |= set(ENV_VARS.values())
    # The deploy scripts: gunicorn's config and the health check read os.environ directly,
    # the entrypoint turns GAGAR_GRADER_API_KEY_FILE into GAGAR_GRADER_API_KEY.
    for path in (PROJECT_ROOT / "deploy").glob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r"os\.environ(?:\.get)?[\(\[]\s*\"([A-Z0-9_]+)\"", text))
    entrypoint = (PROJECT_ROOT / "deploy" / "entrypoint.sh").read_text()
    names |= set(re.findall(r"\$\{([A-Z0-9_]+)", entrypoint))
    return names | set(EXTERNAL_ENV)


def test_it_parses_and_has_every_service(services):
    assert set(services) == {*IMAGE_SERVICES, "postgres", "redis"}


def test_every_image_service_sets_only_variables_the_code_reads(services):
    known = _env_names_read_by_the_code()
    for name in IMAGE_SERVICES:
        unknown = set(services[name].get("environment", {})) - known
        assert not unknown, f"{name}: nothing reads {sorted(unknown)}"


def test_every_secret_file_variable_points_at_a_mounted_secret(compose, services):
    declared = set(compose["secrets"])
    for name, service in services.items():
        mounted = set(service.get("secrets", []))
        assert mounted <= declared, name
        for var, value in service.get("environment", {}).items():
            if var.endswith("_FILE"):
                assert value.startswith("/run/secrets/"), (name, var)
                assert value.removeprefix("/run/secrets/") in mounted, (name, var)
    for secret in compose["secrets"].values():
        # Secrets are files next to compose.yaml, never committed (see .dockerignore).
        assert secret["file"].startswith("./secrets/")


def test_web_runs_gunicorn_on_the_wsgi_app_with_the_config_file(services):
    argv = _argv(services["web"])
    assert argv[0] == "gunicorn"
    config = _option(argv, "-c", "--config")
    assert config and (PROJECT_ROOT / config).is_file()
    module, _, attr = argv[-1].partition(":")
    assert (PROJECT_ROOT / Path(*module.split("."))).with_suffix(".py").is_file()
    from gagar_site import wsgi

    assert callable(getattr(wsgi, attr or "application"))
    assert _argv(services["web"]) == _dockerfile_exec_form("CMD")


def test_the_workers_consume_every_queue_the_settings_route_to(services):
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    routed.add(settings.CELERY_TASK_DEFAULT_QUEUE)
    consumed: set[str] = set()
    for name in ("worker-grading", "worker-default"):
        argv = _argv(services[name])
        assert argv[:4] == ["celery", "-A", "gagar_site", "worker"], name
        queues = set(_option(argv, "-Q", "--queues").split(","))
        assert queues <= routed, f"{name} consumes a queue nothing is sent to: {queues - routed}"
        consumed |= queues
    assert consumed == routed


def test_the_celery_app_and_the_beat_schedule_exist(services):
    from django.apps import apps

    from gagar_site.celery import app

    assert app.main == "gagar"
    argv = _argv(services["beat"])
    assert argv[:4] == ["celery", "-A", "gagar_site", "beat"]
    # What a worker or beat does at start: import every app's tasks module (autodiscovery), so
    # that the check holds whichever tests ran before this one in this process.
    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.tasks"):
            importlib.import_module(f"{config.name}.tasks")

    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, f"beat schedules unknown task {entry['task']}"


def test_management_commands_and_scripts_exist(services):
    commands = get_commands()
    for name, service in services.items():
        if name not in IMAGE_SERVICES:
            continue
        argv = _argv(service)
        if argv[:2] == ["python", "manage.py"]:
            assert argv[2] in commands, f"{name}: no management command {argv[2]}"
        check = service.get("healthcheck", {}).get("test", [])
        if check[:3] == ["CMD", "python", "deploy/healthcheck.py"]:
            script = (PROJECT_ROOT / check[2]).read_text()
            assert f'argv[:1] == ["{check[3]}"]' in script, f"{name}: unknown check {check[3]}"


def test_dependencies_exist_and_their_conditions_can_be_met(services):
    for name, service in services.items():
        for dep, spec in service.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            condition = spec.get("condition", "service_started")
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{dep} has no health check"
            elif condition == "service_completed_successfully":
                assert services[dep].get("restart") == "no", f"{dep} must run once"
            else:
                assert condition == "service_started"
    for name in IMAGE_SERVICES:
        if name != "migrate":
            assert services[name]["depends_on"]["migrate"] == {
                "condition": "service_completed_successfully"
            }


def test_long_running_services_have_health_checks(services):
    for name, service in services.items():
        if name == "migrate":
            continue
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
    assert services["web"]["healthcheck"]["test"][-1] == "web"  # which GETs /readyz
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"
    assert services["redis"]["healthcheck"]["test"][1:] == ["redis-cli", "ping"]


def test_volumes_are_declared_and_only_the_grading_worker_gets_the_docker_socket(compose, services):
    declared = set(compose["volumes"])
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith(("/", ".")):
                assert source in declared, f"{name}: undeclared volume {source}"
            if source == "/var/run/docker.sock":
                assert name == "worker-grading", f"{name} must not get the Docker socket"
    grading = services["worker-grading"]
    assert grading["environment"]["GAGAR_SANDBOX"] == "docker"
    # The host's engine bind-mounts workspaces by host path: same path on both sides.
    workspaces = grading["environment"]["TMPDIR"]
    assert f"{workspaces}:{workspaces}" in grading["volumes"]


def test_the_configured_environment_is_a_valid_production_configuration(services):
    env = services["web"]["environment"]
    assert env["DEBUG"] == "0"
    assert env["CELERY_BROKER_URL"].startswith("redis://")
    assert env["CACHE_URL"].startswith("redis://")  # login limits shared by every process
    assert env["CACHE_URL"] != env["CELERY_BROKER_URL"]
    assert env["DATABASE_URL"].startswith("postgres://")
    assert "@postgres:" in env["DATABASE_URL"]
    assert env["LOG_FORMAT"] == "json"
    # The compose interpolation default must itself be a valid boolean for env_bool.
    assert _INTERPOLATION.sub("1", env["GAGAR_HTTPS"]) == "1"


def _dockerignore_patterns() -> list[str]:
    lines = (PROJECT_ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_dockerfile_copies_only_what_exists_and_is_not_ignored():
    ignored = _dockerignore_patterns()
    copies = [
        line.split()[1:-1]
        for line in DOCKERFILE.read_text().splitlines()
        if line.startswith("COPY ") and "--from" not in line
    ]
    assert copies
    for sources in copies:
        for source in sources:
            assert (PROJECT_ROOT / source).exists(), f"COPY {source}: missing"
            assert not any(fnmatch.fnmatch(source, p) for p in ignored), f"{source} is ignored"
    # Secrets and local state stay out of the build context.
    assert {"secrets", "var", ".venv", ".git"} <= set(ignored)
    entrypoint = _dockerfile_exec_form("ENTRYPOINT")[0].removeprefix("/app/")
    assert (PROJECT_ROOT / entrypoint).stat().st_mode & stat.S_IXUSR
    assert "USER " in DOCKERFILE.read_text()  # not root


def test_every_package_the_project_installs_is_copied():
    copied = {
        part.rstrip("/")
        for line in DOCKERFILE.read_text().splitlines()
        if line.startswith("COPY ")
        for part in line.split()[1:-1]
    }
    for package in ("gagar_site", "grading", "review", "templates", "static", "manage.py"):
        assert package in copied
