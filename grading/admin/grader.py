"""Admin for grader configurations, runs (with their transcripts) and grades.

Everything shown comes from models and untrusted text (code, model output): it is escaped by
`format_html`, never marked safe by hand.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from grading.admin.data_version import VersionedAdmin
from grading.admin.rollouts import GroupAdmin
from grading.models import (
    Attempt,
    CandidateGrade,
    GraderApproval,
    GraderConfig,
    GraderEvent,
    GraderFit,
    GraderRun,
    Group,
)
from grading.selectors.gate import grader_approval_state, grader_fit_version
from grading.selectors.grader import grader_run_transcript
from grading.selectors.synthetic import run_is_synthetic
from grading.services.grader_runs import grader_runs_regrade

SHOWN_CHARS = 6_000


def _pre(text: str, limit: int = SHOWN_CHARS) -> SafeString:
    if len(text) > limit:
        text = text[:limit] + f"\n[… {len(text) - limit} more characters]"
    # A class, not a style attribute: the CSP allows no inline styles (static/css/admin.css).
    return format_html('<pre class="gagar-pre transcript">{}</pre>', text)


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True)


def _change_link(obj: Any, label: str) -> SafeString:
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label)


@admin.register(GraderConfig)
class GraderConfigAdmin(VersionedAdmin[GraderConfig]):
    list_display = [
        "name", "backend", "model", "base_url", "prompt_version", "temperature", "seed",
        "max_usd_per_run", "max_usd_per_day", "current_fit", "approval",
    ]  # fmt: skip
    list_filter = ["backend"]
    search_fields = ["name", "model"]
    readonly_fields = ["current_fit", "approval"]

    @admin.display(description="fit")
    def current_fit(self, obj: GraderConfig) -> str:
        return grader_fit_version(config=obj) or "—"

    @admin.display(description="approved for training")
    def approval(self, obj: GraderConfig) -> str:
        state = grader_approval_state(config=obj)
        return f"{'yes' if state.approved else 'no'}: {state.reason}"


@admin.register(GraderFit)
class GraderFitAdmin(admin.ModelAdmin[GraderFit]):
    """Fitted analysis-grader artefacts: made by `manage.py grader_fit`, never edited here."""

    list_display = ["version", "config", "campaigns", "created_at"]
    list_filter = ["config"]
    search_fields = ["version", "config__name"]
    fields = readonly_fields = (
        "config", "version", "campaigns", "created_at", "weights", "held_out_figures", "artefact",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: GraderFit | None = None) -> bool:
        return False

    @admin.display(description="weights and tier cuts (reference mode)")
    def weights(self, obj: GraderFit) -> SafeString:
        model = (obj.fit or {}).get("reference", {})
        rows = sorted((model.get("weights") or {}).items(), key=lambda kv: -kv[1])
        text = f"cuts {model.get('cuts')}\n" + "\n".join(f"{k}: {v:.4f}" for k, v in rows if v)
        return _pre(text)

    @admin.display(description="held-out figures")
    def held_out_figures(self, obj: GraderFit) -> SafeString:
        return _pre(_json(obj.held_out))

    @admin.display(description="artefact (gagar.analysis-fit.v1)")
    def artefact(self, obj: GraderFit) -> SafeString:
        return _pre(_json(obj.fit))


@admin.register(GraderApproval)
class GraderApprovalAdmin(admin.ModelAdmin[GraderApproval]):
    """Gate decisions: made by `manage.py grader_eval --approve`, kept as a record."""

    list_display = ["config", "passed", "basis", "fit_version", "campaigns", "created_at"]
    list_filter = ["passed", "basis", "config"]
    fields = readonly_fields = (
        "config", "passed", "basis", "fit_version", "campaigns", "thresholds", "failures",
        "decided_by", "created_at", "figures_shown",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: GraderApproval | None = None
    ) -> bool:
        return False

    @admin.display(description="figures")
    def figures_shown(self, obj: GraderApproval) -> SafeString:
        return _pre(_json(obj.figures))


class CandidateGradeInline(admin.TabularInline[CandidateGrade, GraderRun]):
    model = CandidateGrade
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "attempt_link",
        "tier",
        "rank_in_tier",
        "weighted_score",
        "exploit",
        "summary",
    )
    ordering = ["tier", "rank_in_tier"]

    # Not Django's boolean icon: a green check for "exploit suspected" reads as "all good".
    @admin.display(description="exploit suspected")
    def exploit(self, obj: CandidateGrade) -> str:
        return "⚠ suspected" if obj.exploit_suspected else "—"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="attempt")
    def attempt_link(self, obj: CandidateGrade) -> SafeString:
        return _change_link(obj.attempt, obj.attempt.external_id)

    def get_queryset(self, request: HttpRequest) -> QuerySet[CandidateGrade]:
        return super().get_queryset(request).select_related("attempt")


@admin.action(description="Grade again (failed: retry; succeeded: a new replica)")
def grade_again(admin_: Any, request: HttpRequest, queryset: QuerySet[GraderRun]) -> None:
    runs = grader_runs_regrade(runs=queryset.select_related("group", "config"))
    admin_.message_user(request, f"{len(runs)} grader runs sent to the workers.", messages.SUCCESS)


@admin.register(GraderRun)
class GraderRunAdmin(VersionedAdmin[GraderRun]):
    list_display = [
        "id", "status", "group", "synthetic", "config", "replica", "source", "latency_s",
        "input_tokens",
        "output_tokens", "llm_calls", "tool_calls", "deliveries", "short_reason", "created_at",
    ]  # fmt: skip
    list_filter = ["status", "config", "has_source"]
    list_select_related = ["group__task", "group__step__run", "config"]
    search_fields = ["group__task__external_id", "failure_reason"]
    actions = [grade_again]
    inlines = [CandidateGradeInline]
    exclude = ["verdict", "alias_map", "problems", "group"]
    readonly_fields = [
        "group_link", "config", "replica", "status", "deliveries", "claimed_by", "heartbeat_at",
        "started_at", "finished_at", "failure_reason", "latency_s", "prompt_version",
        "fit_version", "input_tokens", "cached_input_tokens", "output_tokens", "usage_estimated",
        "peak_context_tokens", "abandoned_input_tokens", "abandoned_output_tokens",
        "abandoned_cost_usd", "llm_calls", "tool_calls", "cost_usd", "created_at",
        "problem_list", "has_source", "source_note", "verdict_view", "transcript",
    ]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="source", ordering="has_source")
    def source(self, obj: GraderRun) -> str:
        # A run without the repository judged from diffs alone: say so beside its verdict.
        if obj.has_source is None:
            return "—"
        return "repository" if obj.has_source else "no source"

    @admin.display(description="synthetic", boolean=True)
    def synthetic(self, obj: GraderRun) -> bool:
        # A run on a `demo --study` group grades demo data, never an agent's rollout.
        return run_is_synthetic(obj.group.step.run)

    @admin.display(description="failure reason")
    def short_reason(self, obj: GraderRun) -> str:
        return obj.failure_reason[:120]

    @admin.display(description="group")
    def group_link(self, obj: GraderRun) -> SafeString:
        return _change_link(obj.group, str(obj.group))

    @admin.display(description="problems of the last rejected submission")
    def problem_list(self, obj: GraderRun) -> SafeString:
        return _pre("\n".join(obj.problems)) if obj.problems else format_html("{}", "—")

    @admin.display(description="verdict")
    def verdict_view(self, obj: GraderRun) -> SafeString:
        verdict = obj.verdict
        if not verdict:
            return format_html("{}", "no verdict: the group falls back to plain GRPO")
        names = dict(Attempt.objects.filter(group=obj.group).values_list("pk", "external_id"))
        aliases = {key: alias for alias, key in obj.alias_map.items()}

        def who(key: str) -> str:
            ext = names.get(int(key)) if key.isdigit() else None
            return f"{ext or key} ({aliases.get(key, '?')})"

        cands = verdict["candidates"]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>T{} #{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    who(key), cands[key]["tier"], cands[key]["rank_in_tier"],
                    cands[key]["weighted_score"], "yes" if cands[key]["exploit_suspected"] else "",
                    _scores(cands[key]), _issues(cands[key]),
                )
                for key in verdict.get("ordering", [])
                if key in cands
            ),
        )  # fmt: skip
        evidence = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td></tr>",
            ((eid, _evidence(ev, who)) for eid, ev in verdict.get("evidence", {}).items()),
        )
        return format_html(
            "<p>Ordering: {} · confidence {} · ties {}</p>"
            "<table><tr><th>candidate (alias)</th><th>tier</th><th>weighted</th>"
            "<th>exploit?</th><th>scores</th><th>severe issues · summary</th></tr>{}</table>"
            "<h4>Evidence</h4><table>{}</table><h4>Reorder notes</h4>{}",
            " > ".join(who(k) for k in verdict.get("ordering", [])),
            verdict.get("confidence"),
            _json(verdict.get("ties", [])),
            rows,
            evidence,
            _pre(_json(verdict.get("reorder_notes", []))),
        )

    @admin.display(description="transcript")
    def transcript(self, obj: GraderRun) -> SafeString:
        events = list(grader_run_transcript(run=obj))
        if not events:
            return format_html("{}", "no events")
        return format_html_join("", "{}", ((_event(e),) for e in events))


def _scores(cand: dict[str, Any]) -> SafeString:
    return format_html_join(
        "",
        "<div><b>{}</b> {}: {} <small>{}</small></div>",
        (
            (name, s["score"], s.get("rationale", ""), " ".join(s.get("evidence", [])))
            for name, s in cand["scores"].items()
        ),
    )


def _issues(cand: dict[str, Any]) -> SafeString:
    issues = format_html_join(
        "",
        "<div><b>{}</b>: {} <small>{}</small></div>",
        (
            (i["category"], i["description"], " ".join(i.get("evidence", [])))
            for i in cand.get("severe_issues", [])
        ),
    )
    return format_html("{}<div>{}</div>", issues, cand.get("summary", ""))


def _evidence(ev: dict[str, Any], who: Any) -> str:
    cand = ev.get("candidate", "")
    where = who(cand) if cand and cand != "base" else (cand or "")
    if ev.get("type") == "code":
        return f"code · {where} · {ev['path']}:{ev['line_start']}-{ev['line_end']} ({ev['side']})"
    if ev.get("type") == "trajectory":
        return f"trajectory · {where} · event #{ev['event_index']}"
    return f"execution · {where} · `{ev.get('command')}` → exit {ev.get('exit_code')}"


def _event(e: GraderEvent) -> SafeString:
    args = e.arguments or {}
    if e.kind == GraderEvent.Kind.LLM_CALL:
        sent = format_html_join(
            "",
            "<div><b>{}</b>{}</div>",
            (
                (m.get("role", ""), _pre(str(m.get("content") or "")))
                for m in args.get("messages_in", [])
            ),
        )
        out = args.get("message_out") or {}
        calls = _json(out.get("tool_calls") or [])
        return format_html(
            "<details><summary>#{} LLM call {} · {} in / {} out tokens · {} s</summary>"
            "{}<div><b>assistant</b>{}{}</div></details>",
            e.seq, e.name, e.input_tokens, e.output_tokens, e.latency_s,
            sent, _pre(str(out.get("content") or "")), _pre(calls),
        )  # fmt: skip
    exit_code = "" if e.exit_code is None else f" · exit {e.exit_code}"
    error = " · error" if args.get("is_error") else ""
    return format_html(
        "<details><summary>#{} tool {}{}{} · {} s</summary>{}{}</details>",
        e.seq, e.name, exit_code, error, round(e.latency_s, 4),
        _pre(_json(args.get("arguments")), 2000), _pre(e.output),
    )  # fmt: skip


class LatestVerdictInline(admin.TabularInline[GraderRun, Group]):
    """Every grader run of the group, newest first, with a link to its verdict and transcript."""

    model = GraderRun
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = "grader runs (verdicts)"
    fields = readonly_fields = (
        "config", "replica", "status", "top_candidates", "failure_reason", "finished_at",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="tiers")
    def top_candidates(self, obj: GraderRun) -> str:
        grades = sorted(obj.grades.all(), key=lambda g: (g.tier, g.rank_in_tier))
        return ", ".join(
            f"{g.attempt.external_id} T{g.tier}{'!' if g.exploit_suspected else ''}" for g in grades
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[GraderRun]:
        return (
            super()
            .get_queryset(request)
            .select_related("config")
            .defer("verdict", "alias_map", "problems")
            .prefetch_related("grades__attempt")
        )


class GroupWithGradingAdmin(GroupAdmin):
    # A subclass re-registered here keeps admin/rollouts.py free of grader imports.
    inlines = [*GroupAdmin.inlines, LatestVerdictInline]


admin.site.unregister(Group)
admin.site.register(Group, GroupWithGradingAdmin)
