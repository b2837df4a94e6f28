"""The blinded rendering cache: what a reviewer is shown of a group, redacted and rendered,
cached by content.

Every piece of untrusted text (diffs, file names, old files, test output and reports,
trajectory events, the problem statement) passes through the group's `Redactor` before it is
rendered, and is escaped by the renderer or by the template. Rendered diffs are cached by the
patch's content hash + render options + renderer version (`review.diffs.cache_key`), plus the
redaction rules and the base tree they were rendered against, so a warm page does no parsing,
no redaction and no highlighting.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.core.cache import cache

from grading.diffs import FileComparison, compare_patches, post_versions
from grading.domain.hostile_text import strip_ansi, visible
from grading.domain.redaction import Redactor, build_redactor
from grading.domain.repos import is_git_repository, local_repo_path
from grading.models import Patch, Task, Trajectory
from grading.selectors.rollouts import group_identity_names, trajectory_events
from review.diffs import (
    LEXED_VERSION,
    RENDERER_VERSION,
    HunkSignature,
    LexCache,
    Lexed,
    RenderedFile,
    RenderedPair,
    RenderOptions,
    cache_key,
    changed_lines_summary,
    file_id_for,
    hunk_signatures,
    parse_patch,
    render_file,
    render_post_pair,
    shares_of,
)
from review.models import Assignment

OPTIONS = RenderOptions()
BASE_FILE_MAX_BYTES = 1_000_000
TEST_OUTPUT_HEAD = 48_000
TEST_OUTPUT_TAIL = 16_000
EVENT_TEXT_MAX = 20_000
# A system prompt is the harness's, the same for every attempt its agent makes: its wording alone
# tells a reviewer which agent made a candidate (each family has its own "You are …", tool list
# and rules, with no name to redact), and it says nothing about what this attempt did. Withheld
# whole, so a search of the trajectory cannot find it either.
SYSTEM_PROMPT_WITHHELD = "(the agent's system prompt is withheld: its wording identifies the agent)"
CACHE_SECONDS = 7 * 24 * 3600


def assignment_redactor(*, assignment: Assignment) -> Redactor:
    names = group_identity_names(group_id=assignment.group_id)
    patterns = [
        *settings.GAGAR_REVIEW_FINGERPRINTS,
        *assignment.campaign.fingerprint_patterns.splitlines(),
    ]
    return build_redactor(names, patterns)


def _base_digest(task: Task) -> str:
    where = task.source_path if task.has_source else task.repo_url
    return hashlib.sha256(f"{where}@{task.base_commit}".encode()).hexdigest()[:16]


def patch_key(patch: Patch, redactor: Redactor, task: Task, page: int = 1) -> str:
    return cache_key(
        patch.sha256, OPTIONS, page=page, extra=f"{redactor.digest}:{_base_digest(task)}"
    )


def base_files(*, task: Task, paths: Iterable[str]) -> dict[str, str]:
    """Pre-image files at the task's base commit, read with one `git cat-file --batch`."""
    wanted = sorted({p for p in paths if p})
    if not wanted:
        return {}
    keys = {
        p: "gagar-base:" + hashlib.sha256(f"{_base_digest(task)}:{p}".encode()).hexdigest()
        for p in wanted
    }
    found = cache.get_many(list(keys.values()))
    out = {p: found[k] for p, k in keys.items() if k in found}
    missing = [p for p in wanted if keys[p] not in found]
    # The source found at import (a mirror from --repos or GAGAR_REPO_MIRRORS), else repo_url.
    repo = Path(task.source_path) if task.has_source else local_repo_path(task.repo_url)
    if missing and repo is not None and is_git_repository(repo) and task.base_commit:
        fetched = _cat_files(repo, task.base_commit, missing)
        cache.set_many({keys[p]: text for p, text in fetched.items()}, CACHE_SECONDS)
        out.update(fetched)
    return {p: t for p, t in out.items() if t}


