"""The Django side of method §7: selectors turning rows into the arrays `review.stats` takes,
the cached dashboard snapshots, human consensus and calibration writers, and exports."""
