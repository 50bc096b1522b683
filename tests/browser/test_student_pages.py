"""A student's pages in real Chromium: the editor, the live status, the report, the size limit,
the quiz, and the same pages in 简体中文. Screenshots land in var/screenshots/<test>/."""

from __future__ import annotations

import zoneinfo
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from courseware.courses.models import Item, ItemPolicy
from courseware.submissions.models import Submission
from tests.browser.conftest import Student
from tests.celery_worker import Worker
from tests.conftest import make_cast
from tests.courseware.quizzes.conftest import SLUG, right_answer
from tests.courseware.submissions.test_report_page import graded, sample

FAST = "import torch\n\n\ndef vector_add(a, b):\n    return torch.add(a, b)\n"
EXERCISE = "/exercises/vector-add/"
GRADING_TIMEOUT_MS = 300_000  # a real worker on a shared 2-core machine, queued behind nothing


def editor_value(page: Page) -> str:
    return str(page.evaluate("document.querySelector('.CodeMirror').CodeMirror.getValue()"))


def record_live_status(page: Page) -> None:
    """Keep every text #live-status shows; a reload would lose the list, so it also proves
    the status changed in place."""
    page.evaluate(
        """() => {
          const box = document.getElementById('live-status');
          window.seen = [];
          new MutationObserver(() => {
            const text = box.textContent.trim();
            if (text && window.seen[window.seen.length - 1] !== text) window.seen.push(text);
          }).observe(box, {childList: true, subtree: true, characterData: true});
        }"""
    )


@pytest.mark.e2e
def test_a_student_submits_in_the_editor_watches_the_status_and_reads_the_report(
    log_in, worker: Worker
) -> None:
    cast = make_cast()
    student: Student = log_in(cast.alice)
    page = student.open("/")
    student.screenshot("dashboard")
    page.click(f"a[href='{EXERCISE}']")
    page.wait_for_selector(".CodeMirror")
    student.screenshot("exercise")

    # Tab indents inside the editor instead of leaving it.
    page.click(".CodeMirror-code")
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    before = editor_value(page).split("\n")[-1]
    page.keyboard.press("Tab")
    assert editor_value(page).split("\n")[-1] == before + "    "
    assert page.evaluate("document.activeElement.closest('.CodeMirror') !== null")

    page.keyboard.press("Control+A")
    page.keyboard.insert_text(FAST)
    assert editor_value(page) == FAST
    record_live_status(page)
    page.click("#submit-button")
    live = page.locator("#live-status")
    expect(live).to_contain_text("Queued: yours is next in line.")  # no worker yet
    student.screenshot("queued")
    assert Submission.objects.get(user=cast.alice).source == FAST

    worker.start()
    report_link = live.locator("a[href*='/submissions/']")
    report_link.wait_for(timeout=GRADING_TIMEOUT_MS)
    expect(live).to_contain_text("Graded: Correct, score")
    seen = page.evaluate("window.seen")
    # Sending, queued, (running, when a poll lands in it), graded: all on the one page.
    assert seen[0] == "Sending your code…" and seen[1].startswith("Queued"), seen
    assert seen[-1].startswith("Graded"), seen
    student.screenshot("graded")

    report_link.click()
    expect(page.locator("#roofline-chart")).to_be_visible()
    feedback = page.locator("#feedback")
    expect(feedback).to_contain_text("GB/s")
    expect(page.locator("#score-breakdown")).to_be_visible()
    student.screenshot("report")

    # The editor comes back with the last submission, not the starter.
    student.open(EXERCISE).wait_for_selector(".CodeMirror")
    assert editor_value(page) == FAST


