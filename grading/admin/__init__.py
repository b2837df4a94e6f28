"""The grading admin, one module per kind: rollouts (tasks, runs, groups, attempts), grader runs
(with transcripts and grades; it re-registers groups with their latest verdict), stored
advantages (with the λ-cap report) and API tokens. Importing a module registers its admins."""

from grading.admin import grader, rollouts, tokens, training

__all__ = ["grader", "rollouts", "tokens", "training"]
