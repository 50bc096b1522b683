"""Grade passback: after a grade, a regrade and an override, the LMS line item gets exactly the
score the gradebook shows; each send is recorded and shown to the TAs."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.test import Client
from django.utils import timezone

from config.celery_app import app
from courseware.courses.models import ItemPolicy
from courseware.lti.models import ScoreSend, SendReason, SendStatus
from courseware.submissions.services import (
    override_record,
    submission_claim,
    submission_regrade,
)
from tests.lti.conftest import World
from tests.lti.passback_helpers import (
    as_decimal,
    gradebook_text,
    graded,
    launched_student,
    run_lti_queue,
    submitted,
)


def test_the_passback_task_is_routed_to_the_lti_queue_not_a_grading_one() -> None:
    route = app.amqp.router.route({}, "lti.send_score")
    assert route["queue"].name == settings.LTI_PASSBACK_QUEUE == "lti"


def test_a_grade_a_regrade_and_an_override_each_send_the_gradebooks_score(
    live_world: World,
) -> None:
    lms, cast = live_world.lms, live_world.cast
    student, link = launched_student(live_world)
    # Late by a day at 12.5% a day: 9.5 → 8.3125, which the gradebook shows as 8.31.
    ItemPolicy.objects.create(
        offering=cast.offering,
        item=cast.item,
        due_at=timezone.now() - timedelta(days=1),
        late_until=timezone.now() + timedelta(days=5),
        late_penalty_per_day=Decimal("0.125"),
    )
    submission = submitted(live_world, student, late_days=1)

    graded(submission, 9.5, "first")
    assert run_lti_queue() == ["lti.send_score"]
    sent = lms.scores_for(link.lineitem, "lms-sam")
    assert gradebook_text(live_world, student) == "8.31"
    assert as_decimal(sent[-1]["scoreGiven"]) == Decimal("8.31")
    assert sent[-1]["scoreMaximum"] == 10 and sent[-1]["gradingProgress"] == "FullyGraded"

    submission_regrade(submission=submission, requested_by=cast.tara)
    submission_claim(submission_id=submission.pk)
    graded(submission, 6, "regrade")
    run_lti_queue()
    assert gradebook_text(live_world, student) == "5.25"  # 6 × 0.875
    assert as_decimal(lms.scores_for(link.lineitem, "lms-sam")[-1]["scoreGiven"]) == Decimal("5.25")

    override_record(submission=submission, score=Decimal("7.5"), comment="ok", author=cast.tara)
    run_lti_queue()
    assert gradebook_text(live_world, student) == "7.5"
    assert as_decimal(lms.scores_for(link.lineitem, "lms-sam")[-1]["scoreGiven"]) == Decimal("7.5")

    sends = list(ScoreSend.objects.order_by("id"))
    assert [s.reason for s in sends] == [
        SendReason.GRADED,
        SendReason.REGRADED,
        SendReason.OVERRIDDEN,
    ]
    assert all(
        (s.status, s.attempts, s.response_status) == (SendStatus.SENT, 1, 204) for s in sends
    )
    assert [str(s.score_given.normalize()) for s in sends if s.score_given] == [
        "8.31",
        "5.25",
        "7.5",
    ]
    assert len(lms.scores_for(link.lineitem, "lms-sam")) == 3 and lms.ignored_scores == []

    # The TA sees what was sent and when, from the gradebook.
    ta = Client()
    ta.force_login(cast.tara)
    gradebook = ta.get(f"/gradebook/{cast.offering.pk}/").content.decode()
    assert f'href="/lti/offering/{cast.offering.pk}/#sends"' in gradebook
    page = ta.get(f"/lti/offering/{cast.offering.pk}/").content.decode()
    table = page[page.index('id="lti-sends"') :]
    for shown in (
        "8.31&nbsp;/&nbsp;10",
        "5.25&nbsp;/&nbsp;10",
        "7.5&nbsp;/&nbsp;10",
        "score overridden",
        "regraded",
    ):
        assert shown in table
    assert table.count('data-status="sent"') == 3


def test_a_student_of_no_lms_and_an_unlinked_item_send_nothing(live_world: World) -> None:
    cast = live_world.cast
    launched_student(live_world)
    graded(submitted(live_world, cast.alice), 10, "alice")  # alice never came from the LMS
    assert run_lti_queue() == [] and not ScoreSend.objects.exists()
