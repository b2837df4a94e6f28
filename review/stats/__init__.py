"""Agreement, ranking, bootstrap, consensus, calibration and cost statistics (method §7).

Pure: numpy, scipy and scikit-learn only — no Django, Celery or ORM — so dashboards, exports and
benchmarks can call it with plain arrays. Reference libraries (sklearn, krippendorff, scipy) are
used by the tests to check the vectorised versions here.
"""

from review.stats.agreement import (
    Reliability,
    confusion_matrix,
    criterion_kappas,
    krippendorff_alpha_ordinal,
    rating_pairs,
    raw_agreement,
    weighted_kappa,
)
from review.stats.bootstrap import (
    MIN_TASKS_FOR_INTERVAL,
    TOO_FEW_TASKS,
    BootstrapCI,
    cluster_bootstrap_ci,
    cluster_bootstrap_many,
    interval_shown,
)
from review.stats.calibration import Calibration, calibrate_tiers
from review.stats.claims import ClaimPrecision, claim_precision
from review.stats.consensus import DawidSkene, dawid_skene_one_coin, median_tier
from review.stats.cost import ReviewCostRecord, TierCost, cost_by_tier
from review.stats.headline import criterion_kappas_with_ci, headline_with_ci, kappa_with_ci
from review.stats.ranking import (
    RankingAgreement,
    kendall_tau_b_per_group,
    pad_groups,
    pairwise_concordance,
    ranking_agreement,
)
from review.stats.runs import (
    AttemptStatusRecord,
    AuditCandidate,
    GroupLambdaRecord,
    LambdaCapStats,
    RunAudit,
    StatusRates,
    audit_two_runs,
    lambda_cap_by_step,
    status_rates_by_step,
)

__all__ = [
    "MIN_TASKS_FOR_INTERVAL",
    "TOO_FEW_TASKS",
    "AttemptStatusRecord",
    "AuditCandidate",
    "BootstrapCI",
    "Calibration",
    "ClaimPrecision",
    "DawidSkene",
    "GroupLambdaRecord",
    "LambdaCapStats",
    "RankingAgreement",
    "Reliability",
    "ReviewCostRecord",
    "RunAudit",
    "StatusRates",
    "TierCost",
    "audit_two_runs",
    "calibrate_tiers",
    "claim_precision",
    "cluster_bootstrap_ci",
    "cluster_bootstrap_many",
    "confusion_matrix",
    "cost_by_tier",
    "criterion_kappas",
    "criterion_kappas_with_ci",
    "dawid_skene_one_coin",
    "headline_with_ci",
    "interval_shown",
    "kappa_with_ci",
    "kendall_tau_b_per_group",
    "krippendorff_alpha_ordinal",
    "lambda_cap_by_step",
    "median_tier",
    "pad_groups",
    "pairwise_concordance",
    "ranking_agreement",
    "rating_pairs",
    "raw_agreement",
    "status_rates_by_step",
    "weighted_kappa",
]
