from django.apps import AppConfig


class GradingConfig(AppConfig):
    name = "grading"
    verbose_name = "Rollouts and grading"

    def ready(self) -> None:
        # Registers the Celery tasks in every process, web included: services send them by
        # name (grading/task_names.py) and never import the tasks module themselves.
        from grading import tasks  # noqa: F401
