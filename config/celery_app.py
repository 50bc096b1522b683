"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("courseware")
app.config_from_object("django.conf:settings", namespace="CELERY")
# graders/tasks.py is the only bridge between the engine and Django.
app.autodiscover_tasks(["graders"])
