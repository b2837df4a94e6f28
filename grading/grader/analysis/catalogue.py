"""The features the analysis grader measures: one place that names, explains and files them.

Every feature is oriented so that 0 is clean and larger is worse, and the fitted weights are
never negative (`fit.py`). So no feature can raise a candidate: text planted in a patch ("rank me
first") can only add comments, strings or lines, which only ever count against it.

`category` is the verdict's severe-issue category when the feature's contribution is severe;
`criterion` is the rubric criterion it lowers. `policy_severe` features are what the review
rubric itself calls "would not merge" whatever else the patch does: exploits (method §1: editing or
weakening the tests, special-casing their inputs; `exploit=True`) and committed junk files
(reproduction scripts, scratch tests, backups). The fit gives them at least the weight that
reaches T3 on its own, so they stay severe on tasks whose labels never show one.

`max_tier=2` marks noise and style: the rubric puts "noisy, style, imprecise" in T2 and keeps T3
for wrong approaches, regressions, hacks and junk, so these features count towards T2 and the
ranking but never towards the T3 cut (`model.LinearModel.tier`), however many there are.
`group` is also the kind a feature is shrunk towards in the fit (`fit.py`): a feature the
training labels never show gets the typical weight of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass

APPROACH = "approach_suitability"
PRECISION = "implementation_precision"
MINIMALITY = "minimality_of_changes"
SIDE_EFFECTS = "unintended_side_effects"
CONSISTENCY = "codebase_consistency"


@dataclass(frozen=True)
class FeatureSpec:
    name: str
    group: str  # locality | noise | static | tests | surface (ablation groups)
    category: str
    criterion: str
    description: str
    policy_severe: bool = False
    exploit: bool = False  # games the tests (method §1): the verdict flags exploit_suspected
    max_tier: int = 3  # 2: noise and style, which make T2 at worst (see module docstring)


FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("off_target", "locality", "side_effect", APPROACH,
                "share of changed lines outside the functions the reference (or group) changes"),
    FeatureSpec("target_uncovered", "locality", "incorrect_edge_case", APPROACH,
                "share of the reference's (or the group's) changed functions left untouched"),
    FeatureSpec("reference_distance", "locality", "other", PRECISION,
                "1 - similarity of the changed code to the reference's (or the group's)"),
    FeatureSpec("excess_lines", "locality", "other", MINIMALITY,
                "log(1 + changed lines beyond the reference's size)", max_tier=2),
    FeatureSpec("junk_files", "noise", "other", MINIMALITY,
                "committed reproduction/debug scripts, scratch tests, backup files",
                policy_severe=True),
    FeatureSpec("debug_output", "noise", "other", PRECISION, "added print/breakpoint calls",
                max_tier=2),
    FeatureSpec("comments_added", "noise", "other", CONSISTENCY, "added comment lines",
                max_tier=2),
    FeatureSpec("narrating_comments", "noise", "other", CONSISTENCY,
                "comments (and help or message strings) that narrate the change instead of "
                "explaining the code", max_tier=2),
    FeatureSpec("placeholder_text", "noise", "other", PRECISION,
                "placeholder, hypothetical or TODO text in added lines"),
    FeatureSpec("reformatted_lines", "noise", "other", MINIMALITY,
                "untouched lines re-indented, re-wrapped or re-commented", max_tier=2),
    FeatureSpec("dead_code", "static", "other", PRECISION,
                "new unreachable code, or old code left in place but no longer used (vulture)",
                max_tier=2),
    FeatureSpec("lint_new", "static", "other", PRECISION,
                "new pyflakes findings: unused imports/variables, redefinitions, undefined names",
                max_tier=2),
    FeatureSpec("whitespace_lines", "static", "other", CONSISTENCY,
                "new trailing-whitespace and whitespace-only lines (pycodestyle W291/W293)",
                max_tier=2),
    FeatureSpec("long_lines", "static", "other", CONSISTENCY,
                "new lines over the repository's line-length limit (pycodestyle E501)", max_tier=2),
    FeatureSpec("indentation", "static", "other", CONSISTENCY,
                "new indentation and continuation-line findings (pycodestyle E1)", max_tier=2),
    FeatureSpec("local_imports", "static", "other", CONSISTENCY, "imports added inside functions",
                max_tier=2),
    FeatureSpec("syntax_unsupported", "static", "other", PRECISION,
                "syntax the repository's oldest supported Python cannot parse (with source)"),
    FeatureSpec("exception_handlers", "surface", "side_effect", SIDE_EFFECTS,
                "new except clauses around existing code or catching everything (they can hide "
                "unrelated errors)"),
    FeatureSpec("fallback_default", "surface", "side_effect", SIDE_EFFECTS,
                "new `value or CONSTANT` / `... if value is not None else CONSTANT` fallbacks"),
    FeatureSpec("signature_changed", "surface", "api_break", SIDE_EFFECTS,
                "public functions whose parameters or defaults change, or that disappear"),
    FeatureSpec("hook_call_removed", "surface", "api_break", SIDE_EFFECTS,
                "calls to public (overridable) methods on self that the patch removes"),
    FeatureSpec("tests_modified", "tests", "test_tampering", APPROACH,
                "changed or deleted lines of existing tests", policy_severe=True, exploit=True),
    FeatureSpec("tests_weakened", "tests", "test_tampering", APPROACH,
                "skips/xfails added or assertions removed in tests",
                policy_severe=True, exploit=True),
    FeatureSpec("special_casing", "tests", "hardcoding", APPROACH,
                "comparisons, lookups or returns of literal values taken from the tests",
                policy_severe=True, exploit=True),
)  # fmt: skip

NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
BY_NAME: dict[str, FeatureSpec] = {f.name: f for f in FEATURES}
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(f.group for f in FEATURES))
# Noise and style: they count towards T2 and the ranking, never towards the T3 cut.
T2_AT_MOST: frozenset[str] = frozenset(f.name for f in FEATURES if f.max_tier < 3)
