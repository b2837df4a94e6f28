"""Build the configured grader backend from plain string settings.

The settings (gagar_site/settings.py, read by grading.services.grader_inputs) map these
environment variables onto the config keys:

    GAGAR_GRADER_BACKEND     -> backend     "openai" | "anthropic" | "analysis" | "heuristic" |
                                            "scripted"
    GAGAR_GRADER_BASE_URL    -> base_url    e.g. http://127.0.0.1:8000/v1 for a vLLM server
    GAGAR_GRADER_API_KEY     -> api_key     may be empty for a local server
    GAGAR_GRADER_MODEL       -> model
    GAGAR_GRADER_TIMEOUT_S   -> timeout_s   per HTTP request, seconds
    GAGAR_GRADER_MAX_RETRIES -> max_retries
    GAGAR_GRADER_TRANSCRIPT  -> transcript  path of a JSON transcript, for "scripted"

A configuration adds backend options (`GraderConfig.options`), with defaults from settings:
`stream`, `idle_timeout_s`, `reasoning`, `reasoning_effort`, `limit_parameter` (OpenAI) and
`thinking_budget` (Anthropic). The analysis backend takes `fit` (the JSON text of a fitted
artefact, `gagar.analysis-fit.v1`); without one it uses the shipped default fit.

With no backend named, the offline analysis grader is used (the shipped fit): it needs no model
endpoint. The heuristic grader stays selectable (`heuristic`) for comparison.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from grading.grader.backends.base import Backend

ENV_VARS: dict[str, str] = {
    "backend": "GAGAR_GRADER_BACKEND",
    "base_url": "GAGAR_GRADER_BASE_URL",
    "api_key": "GAGAR_GRADER_API_KEY",
    "model": "GAGAR_GRADER_MODEL",
    "timeout_s": "GAGAR_GRADER_TIMEOUT_S",
    "max_retries": "GAGAR_GRADER_MAX_RETRIES",
    "transcript": "GAGAR_GRADER_TRANSCRIPT",
}
DEFAULT_BACKEND = "analysis"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"


class BackendConfigError(ValueError):
    """The grader backend settings are missing or invalid."""


def config_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The config keys present in `environ`, a mapping of the variables above (the site reads
    them through its settings; this is for callers outside Django)."""
    return {key: environ[var] for key, var in ENV_VARS.items() if environ.get(var, "") != ""}


def _http_options(config: Mapping[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "timeout_s": _number(config, "timeout_s", 120.0),
        "max_retries": int(_number(config, "max_retries", 3)),
        "stream": _bool(config, "stream", True),
    }
    if config.get("idle_timeout_s", "").strip():
        options["idle_timeout_s"] = _number(config, "idle_timeout_s", 120.0)
    return options


def backend_from_config(config: Mapping[str, str]) -> Backend:
    kind = (config.get("backend") or DEFAULT_BACKEND).strip().lower()
    if kind == "openai":
        from grading.grader.backends.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(
            config.get("base_url") or OPENAI_DEFAULT_BASE_URL,
            config.get("api_key", ""),
            _required(config, "model"),
            reasoning=_bool(config, "reasoning", False),
            reasoning_effort=config.get("reasoning_effort", "").strip(),
            limit_parameter=config.get("limit_parameter", "").strip(),
            **_http_options(config),
        )
    if kind == "anthropic":
        from grading.grader.backends.anthropic import AnthropicBackend

        return AnthropicBackend(
            config.get("base_url") or ANTHROPIC_DEFAULT_BASE_URL,
            _required(config, "api_key"),
            _required(config, "model"),
            thinking_budget=int(_number(config, "thinking_budget", 0)),
            **_http_options(config),
        )
    if kind == "scripted":
        from grading.grader.backends.scripted import ScriptedBackend, load_transcript

        return ScriptedBackend(load_transcript(Path(_required(config, "transcript"))))
    if kind == "analysis":
        return _analysis_backend(config.get("fit", ""))
    if kind == "heuristic":
        return _heuristic_backend()
    raise BackendConfigError(
        f"unknown grader backend {kind!r}; "
        "expected openai, anthropic, analysis, heuristic or scripted"
    )


def _analysis_backend(fit_json: str) -> Backend:
    from grading.grader.analysis.backend import AnalysisBackend
    from grading.grader.analysis.model import Fit, FitError

    if not fit_json.strip():
        return AnalysisBackend()
    try:
        return AnalysisBackend(Fit.from_json(fit_json))
    except (FitError, ValueError) as exc:
        raise BackendConfigError(f"the analysis grader's fit cannot be used: {exc}") from exc


def _heuristic_backend() -> Backend:
    # Imported by name at call time: the heuristic grader lives in its own module, which pulls in
    # the rubric code that the HTTP backends do not need.
    try:
        module = importlib.import_module("grading.grader.heuristic")
        factory = module.HeuristicBackend
    except (ImportError, AttributeError) as exc:
        raise BackendConfigError(
            "the heuristic grader backend is not available: "
            "grading.grader.heuristic.HeuristicBackend could not be imported "
            f"({exc}); set GAGAR_GRADER_BACKEND to openai or anthropic instead"
        ) from exc
    return cast(Backend, factory())


def _bool(config: Mapping[str, str], key: str, default: bool) -> bool:
    raw = config.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise BackendConfigError(f"grader backend option {key!r} must be true or false, got {raw!r}")


def _required(config: Mapping[str, str], key: str) -> str:
    value = config.get(key, "").strip()
    if not value:
        raise BackendConfigError(f"grader backend setting {key!r} ({ENV_VARS[key]}) is required")
    return value


def _number(config: Mapping[str, str], key: str, default: float) -> float:
    raw = config.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise BackendConfigError(f"{ENV_VARS.get(key, key)} must be a number, got {raw!r}") from exc
    if value < 0:
        raise BackendConfigError(f"{ENV_VARS.get(key, key)} must not be negative, got {raw!r}")
    return value
