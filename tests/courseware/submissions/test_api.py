"""The submission API: what it accepts, what it refuses and who sees what."""

from __future__ import annotations

import json
from datetime import timedelta
from unittest import mock

import pytest
from django.test import Client
from django.utils import timezone

from courseware.courses.models import ItemPolicy
from courseware.submissions.models import Grading, Status, Submission
from courseware.submissions.services import (
    grading_attach_profile,
    grading_record,
    submission_claim,
)
from graders.report.schema import upgrade
from tests.conftest import Cast

GOOD = "import torch\n\ndef vector_add(a, b):\n    return a + b\n"


def post(client: Client, body: object, path: str = "/api/v1/submissions") -> tuple[int, dict]:
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    response = client.post(path, raw, content_type="application/json")
    return response.status_code, response.json()


def test_it_creates_a_queued_submission_and_answers_with_its_page(cast: Cast) -> None:
    status, body = post(cast.token_client(cast.alice), {"exercise": "vector-add", "code": GOOD})
    assert status == 201
    assert body["status"] == "queued"
    assert body["url"] == f"http://testserver/submissions/{body['id']}/"
    saved = Submission.objects.get(pk=body["id"])
    assert saved.source == GOOD and saved.user == cast.alice
    assert saved.content_hash == cast.item.content_hash
    assert saved.device_kind == "cpu" and saved.offering == cast.offering


@pytest.mark.parametrize("path", ["/api/v1/submissions", "/api/v1/submissions/"])
def test_routes_answer_with_or_without_a_trailing_slash(cast: Cast, path: str) -> None:
    client = cast.token_client(cast.alice)
    status, body = post(client, {"exercise": "vector-add", "code": GOOD}, path=path)
    assert status == 201
    for detail in (f"/api/v1/submissions/{body['id']}", f"/api/v1/submissions/{body['id']}/"):
        assert client.get(detail).status_code == 200


def test_it_enqueues_only_the_id_on_the_device_queue_after_commit(
    cast: Cast, django_capture_on_commit_callbacks
) -> None:
    with mock.patch("courseware.submissions.services.current_app.send_task") as send:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            status, body = post(
                cast.token_client(cast.alice), {"exercise": "vector-add", "code": GOOD}
            )
        assert status == 201
        send.assert_not_called()  # nothing is queued before the row is committed
        for callback in callbacks:
            callback()
    send.assert_called_once_with("graders.grade_submission", args=[body["id"]], queue="cpu")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"exercise": "no-such-thing", "code": GOOD}, "no exercise named 'no-such-thing'"),
        ({"exercise": "vector-add", "code": "   \n"}, "code is empty"),
        ({"exercise": "vector-add"}, "code is empty"),
        ({"code": GOOD}, "Name the exercise"),
        ({"exercise": "vector-add", "code": 42}, "must be a string"),
        (b"{not json", "must be JSON"),
        ([1, 2], "JSON object"),
    ],
)
def test_it_refuses_bad_requests_with_a_message(cast: Cast, body: object, fragment: str) -> None:
    status, answer = post(cast.token_client(cast.alice), body)
    assert status == 400
    assert fragment in answer["error"]
    assert Submission.objects.count() == 0


def test_a_body_over_the_limit_gets_413(cast: Cast, settings) -> None:
    settings.SUBMISSIONS_MAX_BODY_BYTES = 1000
    status, answer = post(
        cast.token_client(cast.alice), {"exercise": "vector-add", "code": "#" * 2000}
    )
    assert status == 413
    assert "larger than" in answer["error"]
    assert Submission.objects.count() == 0


def test_it_needs_a_user(cast: Cast) -> None:
    status, answer = post(Client(), {"exercise": "vector-add", "code": GOOD})
    assert status == 401 and "Token" in answer["error"]
    bad = Client(HTTP_AUTHORIZATION="Token nope")
    assert post(bad, {"exercise": "vector-add", "code": GOOD})[0] == 401
    malformed = Client(HTTP_AUTHORIZATION="Bearer abc")
    assert "Authorization: Token" in post(malformed, {"exercise": "x", "code": GOOD})[1]["error"]


