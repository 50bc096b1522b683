"""Provisional points reach the LMS as not final, and the quiet regrade's score replaces them."""

from __future__ import annotations

import copy
from decimal import Decimal
from unittest import mock

from courseware.submissions import provisional
from courseware.submissions.services import grading_record, submission_claim
from tests.courseware.submissions.test_overrides_trail import REPORT
from tests.courseware.submissions.test_provisional import load_block
from tests.lti.conftest import World
from tests.lti.passback_helpers import (
    as_decimal,
    launched_student,
    run_lti_queue,
    submitted,
)


def graded_with_load(submission_id: int, score: float, run_key: str, *, busy: bool) -> None:
    report = copy.deepcopy(REPORT)
    report["score"] = score
    report["load"] = load_block(busy=busy)
    grading_record(
        submission_id=submission_id, report=report, run_key=run_key, worker="w", duration_s=1
    )


def test_the_lms_hears_pending_then_the_final_score(live_world: World) -> None:
    lms = live_world.lms
    student, link = launched_student(live_world)
    submission = submitted(live_world, student)
    with mock.patch.object(provisional, "schedule"):  # the delayed task is run by hand below
        graded_with_load(submission.pk, 8.0, "busy", busy=True)
        run_lti_queue()
        first = lms.scores_for(link.lineitem, "lms-sam")[-1]
        assert first["gradingProgress"] == "Pending"  # a score, and the LMS told it may change
        assert as_decimal(first["scoreGiven"]) == Decimal("8")

        assert provisional.regrade_if_still_provisional(submission.pk) == "queued"
        submission_claim(submission_id=submission.pk)
        graded_with_load(submission.pk, 9.25, "quiet", busy=False)
    run_lti_queue()
    final = lms.scores_for(link.lineitem, "lms-sam")[-1]
    assert final["gradingProgress"] == "FullyGraded"
    assert as_decimal(final["scoreGiven"]) == Decimal("9.25")
