from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Blind review"

    def ready(self) -> None:
        # Registers the Celery tasks in every process, web included: services send them by
        # name (review/task_names.py) and never import the tasks module themselves.
        from review import tasks  # noqa: F401
