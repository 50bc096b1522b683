"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery
from celery.signals import worker_process_init

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
    from graders.containment import sweep_stale_groups

    sweep_stale_groups()
