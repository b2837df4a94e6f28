"""The analysis grader: a deterministic engine that grades a group's passing patches the way a
reviewer reads them, with weights and tier cuts fitted from human labels (see README, "Analysis
grader engine"). Pure: no Django, Celery or network; a repository mirror is only ever read
through the optional `AnalysisInput.read_base` callable.

    result = analyse_group(AnalysisInput(candidates, reference_patch, problem_statement, ...))
    verdict = to_verdict(result, aliases)      # gagar.verdict.v1, evidence from the diffs
"""

from grading.grader.analysis.engine import CandidateResult, Contribution, GroupResult, analyse_group
from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch, CodeRef
from grading.grader.analysis.model import Fit, FitError, LinearModel, load_default_fit
from grading.grader.analysis.verdict import to_verdict

__all__ = [
    "AnalysisInput",
    "CandidatePatch",
    "CandidateResult",
    "CodeRef",
    "Contribution",
    "Fit",
    "FitError",
    "GroupResult",
    "LinearModel",
    "analyse_group",
    "load_default_fit",
    "to_verdict",
]