def test_a_paste_over_the_limit_is_refused_before_anything_is_queued(
    transactional_db, log_in
) -> None:
    cast = make_cast()
    student: Student = log_in(cast.alice)
    page = student.open(EXERCISE)
    page.wait_for_selector(".CodeMirror")
    page.evaluate(
        "document.querySelector('.CodeMirror').CodeMirror.setValue('# x\\n'.repeat(70000))"
    )
    page.click("#submit-button")
    error = page.locator("#size-error")
    expect(error).to_contain_text("the limit is 65536 bytes")
    expect(error).to_contain_text("Nothing was sent")
    student.screenshot("refused")
    assert not Submission.objects.filter(user=cast.alice).exists()
    assert page.locator("#live-status").inner_text().strip() == ""


def answer_in(page: Page, position: int, value: str) -> None:
    block = page.locator(f"#q-{position}")
    block.locator(f"#answer-{position}").fill(value)
    block.locator("button").click()


def assert_near_its_question(page: Page, position: int) -> None:
    """The feedback is inside the question's block and on screen, not at the page's top."""
    feedback = page.locator(f"#q-{position} .feedback")
    expect(feedback).to_be_visible()
    box, height = feedback.bounding_box(), page.viewport_size["height"]  # type: ignore[index]
    assert box is not None and 0 <= box["y"] < height, box


def test_a_student_answers_a_quiz_right_then_wrong_and_reads_the_feedback_beside_it(
    transactional_db, log_in
) -> None:
    cast = make_cast()
    student: Student = log_in(cast.alice)
    page = student.open(f"/quizzes/{SLUG}/?part=3")
    answer_in(page, 4, "64")  # CUDA cores per A100 SM: the same for everyone
    expect(page.locator("#q-4 .feedback")).to_contain_text("Right!")
    assert_near_its_question(page, 4)
    student.screenshot("quiz-right")

    # Question 18's numbers are drawn per try: a wrong answer draws new ones, and says so.
    value, unit = right_answer(cast.alice, "18-layernorm-memory-time").split(" ", 1)
    page = student.open(f"/quizzes/{SLUG}/?part=5")
    answer_in(page, 18, f"{float(value) * 3:.6g} {unit}")
    expect(page.locator("#q-18 .feedback")).to_contain_text("Not right.")
    expect(page.locator("#q-18 .new-numbers")).to_be_visible()
    assert_near_its_question(page, 18)
    student.screenshot("quiz-wrong")


def test_the_same_pages_in_simplified_chinese(transactional_db, log_in) -> None:
    cast = make_cast()
    submission = graded(cast, sample("fast"))
    due = timezone.now() + timedelta(days=2)
    ItemPolicy.objects.create(
        offering=cast.offering,
        item=Item.objects.get(slug="softmax"),
        due_at=due,
    )
    student: Student = log_in(cast.alice, "zh-hans")
    page = student.open("/")
    expect(page.locator("main")).to_contain_text("向量加法")
    # Due soon comes first, its date in the browser's zone (Asia/Shanghai), in Chinese.
    first = page.locator("tbody tr").first
    assert first.get_attribute("data-slug") == "softmax"
    shanghai = timezone.localtime(due, zoneinfo.ZoneInfo("Asia/Shanghai"))
    expect(first).to_contain_text(f"{shanghai.month}月{shanghai.day}日 {shanghai:%H:%M}")
    student.screenshot("dashboard")

    page = student.open("/exercises/softmax/")
    expect(page.locator(".prompt")).to_contain_text("编写")  # the Chinese prompt, not the English
    student.screenshot("exercise")

    page = student.open(f"/submissions/{submission.pk}/")
    expect(page.locator("#roofline-chart")).to_contain_text("算术强度")
    expect(page.locator("#feedback")).to_contain_text("GB/s")
    expect(page.locator("main")).to_contain_text("正确")
    student.screenshot("report")

    page = student.open(f"/quizzes/{SLUG}/?part=3")
    answer_in(page, 4, "64")
    expect(page.locator("#q-4 .feedback")).to_contain_text("回答正确")
    student.screenshot("quiz")

    page = student.open("/roofline/?device=H200&ai=0.25")
    expect(page.locator("main")).to_contain_text("H200")
    student.screenshot("roofline")
