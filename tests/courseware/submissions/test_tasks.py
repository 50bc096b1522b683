"""The Celery task's own logic: skip what is not queued, and blame the grader, not the student."""

from __future__ import annotations

import os
import subprocess
import sys
from unittest import mock

from courseware.submissions.models import Grading, Status, Submission
from courseware.submissions.services import GRADE_TASK_NAME, submission_claim, submission_create
from courseware.submissions.tasks import grade_submission
from graders import GraderError
from tests.conftest import Cast

CODE = "def vector_add(a, b):\n    return a + b\n"


def test_a_grader_that_keeps_breaking_marks_the_submission_failed(cast: Cast) -> None:
    submission = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    with mock.patch("graders.grade", side_effect=GraderError("bwrap missing")) as engine:
        grade_submission.apply(args=(submission.pk,))
    assert engine.call_count == 3  # the first try and two retries
    failed = Submission.objects.get(pk=submission.pk)
    assert failed.status == Status.FAILED
    grading = Grading.objects.get(submission=failed)
    assert grading.gradable is False and "bwrap missing" in grading.report["internal_error"]


def test_a_delivery_of_work_already_taken_does_nothing(cast: Cast) -> None:
    submission = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    submission_claim(submission_id=submission.pk)  # another worker has it
    with mock.patch("graders.grade") as engine:
        grade_submission.apply(args=(submission.pk,))
    engine.assert_not_called()
    assert Grading.objects.count() == 0


def test_big_or_unknown_ids_are_404_not_500(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    assert client.get("/api/v1/submissions/99999999999999999999999").status_code == 404
    client.force_login(cast.alice)
    assert client.get("/submissions/99999999999999999999999/").status_code == 404


def test_the_worker_app_finds_the_tasks_under_the_names_queued_messages_carry() -> None:
    # A fresh interpreter, as a worker starts: the app must find the tasks by autodiscovery
    # alone. Messages queued before the task moved out of graders/ carry these names.
    found = subprocess.run(
        [sys.executable, "-c", FIND_TASKS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
    ).stdout.split()
    assert GRADE_TASK_NAME == "graders.grade_submission"
    assert {"graders.grade_submission", "graders.requeue_stale"} <= set(found)


FIND_TASKS = """
import django
django.setup()
from config.celery_app import app
app.loader.import_default_modules()
print(" ".join(name for name in app.tasks if name.startswith("graders.")))
"""
