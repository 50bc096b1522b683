"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("courseware")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Finds each installed app's tasks.py: courseware/submissions/tasks.py is the bridge between
# Django and the grading engine, which itself knows nothing of Django or Celery.
app.autodiscover_tasks()


@worker_process_init.connect
def sweep_sandbox_groups(**_: object) -> None:
    """A worker that died mid-grading may have left its sandbox's cgroups behind, frozen and
    with student processes in them: remove those whose owning worker is gone."""
    from graders.sandbox.containment import sweep_stale_groups

    sweep_stale_groups()


@worker_init.connect
def keep_sandboxes_warm(**_: object) -> None:
    """A grading worker keeps its next sandboxes started ahead (graders/grading/warm.py); set
    GRADERS_WARM=0 in its environment to start every sandbox at its grading instead. Set in
    the main process, so prefork children inherit it and a solo pool (GPU workers) has it."""
    os.environ.setdefault("GRADERS_WARM", "1")


@worker_process_shutdown.connect
@worker_shutdown.connect
def stop_warm_sandboxes(**_: object) -> None:
    """Prefork children get the first signal, a solo pool's one process the second."""
    from graders.grading import warm

    warm.close_all()