def test_a_session_post_needs_the_csrf_token(cast: Cast) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.alice)
    status, answer = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 403 and "CSRF" in answer["error"]
    client.get("/exercises/vector-add/")  # sets the CSRF cookie, as a browser would
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/api/v1/submissions",
        json.dumps({"exercise": "vector-add", "code": GOOD}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201


def test_another_students_submission_is_404_but_staff_see_it(cast: Cast) -> None:
    _, body = post(cast.token_client(cast.alice), {"exercise": "vector-add", "code": GOOD})
    path = f"/api/v1/submissions/{body['id']}"
    assert cast.token_client(cast.bob).get(path).status_code == 404
    assert cast.token_client(cast.stranger).get(path).status_code == 404
    assert cast.token_client(cast.tara).get(path).status_code == 200
    assert cast.token_client(cast.ines).get(path).status_code == 200
    assert cast.token_client(cast.alice).get("/api/v1/submissions/999999").status_code == 404


def test_the_detail_shows_the_graded_result(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    _, body = post(client, {"exercise": "vector-add", "code": GOOD})
    before = client.get(f"/api/v1/submissions/{body['id']}").json()
    assert before["status"] == "queued" and before["verdict"] is None and before["report"] is None
    assert submission_claim(submission_id=body["id"]) is not None
    report = {"verdict": "correct", "score": 9.5, "max_score": 10, "gradable": True, "flags": []}
    grading_record(
        submission_id=body["id"],
        report=upgrade(report),
        run_key="r1",
        worker="w",
        duration_s=1.0,
    )
    after = client.get(f"/api/v1/submissions/{body['id']}").json()
    assert after["status"] == "graded" and after["verdict"] == "correct"
    assert after["score"] == 9.5 and after["max_score"] == float(cast.item.max_score)
    assert after["report"]["verdict"] == "correct"
    assert set(after) >= {"id", "exercise", "status", "verdict", "score", "max_score", "report"}


def test_a_student_may_have_only_so_many_submissions_waiting(cast: Cast, settings) -> None:
    settings.SUBMISSIONS_MAX_PENDING_PER_STUDENT = 2
    client = cast.token_client(cast.alice)
    assert post(client, {"exercise": "vector-add", "code": GOOD})[0] == 201
    assert post(client, {"exercise": "vector-add", "code": GOOD})[0] == 201
    status, answer = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 429 and "waiting to be graded" in answer["error"]
    # Another student is not held back by Alice's queue.
    assert post(cast.token_client(cast.bob), {"exercise": "vector-add", "code": GOOD})[0] == 201


def test_attempt_limits_count_graded_work_but_not_grader_failures(cast: Cast) -> None:
    ItemPolicy.objects.create(offering=cast.offering, item=cast.item, max_attempts=1)
    client = cast.token_client(cast.alice)
    _, first = post(client, {"exercise": "vector-add", "code": GOOD})
    Submission.objects.filter(pk=first["id"]).update(status=Status.FAILED)
    status, second = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 201  # the failure cost nothing
    submission_claim(submission_id=second["id"])
    grading_record(
        submission_id=second["id"],
        report=upgrade({"verdict": "rejected", "gradable": False}),
        run_key="r-rej",
        worker="w",
        duration_s=0.1,
    )
    status, _third = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 201  # a rejected upload cost nothing either
    status, answer = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 403 and "all 1 attempts" in answer["error"]


def test_deadlines_refuse_or_mark_late_work(cast: Cast) -> None:
    now = timezone.now()
    policy = ItemPolicy.objects.create(
        offering=cast.offering,
        item=cast.item,
        due_at=now - timedelta(hours=30),
        late_until=now + timedelta(days=1),
    )
    client = cast.token_client(cast.alice)
    status, body = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 201
    late = Submission.objects.get(pk=body["id"])
    assert late.is_late and late.late_days == 2
    policy.late_until = now - timedelta(hours=1)
    policy.save()
    status, answer = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 403 and "deadline" in answer["error"]
    policy.opens_at, policy.due_at, policy.late_until = now + timedelta(days=1), None, None
    policy.save()
    status, answer = post(client, {"exercise": "vector-add", "code": GOOD})
    assert status == 403 and "opens on" in answer["error"]


def test_someone_not_enrolled_cannot_submit(cast: Cast) -> None:
    status, answer = post(
        cast.token_client(cast.stranger), {"exercise": "vector-add", "code": GOOD}
    )
    assert status == 403 and "not enrolled" in answer["error"]


def test_the_exercise_list_names_the_synced_exercises(cast: Cast) -> None:
    body = cast.token_client(cast.alice).get("/api/v1/exercises").json()
    assert "vector-add" in [e["slug"] for e in body["exercises"]]
    assert Grading.objects.count() == 0


def test_the_profile_comes_after_the_grade_and_changes_nothing_else(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    _, body = post(client, {"exercise": "vector-add", "code": GOOD})
    assert submission_claim(submission_id=body["id"]) is not None
    report = {"verdict": "correct", "score": 9.5, "max_score": 10, "gradable": True, "flags": []}
    grading_record(
        submission_id=body["id"], report=upgrade(report), run_key="r-p", worker="w", duration_s=1
    )
    graded = client.get(f"/api/v1/submissions/{body['id']}").json()
    assert graded["status"] == "graded" and not graded["report"].get("profile")
    row = {"name": "aten::add", "calls": 1, "self_time_s": 0.02}
    assert grading_attach_profile(run_key="r-p", profile=[row])
    after = client.get(f"/api/v1/submissions/{body['id']}").json()
    assert after["report"]["profile"] == [row]
    assert (after["status"], after["score"]) == (graded["status"], graded["score"])
    assert not grading_attach_profile(run_key="no-such-run", profile=[row])
