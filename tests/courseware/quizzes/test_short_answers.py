"""Short-answer items: the files, an answer, a TA's grade with the rubric, the gradebook."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from courseware.courses.models import Item
from courseware.gradebook.selectors import gradebook_for
from courseware.quizzes.selectors import quiz_scores_for
from courseware.quizzes.short_answers import short_answer_grade, short_answer_save
from courseware.quizzes.short_spec import load_short_question, load_short_questions
from courseware.refusals import Refused
from graders.errors import SpecError
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG, logged_in

QUIZ = Path(settings.GRADERS_EXERCISES_ROOT) / "ch15" / "quiz"
KEY = "s2-layernorm-memory-bound"
ANSWER = (
    "Each element needs about 5 FLOPs but is read once and written once, so the intensity is a "
    "constant below 1 FLOP/B whatever the size, far left of the ridge point."
)


def test_six_items_across_the_chapter_in_both_languages() -> None:
    items = load_short_questions(QUIZ)
    assert len(items) >= 6
    assert len({q.section for q in items}) >= 6
    for q in items:
        assert 2 <= len(q.criteria) <= 4
        assert q.text["en"] != q.text["zh"] and q.guide["zh"]
        assert all(c.text["en"] and c.text["zh"] and c.points > 0 for c in q.criteria)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ('[[criteria]]\nid = "x"\n', "a rubric needs 2 to 4"),
        ('id = "Bad Id"\n', "use lower-case letters"),
        ("[text]\nen = 'x'\n", "field 'criteria': missing"),
    ],
)
def test_a_broken_item_names_its_field(tmp_path: Path, edit: str, says: str) -> None:
    one = tmp_path / "one.toml"
    if edit.startswith("[[criteria]]"):
        text = 'section = "15.1"\ntext = { en = "q", zh = "问" }\nguide = { en = "g", zh = "答" }\n'
        one.write_text(text + edit + 'points = 1\nen = "a"\nzh = "甲"\n')
    else:
        one.write_text(edit)
    with pytest.raises(SpecError, match=says):
        load_short_question(one)


def test_the_keyword_pass_suggests_criteria() -> None:
    (item,) = [q for q in load_short_questions(QUIZ) if q.key == KEY]
    assert item.suggested(ANSWER) == ["few-flops", "constant", "ridge"]
    assert item.suggested("I do not know.") == []


def test_the_quiz_is_worth_its_short_answers_too(cast: Cast) -> None:
    item = Item.objects.get(slug=SLUG)
    short = sum((q.points for q in load_short_questions(QUIZ)), Decimal(0))
    assert item.max_score == sum(q.points for q in item.quiz.questions.all()) + short


def test_a_student_answers_and_a_ta_grades_it_into_the_gradebook(cast: Cast) -> None:
    saved = short_answer_save(user=cast.alice, quiz_slug=SLUG, key=KEY, text="  draft  ")
    again = short_answer_save(user=cast.alice, quiz_slug=SLUG, key=KEY, text=ANSWER)
    assert again.pk == saved.pk and again.text == ANSWER
    with pytest.raises(Refused, match="TAs and instructors"):
        short_answer_grade(grader=cast.bob, answer=again, points={})
    with pytest.raises(Refused, match="from 0 to 1"):
        short_answer_grade(
            grader=cast.tara, answer=again, points={"few-flops": "2", "constant": 1, "ridge": 1}
        )
    grade = short_answer_grade(
        grader=cast.tara,
        answer=again,
        points={"few-flops": "1", "constant": "0,5", "ridge": "1"},
        comment="Say why the size cancels.",
    )
    assert grade.score == Decimal("2.500")
    with pytest.raises(Refused, match="graded"):
        short_answer_save(user=cast.alice, quiz_slug=SLUG, key=KEY, text="changed")
    (alice,) = [s for s in quiz_scores_for(offering=cast.offering) if s.user_id == cast.alice.pk]
    assert alice.score == Decimal("2.500") and alice.answered == 1
    book = gradebook_for(offering=cast.offering)
    row = next(r for r in book.rows if r.user_id == cast.alice.pk)
    assert row.cell(SLUG).score == Decimal("2.500")


def test_empty_or_endless_answers_say_what_to_do(cast: Cast) -> None:
    with pytest.raises(Refused, match="Write your answer"):
        short_answer_save(user=cast.alice, quiz_slug=SLUG, key=KEY, text="   ")
    with pytest.raises(Refused, match="keep it under"):
        short_answer_save(user=cast.alice, quiz_slug=SLUG, key=KEY, text="x" * 5000)
    with pytest.raises(Refused, match="not enrolled"):
        short_answer_save(user=cast.stranger, quiz_slug=SLUG, key=KEY, text=ANSWER)
    with pytest.raises(Refused, match="no question"):
        short_answer_save(user=cast.alice, quiz_slug=SLUG, key="nope", text=ANSWER)


def test_pages_in_both_languages(cast: Cast) -> None:
    student, ta = logged_in(cast.alice), logged_in(cast.tara)
    page = reverse("quiz-short-answer", kwargs={"slug": SLUG, "key": KEY})
    review = reverse("quiz-short-answer-review", kwargs={"slug": SLUG, "key": KEY})
    assert "Explain your reasoning" in student.get(reverse("quiz-detail", args=[SLUG])).text
    assert student.post(page, {"answer": ANSWER}).status_code == 302
    assert student.get(review).status_code == 404  # a student never sees the grading page
    shown = ta.get(review).text
    assert ANSWER in shown and "suggested" in shown and "What a full answer says" in shown
    answer_id = cast.alice.short_answers.get().pk
    posted = {"answer_id": answer_id, "points-few-flops": "1", "points-constant": "1"}
    ta.post(review, {**posted, "points-ridge": "1", "comment": "Clear."})
    assert "Graded: 3 / 3" in student.get(page).text
    short_answer_save(user=cast.bob, quiz_slug=SLUG, key=KEY, text=ANSWER)
    queue = ta.get(reverse("review-queue")).text  # bob's answer waits in the TA's queue
    assert "Short answers to grade" in queue and "1 answer waiting" in queue and review in queue
    with translation.override("zh-hans"):
        zh_student = logged_in(cast.alice)
        zh_student.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
        text = zh_student.get(page).text
    assert "说明你的推理" in text and "已评分" in text
