"""Project configuration: Django settings, URLs and the Celery app."""

from config.celery_app import app as celery_app

__all__ = ["celery_app"]
