"""Reads of grading data, one module per kind: rollouts, the API's lists, grader runs, the ops
page, training (advantages and exports)."""
