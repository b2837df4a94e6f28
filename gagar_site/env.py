"""Typed readers for environment settings that fail loudly on bad values.

Kept apart from settings.py so the helpers can be tested without reloading settings.
"""

import os
from collections.abc import Mapping
from pathlib import Path


class ImproperlyConfiguredEnv(Exception):
    """An environment variable is present but cannot be read as its declared type."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    # `NAME_FILE` lets container secrets be mounted as files instead of env values.
    file_path = env.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfiguredEnv(
                f"{name}_FILE={file_path!r} cannot be read: {exc}"
            ) from exc
    return env.get(name)


def env_str(name: str, default: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    if value is None:
        if default is None:
            raise ImproperlyConfiguredEnv(f"{name} must be set")
        return default
    return value


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfiguredEnv(f"{name}={value!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name}={value!r} is not an integer") from exc


def env_float(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name}={value!r} is not a number") from exc


def env_list(name: str, default: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]
