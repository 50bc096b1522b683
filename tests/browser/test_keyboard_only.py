"""Everything a student and a TA do, from the keyboard alone: no click, no mouse. Each control is
reached with Tab (page_checks.tab_to fails when Tab never gets there) and used with Enter or by
typing; the focused control always shows a focus ring. The grading status is followed through
the exercise page's live region, as a screen reader hears it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import Browser, Page, expect

from courseware.similarity.demo_solutions import CHUNKED
from courseware.submissions.models import ManualGrade, Submission
from courseware.submissions.services import grading_record, submission_claim
from graders.report.schema import upgrade
from tests.browser.conftest import Student
from tests.browser.page_checks import focus_is_visible, tab_to, visitor
from tests.conftest import make_cast
from tests.courseware.quizzes.conftest import SLUG
from tests.courseware.submissions.test_notebook_review import waiting_notebook
from tests.courseware.submissions.test_report_page import sample

EXERCISE = "/exercises/vector-add/"


def follow(page: Page, selector: str) -> None:
    """Tab to a link or a submit button, check that its focus shows, press Enter on it and
    wait for the page it opens."""
    tab_to(page, selector)
    assert focus_is_visible(page), f"no visible focus on {selector} at {page.url}"
    with page.expect_navigation():
        page.keyboard.press("Enter")


def log_in_by_keyboard(student: Student, username: str) -> Page:
    page = student.open("/login/")
    # The username field has the focus when the page opens (autofocus).
    assert page.evaluate("document.activeElement.name") == "username"
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(f"pw-{username}")
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Your work")
    return page


def record_live_status(page: Page) -> None:
    page.evaluate(
        """() => {
          const box = document.getElementById('live-status');
          window.heard = [];
          new MutationObserver(() => {
            const text = box.textContent.trim();
            if (text && window.heard[window.heard.length - 1] !== text) window.heard.push(text);
          }).observe(box, {childList: true, subtree: true, characterData: true});
        }"""
    )


def grade_it_as_a_worker_would(submission: Submission) -> None:
    submission_claim(submission_id=submission.pk)
    grading_record(
        submission_id=submission.pk,
        report=upgrade(sample("fast")),
        run_key="keyboard",
        worker="w",
        duration_s=1,
    )


@pytest.mark.browser
def test_a_student_logs_in_submits_reads_the_report_and_answers_a_quiz_by_keyboard(
    transactional_db, browser: Browser, live_server, shots_dir
) -> None:
    cast = make_cast()
    student = visitor(browser, live_server.url, shots_dir, "en")
    try:
        page = log_in_by_keyboard(student, "alice")
        follow(page, f"#dashboard a[href='{EXERCISE}']")
        page.wait_for_selector(".CodeMirror")

        # Into the editor with Tab; it is labelled; type; Esc leaves it for the submit button.
        tab_to(page, ".CodeMirror textarea")
        assert focus_is_visible(page) or page.evaluate(
            "getComputedStyle(document.getElementById('editor')).outlineStyle !== 'none'"
        )
        label = page.evaluate(
            "document.getElementById(document.activeElement.getAttribute('aria-labelledby'))"
            ".textContent"
        )
        assert label == "Your solution"
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(CHUNKED)
        page.keyboard.press("Escape")
        assert page.evaluate("document.activeElement.id") == "submit-button"
        assert focus_is_visible(page)
        record_live_status(page)
        page.keyboard.press("Enter")
        live = page.locator("#live-status")
        expect(live).to_have_attribute("role", "status")
        expect(live).to_contain_text("Queued")
        submission = Submission.objects.get(user=cast.alice)
        assert submission.source == CHUNKED
        student.screenshot("queued")

        grade_it_as_a_worker_would(submission)
        expect(live).to_contain_text("Graded", timeout=30_000)
        heard = page.evaluate("window.heard")
        assert heard[0].startswith(("Sending", "Queued")) and heard[-1].startswith("Graded"), heard

        # The report, from the link the live region announced.
        follow(page, f"#live-status a[href='/submissions/{submission.pk}/']")
        expect(page.locator("#score-breakdown")).to_be_visible()
        expect(page.locator("#roofline-points tbody tr").first).to_be_visible()
        student.screenshot("report")

        page = student.open(f"/quizzes/{SLUG}/?part=3")
        tab_to(page, "#answer-4")
        page.keyboard.type("64")
        page.keyboard.press("Enter")
        expect(page.locator("#q-4 .feedback")).to_contain_text("Right!")
        student.screenshot("quiz")
    finally:
        student.context.close()


@pytest.mark.browser
def test_a_ta_grades_a_hand_graded_answer_by_keyboard(
    transactional_db, browser: Browser, live_server, shots_dir
) -> None:
    cast = make_cast()
    submission = waiting_notebook(cast.bob)
    ta = visitor(browser, live_server.url, shots_dir, "en", {"width": 1200, "height": 900})
    try:
        page = log_in_by_keyboard(ta, "tara")
        follow(page, "header nav a[href='/review/']")
        follow(page, f"#review-queue a[href='/submissions/{submission.pk}/#hand-grading']")
        expect(page.locator("#hand-grading")).to_be_visible()
        tab_to(page, "#hand-grading input[name^='score-']")
        assert focus_is_visible(page)
        page.keyboard.type("2.5")
        page.keyboard.press("Tab")
        page.keyboard.type("Name the memory traffic.")
        follow(page, "#hand-grading button[value='stay']")
        expect(page.locator(".messages")).to_contain_text("Saved.")
        ta.screenshot("hand-graded")
    finally:
        ta.context.close()
    grade = ManualGrade.objects.get(submission=submission)
    assert (grade.score, grade.comment) == (Decimal("2.5"), "Name the memory traffic.")
