"""Names of the grading side's Celery tasks.

Services send work by name (`current_app.tasks[RUN_GRADER]`) instead of importing
`grading.tasks`, which imports the services: the tasks depend on the services, never back.
The names are stable: queued messages, routes (settings.CELERY_TASK_ROUTES) and the beat
schedule use them.
"""

RUN_GRADER = "grading.run_grader"
REAP_STUCK_RUNS = "grading.reap_stuck_runs"
