"""Every change to a score leaves a trail: who, when, why; and the admin cannot fake one."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.template.defaultfilters import date
from django.test import RequestFactory
from django.utils.timezone import localtime

from courseware.submissions.models import Grading, Override, Submission
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from tests.conftest import Cast
from tests.courseware.submissions.test_notebook_review import logged_in, waiting_notebook

REPORT = upgrade(
    {
        "exercise": "vector-add",
        "exercise_hash": "h",
        "verdict": "correct",
        "score": 10,
        "max_score": 10,
        "gradable": True,
        "flags": [],
    }
)


@pytest.fixture
def graded(cast: Cast) -> Submission:
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code="x = 1")
    submission_claim(submission_id=made.pk)
    grading_record(submission_id=made.pk, report=REPORT, run_key="r1", worker="gpu-7", duration_s=1)
    return Submission.objects.get(pk=made.pk)


def test_staff_see_the_override_with_its_author_time_and_comment(cast: Cast, graded) -> None:
    logged_in(cast.tara).post(
        f"/submissions/{graded.pk}/override", {"score": "7", "comment": "Copied the reference."}
    )
    override = Override.objects.get()
    html = logged_in(cast.ines).get(f"/submissions/{graded.pk}/").content.decode()
    assert 'id="overridden-badge"' in html
    staff = html[html.index('id="staff-override"') :]
    assert "Current override: 7, set by tara" in staff and "Copied the reference." in staff
    trail = html[html.index('id="score-trail"') :]
    assert "Score overridden" in trail and "tara" in trail and "Copied the reference." in trail
    assert f'datetime="{date(localtime(override.created_at), "c")}"' in trail
    assert "Autograded: Correct" in trail and "worker gpu-7" in trail
    assert "gradings so far" not in html


def test_the_student_sees_what_people_did_to_their_score_not_the_workers(cast: Cast) -> None:
    submission = waiting_notebook(cast.alice)
    ta = logged_in(cast.tara)
    ta.post(
        f"/submissions/{submission.pk}/hand-grades",
        {"score-explain": "2", "comment-explain": "Explain the memory traffic."},
    )
    ta.post(f"/submissions/{submission.pk}/override", {"score": "9", "comment": "By hand."})
    html = logged_in(cast.alice).get(f"/submissions/{submission.pk}/").content.decode()
    trail = html[html.index('id="score-trail"') :]
    assert "Changes a person made to your score" in html
    assert "Hand grade for cell explain" in trail and "Explain the memory traffic." in trail
    assert "Score overridden" in trail and "By hand." in trail
    assert "Autograded" not in trail and "worker" not in trail
    assert 'id="overridden-badge"' in html and 'id="staff-override"' not in html


def test_without_changes_by_people_the_student_sees_no_trail(cast: Cast, graded) -> None:
    html = logged_in(cast.alice).get(f"/submissions/{graded.pk}/").content.decode()
    assert 'id="score-trail"' not in html and 'id="overridden-badge"' not in html


def test_rows_read_as_what_they_are(cast: Cast, graded) -> None:
    assert str(graded) == f"vector-add #{graded.pk} by alice (graded)"
    assert str(graded.gradings.get()) == f"grading 1 of vector-add #{graded.pk}"


def test_the_admin_cannot_add_or_change_gradings_or_overrides(cast: Cast, graded) -> None:
    admin_user = User.objects.create_superuser("root", "root@example.com", "pw")
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    grading = graded.gradings.get()
    for model in (Grading, Override):
        model_admin = site._registry[model]
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request, None)
    client = logged_in(admin_user)
    assert client.get("/admin/submissions/grading/add/").status_code == 403
    page = client.get(f"/admin/submissions/grading/{grading.pk}/change/")
    assert page.status_code == 200 and 'name="score"' not in page.content.decode()
    response = client.post(f"/admin/submissions/grading/{grading.pk}/change/", {"score": "0"})
    assert response.status_code == 403
    assert Grading.objects.get(pk=grading.pk).score == 10


@pytest.mark.parametrize("typed", ["NaN", "sNaN", "Infinity", "-1", "1e999"])
def test_a_score_that_is_not_a_finite_number_in_range_is_refused_with_a_message(
    cast: Cast, typed: str
) -> None:
    submission = submission_create(
        user=cast.alice,
        exercise_slug="vector-add",
        code="def vector_add(a, b):\n    return a + b\n",
    )
    response = logged_in(cast.tara).post(
        f"/submissions/{submission.pk}/override", {"score": typed, "comment": "c"}, follow=True
    )
    assert response.status_code == 200
    assert not Override.objects.filter(submission=submission).exists()
    assert any(m.level_tag == "error" for m in response.context["messages"])
