"""Preview an item as a student sees it; a quiz with the numbers of a chosen variant and its
right answer."""

from __future__ import annotations

from html import escape

import pytest
from django.conf import settings
from django.urls import reverse

from courseware.quizzes.spec import Question, load_quiz
from courseware.quizzes.variants import variant_for
from tests.conftest import Cast
from tests.courseware.instructor.conftest import logged_in

pytestmark = pytest.mark.django_db

QUIZ = "ch15-gpu-fundamentals-quiz"
KEY = "03-bandwidth-ratio"  # a numeric question with drawn numbers


def question(key: str) -> Question:
    found = load_quiz(settings.GRADERS_EXERCISES_ROOT / "ch15" / "quiz", validate=False).question(
        key
    )
    assert found is not None and found.is_parameterized
    return found


def preview(cast: Cast, slug: str, **query: str) -> str:
    url = reverse("instructor-preview", args=[cast.offering.pk, slug])
    response = logged_in(cast.ines).get(url, query)
    assert response.status_code == 200
    return response.content.decode()


def answer_shown(asked: Question, variables: dict[str, object]) -> str:
    return escape(asked.answer_text(asked.solve(variables), variables, "en"))


def test_the_quiz_preview_shows_the_numbers_and_answer_of_the_chosen_seed(cast: Cast) -> None:
    asked = question(KEY)
    answers = {seed: answer_shown(asked, asked.draw(seed)) for seed in (3, 11, 42)}
    assert len(set(answers.values())) > 1  # the seeds draw different numbers
    for seed, answer in answers.items():
        page = preview(cast, QUIZ, seed=str(seed))
        assert f"seed {seed}" in page and answer in page
        others = {a for a in answers.values() if a != answer}
        block = page[page.index(f'data-key="{KEY}"') :]
        block = block[: block.index("</section>")]
        assert answer in block and not any(o in block for o in others)
        for value in asked.draw(seed).values():
            assert f"<code>{escape(str(value))}</code>" in block  # the numbers drawn


def test_the_quiz_preview_shows_a_students_own_attempt(cast: Cast) -> None:
    asked = question(KEY)
    variables = variant_for(question=asked, user_id=cast.alice.pk, quiz_slug=QUIZ, attempt=2)
    page = preview(cast, QUIZ, student="alice", attempt="2")
    assert "alice gets on attempt 2" in page and answer_shown(asked, variables) in page


def test_a_bad_variant_is_refused_with_a_message(cast: Cast) -> None:
    page = preview(cast, QUIZ, student="nobody")
    assert "Nobody named nobody is enrolled" in page
    page = preview(cast, QUIZ, seed="-1")
    assert "greater than or equal to 0" in page


def test_a_choice_question_marks_the_right_option(cast: Cast) -> None:
    page = preview(cast, QUIZ)
    block = page[page.index('data-key="02-latency-vs-throughput"') :]
    block = block[: block.index("</section>")]
    right = block[block.index('class="correct-choice"') :]
    assert right.index("a GPU maximises the work") < right.index("</li>")


def test_the_exercise_preview_is_the_students_page_without_a_submit_form(cast: Cast) -> None:
    page = preview(cast, "vector-add")
    assert "Nothing can be submitted from here" in page
    assert "def vector_add" in page  # the starter code
    assert 'id="submit-form"' not in page and 'name="code"' not in page
    notebook = preview(cast, "fusion-notebook")
    assert reverse("notebook-release", args=["fusion-notebook"]) in notebook
    assert 'type="file"' not in notebook
    assert "What the notebook asks" in notebook and "read and scored by a TA" in notebook


def test_an_item_of_another_course_or_unknown_is_not_found(cast: Cast) -> None:
    url = reverse("instructor-preview", args=[cast.offering.pk, "no-such-item"])
    assert logged_in(cast.ines).get(url).status_code == 404


def test_the_chinese_preview_names_the_unit_in_chinese(cast: Cast) -> None:
    url = reverse("instructor-preview", args=[cast.offering.pk, QUIZ])
    page = logged_in(cast.ines).get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "以 年 为单位作答。" in page and "以 倍 为单位作答。" in page  # not "years", "x"
    assert "以 years 为单位作答" not in page
