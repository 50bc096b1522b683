"""The ladder in real Chromium: the submission page and the exercise page, in English and in
简体中文. The reports are stored as the engine writes them (a ``ladder`` block); the axis is an
SVG with one mark per rung, the table beside it says the same in words. Screenshots land in
var/screenshots/<test>/."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Student
from tests.conftest import make_cast
from tests.courseware.submissions.test_ladder_view import block, graded, report_with

EXERCISE = "/exercises/vector-add/"
WORDS = {
    "en": ("Where you stand", "Naive version", "Reference", "This submission", "Your best so far"),
    "zh-hans": ("你的位置", "朴素版本", "参考实现", "本次提交", "你目前的最好成绩"),
}


def marks_in_order(page: Page, keys: list[str]) -> None:
    """Every rung has a mark on the drawn axis, left to right in the order of its figure."""
    xs = []
    for key in keys:
        circle = page.locator(f'#ladder svg g[data-rung="{key}"] circle')
        expect(circle).to_have_count(1)
        box = circle.bounding_box()
        assert box is not None and box["width"] > 0, key
        xs.append(box["x"])
    assert xs == sorted(xs), dict(zip(keys, xs, strict=True))


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_ladder_on_the_submission_and_exercise_pages(
    transactional_db, log_in, language: str
) -> None:
    heading, naive, reference, submission_word, best_word = WORDS[language]
    cast = make_cast()
    submission = graded(cast, report_with(block(0.8, 3.1)), f"ladder-{language}")
    student: Student = log_in(cast.alice, language)

    page = student.open(f"/submissions/{submission.pk}/")
    section = page.locator("#ladder")
    expect(section.locator("h2")).to_have_text(heading)
    table = section.locator("#ladder-table")
    expect(table.locator('tr[data-rung="naive"] th')).to_have_text(naive)
    expect(table.locator('tr[data-rung="reference"] th')).to_have_text(reference)
    expect(table.locator('tr[data-rung="submission"]')).to_contain_text(submission_word)
    expect(table.locator('tr[data-rung="submission"]')).to_contain_text("3.1 / 4")
    # The drawing is named by the heading and the axis's sentence, for a screen reader.
    assert section.locator("svg").get_attribute("role") == "img"
    marks_in_order(page, ["naive", "submission", "reference"])
    student.screenshot("submission-ladder")

    page = student.open(EXERCISE)
    section = page.locator("#ladder")
    expect(section.locator("h2")).to_have_text(heading)
    expect(section.locator('tr[data-rung="best"]')).to_contain_text(best_word)
    expect(section.locator('tr[data-rung="best"]')).to_contain_text("0.8×")
    marks_in_order(page, ["naive", "best", "reference"])
    student.screenshot("exercise-ladder")
