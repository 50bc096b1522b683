"""A TA grades a notebook's hand-graded cell beside the student's answer, then moves on.

The notebook submissions here are made the way the site makes them (submission_create), then
given the report the notebook grader writes for the fusion notebook, so no kernel runs.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from courseware.courses.models import Enrolment, Offering, Role
from courseware.submissions.models import ManualGrade, SavedComment, Status, Submission
from courseware.submissions.notebook_review import answers_in
from courseware.submissions.selectors import notebook_message
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders import SpecError
from graders.notebooks import load_notebook_exercise
from graders.notebooks.spec import read_rubrics
from graders.report.schema import upgrade
from graders.report.types import Report
from tests.conftest import Cast

FUSION = Path(settings.GRADERS_EXERCISES_ROOT) / "ch15" / "fusion-notebook"
ANSWER = "The profile shows `aten::add` twice <script>alert(1)</script> per call."


def fusion_report(*, flags: list[str] | None = None) -> Report:
    """What the notebook grader reports for a fusion notebook whose tests all pass."""
    cells = [
        ("test-ops-per-call", 1.0, False),
        ("explain", 3.0, True),
        ("test-fused", 2.0, False),
        ("test-fused-hidden", 2.0, False),
        ("test-traffic", 1.0, False),
    ]
    return upgrade(
        {
            "exercise": "fusion-notebook",
            "exercise_hash": "h",
            "verdict": "correct",
            "gradable": True,
            "score": 6.0,
            "max_score": 9.0,
            "needs_manual_grade": True,
            "flags": flags or [],
            "message": (
                "4 of 4 autograded test cells passed. 1 answer(s) will be graded by a person."
            ),
            "cells": [
                {
                    "grade_id": grade_id,
                    "kind": "manual" if manual else "autograded_test",
                    "score": 0.0 if manual else top,
                    "max_score": top,
                    "needs_manual_grade": manual,
                    "hidden_tests": False,
                    "passed": None if manual else True,
                    "output": None,
                }
                for grade_id, top, manual in cells
            ],
        }
    )


def fusion_notebook(answer: str = ANSWER) -> str:
    """A submitted fusion notebook: the explanation in its markdown cell, a profiled code cell."""
    nb = nbformat.v4.new_notebook()
    explain = nbformat.v4.new_markdown_cell(answer)
    explain.metadata["nbgrader"] = {"grade": True, "grade_id": "explain", "points": 3}
    profile = nbformat.v4.new_code_cell("print('aten::add 10 calls')")
    profile.outputs = [nbformat.v4.new_output("stream", name="stdout", text="aten::add 10\n")]
    profile.metadata["nbgrader"] = {"grade": False, "grade_id": "profile", "solution": True}
    nb.cells = [explain, profile]
    return nbformat.writes(nb)


def waiting_notebook(user: User, *, answer: str = ANSWER, key: str = "") -> Submission:
    """A fusion notebook of `user`, autograded, its explanation waiting for a person."""
    made = submission_create(
        user=user, exercise_slug="fusion-notebook", notebook=fusion_notebook(answer)
    )
    submission_claim(submission_id=made.pk)
    grading_record(
        submission_id=made.pk,
        report=fusion_report(),
        run_key=key or f"run-{made.pk}",
        worker="w",
        duration_s=1,
    )
    return Submission.objects.get(pk=made.pk)


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ta_of_another_offering(cast: Cast) -> User:
    other = Offering.objects.create(course=cast.offering.course, slug="2027-spring", title="S")
    ta = User.objects.create_user(username="otto")
    Enrolment.objects.create(user=ta, offering=other, role=Role.TA)
    return ta


@pytest.fixture
def waiting(cast: Cast) -> Submission:
    return waiting_notebook(cast.alice)


def test_a_ta_sees_the_answer_and_the_rubric_beside_the_score_box(cast: Cast, waiting) -> None:
    html = logged_in(cast.tara).get(f"/submissions/{waiting.pk}/").content.decode()
    grading = html[html.index('id="hand-grading"') :]
    assert "<code>aten::add</code> twice &lt;script&gt;alert(1)&lt;/script&gt; per call" in grading
    assert "<script>alert(1)</script>" not in html  # the student's HTML is escaped
    assert "What the profile shows" in grading  # the rubric from notebook.toml
    assert 'name="score-explain"' in grading and "Save and next ungraded" in grading
    chinese = (
        logged_in(cast.tara)
        .get(f"/submissions/{waiting.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
        .content.decode()
    )
    assert "剖析结果显示了什么" in chinese and "保存并打开下一份待评分提交" in chinese


def test_the_student_does_not_get_the_grading_form(cast: Cast, waiting) -> None:
    html = logged_in(cast.alice).get(f"/submissions/{waiting.pk}/").content.decode()
    assert 'id="hand-grading"' not in html and "What the profile shows" not in html


def test_a_code_cell_answer_comes_with_its_output() -> None:
    answers = answers_in(fusion_notebook())
    assert answers["profile"].cell_type == "code" and answers["profile"].html is None
    assert answers["profile"].outputs == ["aten::add 10\n"]
    assert answers_in("not a notebook") == {}


def test_scoring_every_hand_graded_cell_clears_the_waiting_message_and_status(
    cast: Cast, waiting
) -> None:
    api = cast.token_client(cast.alice)
    before = api.get(f"/api/v1/submissions/{waiting.pk}").json()
    assert before["report"]["message"].endswith("1 answer will be graded by a person.")
    assert before["report"]["needs_manual_grade"] is True

    response = logged_in(cast.tara).post(
        f"/submissions/{waiting.pk}/hand-grades",
        {"score-explain": "2.5", "comment-explain": "Say why it is memory bound.", "after": "stay"},
    )
    assert response.status_code == 302 and response["Location"] == f"/submissions/{waiting.pk}/"

    after = api.get(f"/api/v1/submissions/{waiting.pk}").json()
    assert after["status"] == Status.GRADED and after["score"] == 8.5
    assert after["report"]["message"] == "4 of 4 autograded test cells passed."
    assert after["report"]["needs_manual_grade"] is False
    page = logged_in(cast.alice).get(f"/submissions/{waiting.pk}/").content.decode()
    assert "graded by a person" not in page and "waiting for a person" not in page
    assert "Say why it is memory bound." in page


def test_the_waiting_sentence_counts_what_is_still_waiting() -> None:
    engine = "1 of 2 passed. 2 answer(s) will be graded by a person."
    with translation.override("en"):
        assert notebook_message(engine, waiting=2) == (
            "1 of 2 passed. 2 answers will be graded by a person."
        )
    with translation.override("zh-hans"):
        assert notebook_message(engine, waiting=1) == "1 of 2 passed. 1 个答案将由人工评分。"
    assert notebook_message(engine, waiting=0) == "1 of 2 passed."


def test_a_comment_without_a_score_is_refused_and_what_was_typed_stays(cast: Cast, waiting) -> None:
    response = logged_in(cast.tara).post(
        f"/submissions/{waiting.pk}/hand-grades",
        {"score-explain": "", "comment-explain": "Half-written thought"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Give a score for explain as well as the comment." in html
    assert "Half-written thought</textarea>" in html
    response = logged_in(cast.tara).post(
        f"/submissions/{waiting.pk}/hand-grades", {"score-explain": "7", "comment-explain": "x"}
    )
    assert response.status_code == 400 and "between 0 and 3" in response.content.decode()
    assert 'value="7"' in response.content.decode()
    assert ManualGrade.objects.count() == 0
    assert Submission.objects.get(pk=waiting.pk).status == Status.NEEDS_REVIEW


def test_a_kept_comment_is_saved_once_and_offered_again(cast: Cast) -> None:
    first, second = waiting_notebook(cast.alice), waiting_notebook(cast.bob)
    ta = logged_in(cast.tara)
    text = "Name the operators and say how often each runs."
    for submission in (first, second):
        ta.post(
            f"/submissions/{submission.pk}/hand-grades",
            {"score-explain": "1", "comment-explain": text, "keep-explain": "1"},
        )
    saved = SavedComment.objects.get()
    assert (saved.text, saved.grade_id, saved.times_used, saved.author) == (
        text,
        "explain",
        2,
        cast.tara,
    )
    third = waiting_notebook(cast.alice)
    html = ta.get(f"/submissions/{third.pk}/").content.decode()
    assert f'<option value="{text}">' in html  # the list that works without JavaScript
    ta.post(f"/submissions/{third.pk}/hand-grades", {"score-explain": "2", "saved-explain": text})
    assert ManualGrade.objects.get(submission=third).comment == text


def test_save_and_next_goes_to_the_next_submission_waiting(cast: Cast) -> None:
    first, second, third = (waiting_notebook(u) for u in (cast.alice, cast.bob, cast.alice))
    ta = logged_in(cast.tara)

    def grade_and_next(submission: Submission) -> str:
        response = ta.post(
            f"/submissions/{submission.pk}/hand-grades", {"score-explain": "3", "after": "next"}
        )
        assert response.status_code == 302
        return str(response["Location"])

    assert grade_and_next(first) == f"/submissions/{second.pk}/#hand-grading"
    assert grade_and_next(third) == f"/submissions/{second.pk}/#hand-grading"  # back to the top
    assert grade_and_next(second) == "/review/"  # nothing else waits


def test_a_regrade_keeps_the_hand_grades_and_does_not_wait_again(cast: Cast, waiting) -> None:
    logged_in(cast.tara).post(f"/submissions/{waiting.pk}/hand-grades", {"score-explain": "3"})
    Submission.objects.filter(pk=waiting.pk).update(status=Status.RUNNING)
    grading_record(
        submission_id=waiting.pk, report=fusion_report(), run_key="again", worker="w", duration_s=1
    )
    assert Submission.objects.get(pk=waiting.pk).status == Status.GRADED


def test_the_author_and_staff_download_the_notebook_and_nobody_else(cast: Cast, waiting) -> None:
    url = f"/submissions/{waiting.pk}/notebook.ipynb"
    for user in (cast.alice, cast.tara):
        response = logged_in(user).get(url)
        assert response.status_code == 200
        assert response["Content-Disposition"] == (
            f'attachment; filename="fusion-notebook-{waiting.pk}-alice.ipynb"'
        )
        assert response.content.decode() == waiting.source
    for user in (cast.bob, ta_of_another_offering(cast), cast.stranger):
        assert logged_in(user).get(url).status_code == 404
    page = logged_in(cast.alice).get(f"/submissions/{waiting.pk}/").content.decode()
    assert f'href="{url}"' in page


def test_the_api_gives_the_notebook_text_to_the_author_and_staff(cast: Cast, waiting) -> None:
    url = f"/api/v1/submissions/{waiting.pk}/notebook"
    detail = cast.token_client(cast.alice).get(f"/api/v1/submissions/{waiting.pk}").json()
    assert detail["notebook_url"] == url
    for user in (cast.alice, cast.tara):
        body = cast.token_client(user).get(url).json()
        assert body["exercise"] == "fusion-notebook"
        assert json.loads(body["notebook"]) == json.loads(waiting.source)
    assert cast.token_client(cast.bob).get(url).status_code == 404
    code = submission_create(user=cast.alice, exercise_slug="vector-add", code="x = 1")
    response = cast.token_client(cast.alice).get(f"/api/v1/submissions/{code.pk}/notebook")
    assert response.status_code == 404 and "not a notebook" in response.json()["error"]


def test_the_review_queue_refuses_whoever_is_staff_of_no_offering(cast: Cast, waiting) -> None:
    for user in (cast.alice, cast.stranger):
        response = logged_in(user).get("/review/")
        assert response.status_code == 403
        assert "not on the staff of any" in response.content.decode()
    other = logged_in(ta_of_another_offering(cast)).get("/review/")
    assert other.status_code == 200 and f"/submissions/{waiting.pk}/" not in other.content.decode()
    chinese = logged_in(cast.alice).get("/review/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "仅限课程教学人员" in chinese.content.decode()


def test_the_fusion_rubric_is_read_in_both_languages() -> None:
    rubric = read_rubrics(FUSION)
    assert set(rubric) == {"explain"} and set(rubric["explain"]) == {"en", "zh"}


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('explain = ""', "'rubric.explain': must be a non-empty string"),
        ('explain = { zh = "好" }', "'rubric.explain.en': missing"),
        ('explain = { en = "ok", fr = "bien" }', "'rubric.explain.fr': unknown key"),
        ("explain = 3", "'rubric.explain': expected table"),
    ],
)
def test_a_malformed_rubric_names_the_field(tmp_path: Path, table: str, problem: str) -> None:
    (tmp_path / "notebook.toml").write_text(f'slug = "x"\n\n[rubric]\n{table}\n')
    with pytest.raises(SpecError, match=re.escape(problem)):
        read_rubrics(tmp_path)


def test_a_rubric_for_a_cell_not_graded_by_hand_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "fusion-notebook"
    shutil.copytree(FUSION, folder)
    toml = folder / "notebook.toml"
    toml.write_text(toml.read_text().replace("explain.", "test-fused."))
    with pytest.raises(SpecError, match=r"'rubric\.test-fused': no hand-graded cell"):
        load_notebook_exercise(folder)
