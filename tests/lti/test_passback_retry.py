"""An LMS that is down: a real Celery worker process retries the send with exponential
back-off until the LMS takes it, and gives up (recorded as not sent) after the last retry.

The shared test worker (tests/celery_worker.py) consumes the `cpu` queue, so here the passback
is sent there (LTI_PASSBACK_QUEUE); that it goes to `lti` otherwise is test_passback's."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from courseware.lti.models import ScoreSend, SendStatus
from courseware.submissions.services import override_record
from tests.celery_worker import Worker, wait_for, worker
from tests.lti.conftest import World
from tests.lti.passback_helpers import (
    as_decimal,
    gradebook_text,
    graded,
    launched_student,
    submitted,
)

__all__ = ["worker"]  # the fixture
BACKOFF_S = 0.5

pytestmark = pytest.mark.e2e


def test_a_send_to_a_down_lms_is_retried_with_back_off_then_given_up(
    live_world: World, worker: Worker, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    for name, value in {
        "LTI_PASSBACK_QUEUE": "cpu",
        "LTI_PASSBACK_BACKOFF_S": str(BACKOFF_S),
        "LTI_PASSBACK_MAX_RETRIES": "3",
    }.items():
        monkeypatch.setenv(name, value)  # for the worker process
    settings.LTI_PASSBACK_QUEUE = "cpu"  # for this one, which queues the send
    lms, cast = live_world.lms, live_world.cast
    student, link = launched_student(live_world)
    lms.down_for = 2  # the next two requests to its services answer 503
    submission = submitted(live_world, student)
    graded(submission, 10, "first")
    worker.start()

    sent = wait_for(lambda: ScoreSend.objects.filter(status=SendStatus.SENT).first(), timeout=90)
    assert sent is not None, worker.log()
    assert sent.attempts == 3 and sent.response_status == 204
    tries = [r for r in lms.received("/token")]
    assert [r.status for r in tries] == [503, 503, 200]
    # Each retry waited at least its back-off: 0.5 s, then 1 s (lower bounds only).
    assert tries[1].at - tries[0].at >= 0.9 * BACKOFF_S
    assert tries[2].at - tries[1].at >= 0.9 * 2 * BACKOFF_S
    scores = lms.scores_for(link.lineitem or "", "lms-sam")
    assert [as_decimal(s["scoreGiven"]) for s in scores] == [
        Decimal(gradebook_text(live_world, student))
    ]

    lms.down_for = 1000  # down for good
    override_record(submission=submission, score=Decimal(4), comment="", author=cast.tara)
    failed = wait_for(
        lambda: ScoreSend.objects.filter(status=SendStatus.FAILED).first(), timeout=90
    )
    assert failed is not None, worker.log()
    assert failed.attempts == 4 and failed.response_status == 503  # the first try and 3 retries
    assert failed.detail.startswith("Gave up after 4 attempts")
    assert len(lms.scores_for(link.lineitem or "", "lms-sam")) == 1
