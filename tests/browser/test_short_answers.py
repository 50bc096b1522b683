"""Short answers in real Chromium: a student sees one on the quiz page and answers it, a TA
grades it with the rubric beside the answer, and the student reads the grade; in English and in
简体中文. Screenshots land in var/screenshots/<test>/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from courseware.quizzes.models import ShortAnswer
from tests.browser.conftest import Student
from tests.conftest import make_cast
from tests.courseware.quizzes.conftest import SLUG

KEY = "s2-layernorm-memory-bound"
ANSWERS = {
    "en": (
        "Each element needs about 5 FLOPs but is read once and written once, so the intensity "
        "is a constant below 1 FLOP/B whatever the size, far left of the ridge point."
    ),
    "zh-hans": (
        "每个元素只做约 5 次运算，却要读一次、写一次，算术强度是常数，远低于拐点，所以受限于带宽。"
    ),
}
WORDS = {
    "en": {
        "section": "Explain your reasoning",
        "waiting": "answered, waiting for a TA",
        "saved": "Your answer is saved",
        "suggested": "suggested",
        "rubric": "What a full answer says",
        "graded": "Graded: 2.5 / 3",
        "comment": "Say why the size cancels.",
    },
    "zh-hans": {
        "section": "说明你的推理",
        "waiting": "已作答，等待助教评分",
        "saved": "答案已保存",
        "suggested": "建议",
        "rubric": "完整的答案应当包括",
        "graded": "已评分：2.5 / 3",
        "comment": "请说明为什么规模会被约掉。",
    },
}


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_student_answers_a_short_question_and_a_ta_grades_it(
    transactional_db, log_in, language: str
) -> None:
    cast = make_cast()
    words = WORDS[language]
    student: Student = log_in(cast.alice, language)
    page = student.open(f"/quizzes/{SLUG}/")
    items = page.locator("#short-items")
    expect(items).to_contain_text(words["section"])
    # Answered on the quiz page itself; the page comes back with the answer kept.
    item = page.locator(f"#short-{KEY}")
    expect(item).to_contain_text("LayerNorm")
    item.locator("textarea").fill(ANSWERS[language])
    item.locator("button[type=submit]").click()
    expect(page.locator(".messages")).to_contain_text(words["saved"])
    expect(page.locator(f"#short-{KEY} textarea")).to_have_value(ANSWERS[language])
    expect(page.locator(f"#short-{KEY}")).to_contain_text(words["waiting"])
    student.screenshot("answered")
    # Its own page shows the rubric the TA will use.
    page = student.open(f"/quizzes/{SLUG}/explain/{KEY}/")
    expect(page.locator("#short-rubric li")).to_have_count(3)

    ta: Student = log_in(cast.tara, language)
    review = ta.open(f"/quizzes/{SLUG}/explain/{KEY}/review/")
    answer = ShortAnswer.objects.get(user=cast.alice, key=KEY)
    section = review.locator(f"#answer-{answer.pk}")
    # The answer and the rubric side by side, the keyword pass's hints marked as such.
    expect(section.locator(".short-answer-text")).to_contain_text(ANSWERS[language][:20])
    expect(section.locator("table")).to_contain_text(words["suggested"])
    expect(review.locator("details")).to_contain_text(words["rubric"])
    ta.screenshot("review")
    section.locator("input[name='points-constant']").fill("0.5")
    section.locator("textarea[name='comment']").fill(words["comment"])
    section.locator("button[type=submit]").click()
    expect(review.locator(".messages")).to_contain_text("alice")
    ta.screenshot("graded")

    page = student.open(f"/quizzes/{SLUG}/explain/{KEY}/")
    expect(page.locator("#short-graded")).to_contain_text(words["graded"])
    expect(page.locator("#short-graded")).to_contain_text(words["comment"])
    expect(page.locator("#answer")).to_have_count(0)  # graded: no longer editable
    student.screenshot("grade-read")
