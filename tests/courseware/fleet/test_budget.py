"""A student's budget of grading seconds per day: once spent, a new submission is refused at
once with a message saying when it resets; staff and regrades are never held back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.utils import timezone, translation
from pytest_django.fixtures import Settings

from courseware.refusals import Refused
from courseware.submissions.models import Grading, Submission
from courseware.submissions.selectors import grading_budget_for
from courseware.submissions.services import grading_record, submission_claim, submission_regrade
from tests.conftest import Cast
from tests.courseware.fleet.helpers import CODE, REPORT, graded, submit


@pytest.fixture(autouse=True)
def a_minute_a_day(settings: Settings) -> None:
    settings.GRADING_SECONDS_PER_DAY = 60
    settings.TIME_ZONE = "Asia/Shanghai"  # the site's day, whatever the student's zone


def test_a_student_who_spent_the_day_is_refused_until_the_reset_and_nothing_is_saved(
    cast: Cast,
) -> None:
    graded(cast.alice, seconds=25)
    graded(cast.alice, seconds=40)
    budget = grading_budget_for(user=cast.alice)
    assert budget is not None and budget.spent and budget.used_s == 65
    midnight = timezone.localtime(budget.resets_at, timezone.get_default_timezone())
    assert (midnight.hour, midnight.minute) == (0, 0) and budget.resets_at > timezone.now()
    before = Submission.objects.count()
    with pytest.raises(Refused) as refused:
        submit(cast.alice)
    assert refused.value.status_code == 429
    assert "resets on" in refused.value.message and "1 of 1 minutes" in refused.value.message
    assert Submission.objects.count() == before  # refused at once: nothing queued, no attempt
    with translation.override("zh-hans"), pytest.raises(Refused) as in_chinese:
        submit(cast.alice)
    assert "评分时间" in in_chinese.value.message
    submit(cast.bob)  # the others are not held back by alice's day


def test_the_api_answers_429_with_the_message(cast: Cast) -> None:
    graded(cast.alice, seconds=61)
    response = cast.token_client(cast.alice).post(
        "/api/v1/submissions",
        {"exercise": "vector-add", "code": CODE},
        content_type="application/json",
    )
    assert response.status_code == 429 and "resets on" in response.json()["error"]


def test_yesterdays_gradings_do_not_count(cast: Cast) -> None:
    made = graded(cast.alice, seconds=120)
    Grading.objects.filter(submission=made).update(created_at=timezone.now() - timedelta(days=1))
    budget = grading_budget_for(user=cast.alice)
    assert budget is not None and budget.used_s == 0
    submit(cast.alice)


def test_staff_are_not_held_back_and_regrades_cost_the_student_nothing(cast: Cast) -> None:
    graded(cast.tara, seconds=500)
    submit(cast.tara)  # a TA trying an exercise out
    graded(cast.ines, seconds=500)
    submit(cast.ines)

    first = graded(cast.alice, seconds=50)
    with mock.patch("courseware.submissions.services.current_app.send_task"):
        assert submission_regrade(submission=first, requested_by=cast.tara)
    job = submission_claim(submission_id=first.pk)
    assert job is not None
    grading_record(
        submission_id=first.pk,
        report=REPORT,
        run_key=job.claim_token,
        worker="w",
        duration_s=300,
        claim_token=job.claim_token,
    )
    budget = grading_budget_for(user=cast.alice)
    assert budget is not None and budget.used_s == 50  # the regrade's 300 s are not hers
    submit(cast.alice)


def test_no_budget_when_the_setting_is_zero(cast: Cast, settings: Settings) -> None:
    settings.GRADING_SECONDS_PER_DAY = 0
    graded(cast.alice, seconds=10_000)
    assert grading_budget_for(user=cast.alice) is None
    submit(cast.alice)


def test_the_day_is_the_sites_not_the_students(cast: Cast) -> None:
    # 23:30 in Shanghai is 15:30 UTC: the day resets at Shanghai's midnight, half an hour on.
    late_evening = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
    with timezone.override("America/New_York"):
        budget = grading_budget_for(user=cast.alice, now=late_evening)
    assert budget is not None and budget.resets_at - late_evening == timedelta(minutes=30)
