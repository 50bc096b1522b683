"""The Celery app. Settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("courseware")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Finds each installed app's tasks.py: courseware/submissions/tasks.py is the bridge between
# Django and the grading engine, which itself knows nothing of Django or Celery.
app.autodiscover_tasks()
