"""One reader per trajectory format; `grading.domain.trajectories` is the public entry point."""