def _cat_files(repo: Path, commit: str, paths: Sequence[str]) -> dict[str, str]:
    request = "".join(f"{commit}:{p}\n" for p in paths if "\n" not in p).encode()
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "--batch"],
            input=request,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    data, pos, out = proc.stdout, 0, {}
    for path in paths:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        header = data[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":
            out[path] = ""  # missing: remembered, so we do not ask git again
            continue
        size = int(header[2])
        blob = data[pos : pos + size]
        pos += size + 1
        out[path] = "" if size > BASE_FILE_MAX_BYTES else blob.decode("utf-8", "replace")
    return out


class GroupLexCache(LexCache):
    """Lexed base files by content in the shared cache, so the candidates of a group that
    change one file (each rendered by its own panel request) lex its base once."""

    def __init__(self) -> None:
        self._memo: dict[str, Lexed] = {}

    @staticmethod
    def _key(key: str) -> str:
        digest = hashlib.sha256(key.encode()).hexdigest()
        return f"gagar-lexed:v{RENDERER_VERSION}.{LEXED_VERSION}:{digest}"

    def get(self, key: str) -> Lexed | None:
        if key not in self._memo:
            hit = cache.get(self._key(key))
            if not isinstance(hit, Lexed):
                return None
            self._memo[key] = hit
        return self._memo[key]

    def set(self, key: str, value: Lexed) -> None:
        self._memo[key] = value
        cache.set(self._key(key), value, CACHE_SECONDS)


def redacted_texts(*, patches: Iterable[Patch], redactor: Redactor) -> dict[str, str]:
    """Patch texts (by sha256) as the reviewer is shown them, each redacted once for every
    request that renders, fingerprints or compares it (one cache round trip)."""
    by_sha = {p.sha256: p for p in patches}
    keys = {sha: f"gagar-redacted:{redactor.digest}:{sha}" for sha in by_sha}
    found = cache.get_many(list(keys.values()))
    out = {sha: found[key] for sha, key in keys.items() if key in found}
    todo = [by_sha[sha] for sha in by_sha if sha not in out]
    # Patches read without their text (the review page's read) get it here, in one query.
    deferred = {p.pk: p for p in todo if "content" in p.get_deferred_fields()}
    if deferred:
        for pk, content in Patch.objects.filter(pk__in=deferred).values_list("pk", "content"):
            deferred[pk].content = content
    fresh = {p.sha256: redactor(p.text) for p in todo}
    if fresh:
        cache.set_many({keys[sha]: text for sha, text in fresh.items()}, CACHE_SECONDS)
        out.update(fresh)
    return out


def _old_text(old: dict[str, str], path: str | None, redactor: Redactor) -> str | None:
    # The pre-image is shown as context lines, so it is redacted like the diff itself.
    text = old.get(path or "")
    return redactor(text) if text else None


def rendered_diffs(
    *, patches: dict[str, Patch | None], redactor: Redactor, task: Task
) -> dict[str, list[RenderedFile]]:
    """Rendered first pages of every file, by candidate token; one cache round trip when warm."""
    keys = {tok: patch_key(p, redactor, task) for tok, p in patches.items() if p is not None}
    cached = cache.get_many(list(set(keys.values())))
    out: dict[str, list[RenderedFile]] = {tok: [] for tok in patches}
    todo: dict[str, Patch] = {}
    for tok, key in keys.items():
        if key in cached:
            out[tok] = cached[key]
        else:
            todo[tok] = patches[tok]  # type: ignore[assignment]
    if todo:
        texts = redacted_texts(patches=todo.values(), redactor=redactor)
        parsed = {tok: parse_patch(texts[p.sha256]) for tok, p in todo.items()}
        old = base_files(
            task=task,
            paths=(
                f.old_path or "" for files in parsed.values() for f in files if f.change != "added"
            ),
        )
        fresh = {}
        lexed = GroupLexCache()
        for tok, files in parsed.items():
            rendered = [
                render_file(
                    f,
                    old_text=_old_text(old, f.old_path, redactor),
                    options=OPTIONS,
                    lex_cache=lexed,
                )
                for f in files
            ]
            out[tok] = rendered
            fresh[keys[tok]] = rendered
        cache.set_many(fresh, CACHE_SECONDS)
    return out


def rendered_file_page(
    *, patch: Patch, redactor: Redactor, task: Task, file_id: str, page: int
) -> RenderedFile | None:
    """One further page of one large file (the first pages come with the review page)."""
    key = patch_key(patch, redactor, task, page=page) + ":" + file_id
    hit = cache.get(key)
    if hit is not None:
        return hit
    text = redacted_texts(patches=[patch], redactor=redactor)[patch.sha256]
    for f in parse_patch(text):
        if file_id_for(f.path) == file_id:
            old = base_files(task=task, paths=[f.old_path or ""]) if f.change != "added" else {}
            try:
                rendered = render_file(
                    f,
                    old_text=_old_text(old, f.old_path, redactor),
                    options=OPTIONS,
                    page=page,
                    lex_cache=GroupLexCache(),
                )
            except ValueError:
                return None
            cache.set(key, rendered, CACHE_SECONDS)
            return rendered
    return None


@dataclass(frozen=True)
class ComparedFile:
    """One file of compare mode: how two candidates' post-patch versions of it differ."""

    path: str
    # both: each changes it, differently; same: the same change; only_a / only_b: one of them
    kind: Literal["both", "same", "only_a", "only_b"]
    summary: str
    pair: RenderedPair | None = None  # the diff between the two post-patch versions
    added: int = 0  # for only_a / only_b: that candidate's own change
    removed: int = 0


def _compared(fc: FileComparison, base: dict[str, str]) -> ComparedFile:
    if fc.a is None or fc.b is None:
        own = fc.a or fc.b
        assert own is not None
        kind: Literal["only_a", "only_b"] = "only_a" if fc.a is not None else "only_b"
        return ComparedFile(fc.path, kind, "", None, own.lines_added, own.lines_removed)
    if fc.identical:
        return ComparedFile(fc.path, "same", "Both candidates make the same change here.")
    pair = post_versions(fc, base)
    if pair is None:
        return ComparedFile(fc.path, "both", "Binary file, changed differently.")
    return ComparedFile(
        fc.path,
        "both",
        changed_lines_summary(fc),
        render_post_pair(pair, options=OPTIONS),
    )


def compared_files(
    *, a: Patch | None, b: Patch | None, redactor: Redactor, task: Task
) -> list[ComparedFile]:
    """Compare mode's files for candidates a and b (left, right): per file both changed, the
    diff between their post-patch versions, built by the shared compare (`grading.diffs`) on
    the redacted text and base files the reviewer is shown; cached by content."""
    shas = [p.sha256 if p is not None else "none" for p in (a, b)]
    # v2: the summaries' wording (bump when ComparedFile's text changes).
    digest = _digest(RENDERER_VERSION, *shas, redactor.digest, _base_digest(task))
    key = f"gagar-compare:v2:{digest}"
    hit = cache.get(key)
    if hit is not None:
        return list(hit)
    texts = redacted_texts(patches=[p for p in (a, b) if p is not None], redactor=redactor)
    parsed = [parse_patch(texts[p.sha256] if p is not None else "") for p in (a, b)]
    comparisons = compare_patches(*parsed)
    wanted = {
        f.old_path or ""
        for fc in comparisons
        if fc.a is not None and fc.b is not None and not fc.identical
        for f in (fc.a, fc.b)
    }
    base = {p: redactor(t) for p, t in base_files(task=task, paths=wanted).items()}
    out = [_compared(fc, base) for fc in comparisons]
    cache.set(key, out, CACHE_SECONDS)
    return out


def _digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class HunkShare:
    path: str
    line: int
    holders: int
    total: int

    @property
    def unique(self) -> bool:
        return self.holders == 1 and self.total > 1

    @property
    def common(self) -> bool:
        return self.total > 1 and self.holders * 2 > self.total


def shared_hunks(
    *, patches: dict[str, Patch | None], redactor: Redactor, only: Iterable[str] | None = None
) -> dict[str, list[HunkShare]]:
    """Per candidate (the `only` tokens, else all), each hunk with how many of the group's
    candidates made the same change.

    Computed and cached per patch content (not per candidate token), so every reviewer of the
    group shares one computation whatever their aliases and order.
    """
    key = shared_key(patches=patches, redactor=redactor)
    cached = cache.get(key)
    if cached is None:
        # One entry per candidate, named by content and occurrence rather than by token: two
        # candidates with the same patch both count as holders, and any reviewer's order of
        # the same patches maps to the same cache entry.
        redacted = redacted_texts(
            patches=[p for p in patches.values() if p is not None], redactor=redactor
        )
        signed = {sha: hunk_signatures(text) for sha, text in redacted.items()}
        sigs: dict[str, list[HunkSignature]] = {}
        seen: dict[str, int] = {}
        for p in patches.values():
            sha = p.sha256 if p is not None else "none"
            sigs[f"{sha}#{seen.get(sha, 0)}"] = signed.get(sha, [])
            seen[sha] = seen.get(sha, 0) + 1
        shares = shares_of(sigs)
        by_sha: dict[str, list[tuple[str, int, float]]] = {}
        for name, own in sigs.items():
            sha, _, occurrence = name.partition("#")
            if occurrence == "0":
                by_sha[sha] = [(own[i].path, own[i].old_start, sh) for i, sh in shares[name]]
        cached = (len(sigs), by_sha)
        cache.set(key, cached, CACHE_SECONDS)
    total, by_sha = cached
    wanted = set(patches) if only is None else set(only)
    return {
        tok: [
            HunkShare(path, line, round(share * total), total)
            for path, line, share in by_sha.get(p.sha256 if p is not None else "none", [])
        ]
        for tok, p in patches.items()
        if tok in wanted
    }


def shared_key(*, patches: dict[str, Patch | None], redactor: Redactor) -> str:
    shas = sorted(p.sha256 if p is not None else "none" for p in patches.values())
    digest = hashlib.sha256(json.dumps([redactor.digest, shas]).encode()).hexdigest()
    return f"gagar-shared:{digest}"


def test_results(*, attempt: Any, redactor: Redactor) -> dict[str, Any]:
    """Test report summary and (truncated) output, redacted."""
    raw = attempt.test_output().decode("utf-8", "replace")
    truncated = len(raw) > TEST_OUTPUT_HEAD + TEST_OUTPUT_TAIL
    if truncated:
        raw = raw[:TEST_OUTPUT_HEAD] + "\n… (output truncated) …\n" + raw[-TEST_OUTPUT_TAIL:]
    report = attempt.test_report if isinstance(attempt.test_report, dict) else {}
    sections = []
    for name, value in report.items():
        if isinstance(value, dict) and ("success" in value or "failure" in value):
            sections.append(
                {
                    "name": visible(redactor(str(name))),
                    "passed": len(value.get("success") or []),
                    "failed": [visible(redactor(str(t))) for t in (value.get("failure") or [])],
                }
            )
    # Colour codes go; any other control character is shown, never sent raw.
    output = visible(strip_ansi(redactor(raw)))
    return {"output": output, "truncated": truncated, "sections": sections}


def trajectory_slice(
    *, trajectory: Trajectory, redactor: Redactor, start: int, count: int, query: str = ""
) -> list[dict[str, Any]]:
    """A page of events, or up to `count` matches of `query` from `start` on, redacted."""
    if not query:
        return [
            _event(e, redactor)
            for e in trajectory_events(trajectory=trajectory, start=start, count=count)
        ]
    needle = query.casefold()
    found: list[dict[str, Any]] = []
    pos = start
    while pos < trajectory.event_count and len(found) < count:
        for raw in trajectory_events(trajectory=trajectory, start=pos, count=500):
            event = _event(raw, redactor)
            hay = " ".join(
                str(event.get(k) or "") for k in ("text", "tool", "args", "kind", "role")
            )
            if needle in hay.casefold():
                found.append(event)
                if len(found) >= count:
                    break
        pos += 500
    return found


def _event(raw: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    args = raw.get("args")
    if args is not None and not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, indent=1)
    text = str(raw.get("text") or "")
    if str(raw.get("role") or "").strip().casefold() == "system":
        args, text = None, SYSTEM_PROMPT_WITHHELD
    cut = len(text) > EVENT_TEXT_MAX
    # Redacted, then every control, bidi and zero-width character shown as a mark.
    return {
        "index": raw.get("index", 0),
        "kind": visible(redactor(str(raw.get("kind") or ""))),
        "role": visible(redactor(str(raw.get("role") or ""))),
        "tool": visible(redactor(str(raw.get("tool") or ""))),
        "args": visible(redactor(args or "")),
        "text": visible(redactor(text[:EVENT_TEXT_MAX])) + ("\n… (truncated)" if cut else ""),
        "long": len(text) > 600,
    }
