"""Names of the review side's Celery tasks.

Services send work by name (`current_app.tasks[COMPUTE_SNAPSHOT]`) instead of importing
`review.tasks`, which imports the services: the tasks depend on the services, never back.
The names are stable: queued messages and the beat schedule use them.
"""

COMPUTE_SNAPSHOT = "review.compute_snapshot"
REFRESH_SNAPSHOTS = "review.refresh_snapshots"
