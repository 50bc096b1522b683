"""Reports stored by earlier versions of the engine still render, on the page and in the API."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from courseware.submissions.models import Grading, Status, Submission
from courseware.submissions.services import submission_create
from graders.report import schema as report_schema
from tests.conftest import Cast
from tests.graders.test_report_schema import LEGACY


def stored(cast: Cast, report: dict[str, Any], status: Status) -> Submission:
    """A submission whose grading row holds ``report`` exactly as an old worker wrote it."""
    submission = submission_create(
        user=cast.alice, exercise_slug="vector-add", code="def vector_add(a, b): return a + b"
    )
    Submission.objects.filter(pk=submission.pk).update(status=status)
    Grading.objects.create(
        submission=submission,
        run_key=f"old-{submission.pk}",
        verdict=report.get("verdict"),
        gradable=bool(report.get("gradable")),
        report=report,
        content_hash="old",
    )
    return submission


@pytest.mark.parametrize(("name", "status"), [("failure", Status.FAILED), ("code", Status.GRADED)])
def test_an_old_report_renders_and_validates(cast: Cast, name: str, status: Status) -> None:
    submission = stored(cast, LEGACY[name], status)
    client = Client()
    client.force_login(cast.alice)
    page = client.get(f"/submissions/{submission.pk}/")
    assert page.status_code == 200
    assert (LEGACY[name]["message"] or "") in page.content.decode()
    body = client.get(f"/api/v1/submissions/{submission.pk}").json()
    assert report_schema.validate(body["report"]) == []
    assert "internal_error" not in body["report"]  # staff only, old records included
