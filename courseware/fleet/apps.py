from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "courseware.fleet"
    label = "fleet"

    def ready(self) -> None:
        # Celery's worker signals; in a web process they are connected and never sent.
        from courseware.fleet import worker_hooks  # noqa: F401
