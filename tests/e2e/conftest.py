"""The end-to-end tests' worker: a real Celery process on the real broker."""

from tests.celery_worker import worker

__all__ = ["worker"]
