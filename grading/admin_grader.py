"""Admin for grader configurations, runs (with their transcripts) and grades."""
