"""The web pages a student uses: log in, read an exercise, submit, watch the result."""

from __future__ import annotations

from django.conf import settings
from django.test import Client

from courseware.submissions.models import Submission
from graders import load_exercise
from tests.conftest import Cast


def logged_in(cast: Cast, user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_pages_need_a_login(cast: Cast) -> None:
    response = Client().get("/exercises/vector-add/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert Client().get("/login/").status_code == 200


def test_the_exercise_page_shows_the_prompt_and_starter_but_never_the_reference(cast: Cast) -> None:
    spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / cast.item.source_path)
    html = logged_in(cast, cast.alice).get("/exercises/vector-add/").content.decode()
    assert "<textarea" in html and "vector_add" in html
    reference = (spec.path / "reference.py").read_text()
    assert reference.strip() not in html


def test_submitting_the_form_goes_to_the_submission_page(cast: Cast) -> None:
    client = logged_in(cast, cast.alice)
    response = client.post(
        "/exercises/vector-add/", {"code": "def vector_add(a, b):\n    return a + b\n"}
    )
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{submission.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert "Queued" in page and "api/v1/submissions" in page  # it polls until graded


def test_a_refused_form_keeps_what_the_student_typed(cast: Cast) -> None:
    client = logged_in(cast, cast.stranger)
    code = "def vector_add(a, b):\n    return a - b  # my draft\n"
    html = client.post("/exercises/vector-add/", {"code": code}).content.decode()
    assert "not enrolled" in html
    assert "my draft" in html
    assert Submission.objects.count() == 0


def test_a_student_cannot_open_another_students_submission_page(cast: Cast) -> None:
    client = logged_in(cast, cast.alice)
    client.post("/exercises/vector-add/", {"code": "def vector_add(a, b):\n    return a + b\n"})
    submission = Submission.objects.get()
    assert logged_in(cast, cast.bob).get(f"/submissions/{submission.pk}/").status_code == 404
    assert logged_in(cast, cast.tara).get(f"/submissions/{submission.pk}/").status_code == 200


def test_the_interface_speaks_chinese(cast: Cast) -> None:
    client = logged_in(cast, cast.alice)
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "练习" in html
    assert "Your work" in client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()


def test_a_graded_page_shows_bandwidth_against_the_peak_and_the_profile(cast: Cast) -> None:
    from courseware.submissions.services import grading_record, submission_claim
    from graders.report.schema import upgrade

    client = logged_in(cast, cast.alice)
    client.post("/exercises/vector-add/", {"code": "def vector_add(a, b):\n    return a + b\n"})
    submission = Submission.objects.get()
    submission_claim(submission_id=submission.pk)
    performance = {
        "median_s": 0.0123,
        "runs": 30,
        "cv": 0.02,
        "achieved_gbps": 16.4,
        "peak_gbps": 21.8,
        "fraction_of_peak": 0.752,
        "achieved_flops_per_s": 1.36e9,
        "arithmetic_intensity": 0.0833,
        "roof": "memory",
        "fraction_of_roofline": 0.752,
        "speedup_vs_naive": 1.9,
        "relative_to_reference": 0.98,
    }
    report = {
        "verdict": "correct",
        "score": 9,
        "max_score": 10,
        "gradable": True,
        "performance": performance,
        "profile": [{"name": "aten::add", "calls": 1, "self_time_s": 0.012}],
    }
    grading_record(
        submission_id=submission.pk,
        report=upgrade(report),
        run_key="p",
        worker="w",
        duration_s=1,
    )
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    # Figures in the units a person reads (courseware/submissions/readable_units.py).
    assert "16.4 GB/s" in html and "21.8 GB/s" in html and "75 %" in html
    assert "1.36 GFLOP/s" in html and "aten::add" in html and "1.9×" in html
