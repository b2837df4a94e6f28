"""Every GAGAR_* environment variable is declared in settings.py and documented."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "docs" / "deployment.md")


def _declared() -> set[str]:
    source = (ROOT / "gagar_site" / "settings.py").read_text()
    return set(re.findall(r'env_(?:str|bool|int|float|list)\(\s*"(GAGAR_[A-Z0-9_]+)"', source))


def _documented() -> str:
    text = "\n".join(path.read_text() for path in DOCS)
    # Tables abbreviate siblings: `GAGAR_GRADER_BACKEND` / `_BASE_URL` stands for both.
    names = set(re.findall(r"`(GAGAR_[A-Z0-9_]+)`", text))
    for row in re.findall(r"^\|(.*?)\|", text, flags=re.M):
        full = re.findall(r"`(GAGAR_[A-Z0-9_]+?)_[A-Z0-9]+`", row)
        for prefix in full:
            names.update(prefix + suffix for suffix in re.findall(r"`(_[A-Z0-9_]+)`", row))
    return " ".join(sorted(names))


def test_it_documents_every_declared_setting():
    declared = _declared()
    assert len(declared) > 30  # the pattern still finds the declarations
    documented = set(_documented().split())
    assert sorted(declared - documented) == []


def test_it_reads_gagar_settings_only_through_settings_py():
    # No `getattr(settings, "GAGAR_…", default)` or environment reads outside the settings file:
    # a default given in two places drifts. (Handing the whole environment on to a child
    # process, `{**os.environ, …}`, reads no setting.)
    offenders = []
    for path in sorted((ROOT / "grading").rglob("*.py")) + sorted((ROOT / "review").rglob("*.py")):
        if "sample" in path.parts:
            continue
        text = path.read_text()
        settings_read = re.search(r"getattr\(\s*settings\s*,", text)
        if settings_read or re.search(r"os\.(environ\s*(\[|\.get\b)|getenv)", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
