"""A worker that consumes no grading queue (the LMS score sends on `lti`) is not in the fleet."""

from __future__ import annotations

from types import SimpleNamespace

from config.celery_app import app
from courseware.fleet.worker_hooks import grades


def _worker(*queues: str) -> SimpleNamespace:
    app.amqp.queues.select(list(queues))
    return SimpleNamespace(app=app)


def test_only_workers_of_their_kinds_queue_grade(settings) -> None:
    settings.GRADERS_WORKER_KIND = "cpu"
    try:
        assert grades(_worker("lti")) is False
        assert grades(_worker("cpu", "lti")) is True
        assert grades(_worker("cuda-h100")) is False
    finally:
        app.amqp.queues.select(list(app.amqp.queues))  # back to consuming every queue
