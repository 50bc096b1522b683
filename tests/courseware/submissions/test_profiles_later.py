"""Profiles left for later (courseware/submissions/profiles_later.py): claimed once, taken
again after a dead worker's claim expires, sent again by the sweep, and taken by the task
through the real sandbox once nothing of the kind is queued."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings

from courseware.fleet import recovery
from courseware.submissions import profiles_later
from courseware.submissions.models import Grading, Submission
from courseware.submissions.services import (
    Holder,
    grading_attach_profile,
    grading_record,
    submission_claim,
)
from courseware.submissions.tasks import take_waiting_profiles
from tests.conftest import Cast
from tests.courseware.fleet.helpers import REPORT, submit

SEND = "courseware.submissions.profiles_later.current_app.send_task"


@pytest.fixture(autouse=True)
def no_budget(settings: Settings) -> None:
    settings.GRADING_SECONDS_PER_DAY = 0


def graded_later(submission: Submission) -> Grading:
    """Graded by a worker that left the profile for later, as in a rush."""
    job = submission_claim(submission_id=submission.pk, holder=Holder("cpu-0@node-a", 1))
    assert job is not None
    grading = grading_record(
        submission_id=submission.pk,
        report=REPORT,
        run_key=job.claim_token,
        worker="w",
        duration_s=1.0,
        claim_token=job.claim_token,
        profile_pending=True,
    )
    assert grading is not None
    return grading


def test_a_waiting_profile_is_claimed_once_and_its_profile_clears_it(cast: Cast) -> None:
    first, second = graded_later(submit(cast.alice)), graded_later(submit(cast.bob))
    assert profiles_later.waiting_exists(kind="cpu")
    assert not profiles_later.waiting_exists(kind="cuda-h100")
    taken = profiles_later.take_waiting(kind="cpu")
    assert taken is not None and taken.run_key == first.run_key  # oldest first
    assert taken.engine_device == "cpu" and "vector_add" in taken.source
    assert (taken.folder / "exercise.toml").is_file()
    again = profiles_later.take_waiting(kind="cpu")
    assert again is not None and again.run_key == second.run_key
    assert profiles_later.take_waiting(kind="cpu") is None  # both claimed
    row = {"name": "aten::add", "calls": 1, "self_time_s": 0.01}
    assert grading_attach_profile(run_key=first.run_key, profile=[row])
    first.refresh_from_db()
    assert not first.profile_pending and first.report["profile"] == [row]


def test_a_dead_workers_claim_expires_and_the_sweep_sends_the_task_again(cast: Cast) -> None:
    grading = graded_later(submit(cast.alice))
    assert profiles_later.take_waiting(kind="cpu") is not None
    with mock.patch(SEND) as send:
        recovery.sweep()
    send.assert_not_called()  # claimed a moment ago: its worker may be at it
    long_ago = timezone.now() - profiles_later.CLAIM_EXPIRES - timedelta(seconds=1)
    Grading.objects.filter(pk=grading.pk).update(profile_claimed_at=long_ago, created_at=long_ago)
    with mock.patch(SEND) as send:
        recovery.sweep()
    send.assert_called_once_with(profiles_later.PROFILE_TASK_NAME, args=["cpu"], queue="cpu")
    taken = profiles_later.take_waiting(kind="cpu")
    assert taken is not None and taken.run_key == grading.run_key


def test_the_task_leaves_them_while_a_submission_waits_and_comes_back_after(
    cast: Cast,
) -> None:
    grading = graded_later(submit(cast.alice))
    submit(cast.bob)  # queued: its grade comes first
    with mock.patch(SEND) as send:
        assert take_waiting_profiles("cpu") == 0
    send.assert_called_once_with(profiles_later.PROFILE_TASK_NAME, args=["cpu"], queue="cpu")
    grading.refresh_from_db()
    assert grading.profile_pending and grading.profile_claimed_at is None


def test_the_task_takes_the_profile_in_the_real_sandbox(cast: Cast) -> None:
    grading = graded_later(submit(cast.alice))
    with mock.patch(SEND) as send:
        assert take_waiting_profiles("cpu") == 1
    send.assert_not_called()  # nothing left
    grading.refresh_from_db()
    assert not grading.profile_pending
    rows = grading.report["profile"]
    assert rows and any("add" in row["name"] for row in rows), rows
    assert grading.report["score"] == REPORT["score"]  # the grade is untouched


def test_the_report_page_says_the_profile_follows(cast: Cast) -> None:
    grading = graded_later(submit(cast.alice))
    client = Client()
    client.force_login(cast.alice)
    page = client.get(f"/submissions/{grading.submission_id}/").content.decode()
    assert 'id="profile-pending"' in page and "Your grade is final" in page
    chinese = client.get(f"/submissions/{grading.submission_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "你的成绩已经确定" in chinese.content.decode()
    row = {"name": "aten::add", "calls": 1, "self_time_s": 0.01}
    grading_attach_profile(run_key=grading.run_key, profile=[row])
    page = client.get(f"/submissions/{grading.submission_id}/").content.decode()
    assert 'id="profile-pending"' not in page and "aten::add" in page
