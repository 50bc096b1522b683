"""The staff's pages in real Chromium: a TA grades a notebook answer by hand, overrides a score
and exports the gradebook for Canvas, and the student reads what the TA wrote; an instructor
(in 简体中文) syncs the content, previews a quiz variant, gives an extension and reads the
item statistics. Everything is done by clicking and typing. Screenshots land in
var/screenshots/<test>/."""

from __future__ import annotations

import csv
import zoneinfo
from datetime import datetime
from decimal import Decimal

from playwright.sync_api import Page, expect

from courseware.courses.models import Extension, Item, ItemPolicy
from courseware.submissions.models import ManualGrade, Override, Submission
from tests.browser.conftest import Student
from tests.conftest import Cast, make_cast
from tests.courseware.quizzes.conftest import SLUG, answer, question, variant
from tests.courseware.submissions.test_notebook_review import waiting_notebook

NOTEBOOK = "fusion-notebook"
NOTEBOOK_TITLE = "Kernel fusion: profile, explain, fuse"
HAND_COMMENT = "Name the memory traffic: h and g are written and read back."
OVERRIDE_COMMENT = "Full marks after the office-hours discussion."
CORES = "04-a100-cores-per-sm"  # numeric, the same for everyone: 64
DRAWN = "03-bandwidth-ratio"  # numeric, its numbers drawn per student and attempt
SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")  # the instructor's browser's zone (conftest)


def nav(page: Page, href: str) -> None:
    """Follow a link of the site's header, the way a person moves between the staff pages."""
    page.locator(f"header nav a[href='{href}']").click()


def grade_from_the_queue(ta: Student, submission: Submission) -> None:
    """The queue lists the notebook waiting for a person; "Grade" opens its answer, which the
    TA reads beside the rubric, scores and comments."""
    page = ta.open("/")
    nav(page, "/review/")
    row = page.locator("#review-queue tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text(NOTEBOOK)
    ta.screenshot("review-queue")
    row.get_by_role("link", name="Grade").click()

    grading = page.locator("#hand-grading")
    answer_box = grading.locator("#review-explain .review-answer")
    expect(answer_box.locator("code").first).to_have_text("aten::add")
    expect(answer_box).to_contain_text("<script>alert(1)</script>")  # shown as text, not run
    expect(grading.locator(".rubric")).to_contain_text("What the profile shows")
    expect(grading.locator("#review-explain .badge")).to_have_text("not graded yet")
    expect(page.locator("#message")).to_contain_text("1 answer will be graded by a person.")
    ta.screenshot("hand-grading")

    grading.get_by_label("Score (0 to 3)").fill("2.5")
    grading.get_by_label("Comment for the student").fill(HAND_COMMENT)
    grading.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Saved.")
    expect(page.locator("#review-explain .badge")).to_have_text("2.5 / 3 by tara")
    expect(page.locator("#score")).to_have_text("8.5")  # 6 autograded + 2.5
    expect(page.locator("#status")).to_have_text("Graded")
    expect(page.locator("h1")).to_contain_text(f"Submission {submission.pk}: {NOTEBOOK_TITLE}")
    ta.screenshot("hand-graded")


def override_the_score(ta: Student) -> None:
    """An override with its reason: the page names who set it, the history keeps both."""
    page = ta.page
    staff = page.locator("section[aria-labelledby='staff-heading']")
    staff.get_by_label("Override score").fill("9")
    staff.get_by_label("Comment").fill(OVERRIDE_COMMENT)
    staff.get_by_role("button", name="Override").click()
    expect(page.locator("#override")).to_contain_text("tara set the score to 9.")
    expect(page.locator("#override blockquote")).to_have_text(OVERRIDE_COMMENT)
    expect(page.locator("#score")).to_have_text("9")
    expect(page.locator("#overridden-badge")).to_be_visible()
    trail = page.locator("#score-trail tbody")
    expect(trail).to_contain_text(HAND_COMMENT)
    expect(trail).to_contain_text(OVERRIDE_COMMENT)
    ta.screenshot("overridden")


def search_the_gradebook(ta: Student, submission: Submission) -> None:
    """The gradebook shows the override; a search keeps only the student asked for."""
    page = ta.page
    nav(page, "/gradebook/")
    page.get_by_role("link", name="Fall 2026").click()
    expect(page.locator("table.gradebook")).to_contain_text("alice")
    page.get_by_label("Search for a student").fill("ali")
    page.get_by_role("button", name="Apply filters").click()
    rows = page.locator("table.gradebook tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("th")).to_contain_text("alice")
    expect(rows.first.locator(f"a[href='/submissions/{submission.pk}/']")).to_have_text("9")
    expect(page.locator("#gb-count")).to_contain_text("1 student shown of 2.")
    ta.screenshot("gradebook")


def export_for_canvas(page: Page) -> list[list[str]]:
    """Click the export link and read the file the browser downloads."""
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export for Canvas (CSV)").click()
    download = download_info.value
    assert download.suggested_filename == "canvas-grades-gpu-fundamentals-2026-fall.csv"
    with open(download.path(), encoding="utf-8", newline="") as exported:
        return list(csv.reader(exported))


def student_reads_the_comments(student: Student, submission: Submission) -> None:
    """The student finds the submission from the exercise page and reads both comments."""
    page = student.open("/")
    page.locator(f"#dashboard tr[data-slug='{NOTEBOOK}'] a").first.click()
    page.locator(f"#submissions a[href='/submissions/{submission.pk}/']").click()
    expect(page.locator("#score")).to_have_text("9")
    expect(page.locator("#override")).to_contain_text("tara set the score to 9.")
    expect(page.locator("#override")).to_contain_text(OVERRIDE_COMMENT)
    expect(page.locator("#cells")).to_contain_text(HAND_COMMENT)
    expect(page.locator("#score-trail")).to_contain_text(OVERRIDE_COMMENT)
    expect(page.locator("#hand-grading")).to_have_count(0)
    expect(page.locator("section[aria-labelledby='staff-heading']")).to_have_count(0)
    student.screenshot("student-report")


def test_a_ta_grades_a_notebook_overrides_a_score_exports_the_csv_and_the_student_sees_it(
    transactional_db, log_in
) -> None:
    cast = make_cast()
    submission = waiting_notebook(cast.alice)
    ta: Student = log_in(cast.tara)

    grade_from_the_queue(ta, submission)
    override_the_score(ta)
    grade = ManualGrade.objects.get(submission=submission)
    assert (grade.score, grade.comment, grade.author) == (Decimal("2.5"), HAND_COMMENT, cast.tara)
    assert Override.objects.get(submission=submission).score == Decimal(9)

    search_the_gradebook(ta, submission)
    header, points, *students = export_for_canvas(ta.page)
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert header[-1] == "Final Points" and points[0] == "Points Possible"
    column = header.index(NOTEBOOK_TITLE)
    by_username = {line[2]: line for line in students}
    assert set(by_username) == {"alice", "bob"}  # the export ignores the page's search
    assert by_username["alice"][column] == "9" and points[column] == "9"
    assert by_username["alice"][4] == "Fall 2026" and by_username["alice"][-1] == "9"
    assert by_username["bob"][column] == ""  # handed nothing in: no grade, not a 0

    student_reads_the_comments(log_in(cast.alice), submission)


def test_a_ta_finds_what_waits_in_the_gradebook_and_grades_it_in_chinese(
    transactional_db, log_in
) -> None:
    cast = make_cast()
    submission = waiting_notebook(cast.bob)
    ta: Student = log_in(cast.tara, "zh-hans")

    page = ta.open("/")
    nav(page, "/gradebook/")
    page.locator(f"a[href='/gradebook/{cast.offering.pk}/']").click()
    page.get_by_label("需要人工处理").check()
    page.get_by_role("button", name="筛选").click()
    rows = page.locator("table.gradebook tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("th")).to_contain_text("bob")
    expect(page.locator("#gb-count")).to_contain_text("2")  # 1 of 2 students shown
    ta.screenshot("gradebook-waiting")

    rows.first.locator(f"a[href='/submissions/{submission.pk}/']").click()
    grading = page.locator("#hand-grading")
    expect(grading).to_contain_text("剖析结果显示了什么")  # the rubric in Chinese
    expect(page.locator("h1")).to_contain_text(f"提交 {submission.pk}：")  # a full-width colon
    expect(page.locator("h1 a")).to_have_text("算子融合：剖析、解释、融合")
    expect(page.locator("#hand-grading-heading")).to_have_text("人工评分的答案")
    ta.screenshot("hand-grading")

    grading.locator("#score-explain").fill("3")
    grading.get_by_role("button", name="保存并打开下一份待评分提交").click()
    # Nothing else waits: back to the queue, which says so.
    expect(page).to_have_url(ta.base_url + "/review/")
    expect(page.locator(".messages")).to_contain_text("没有其他等待人工评分的提交了。")
    expect(page.locator("main")).to_contain_text("没有等待审阅的提交。")
    ta.screenshot("queue-empty")

    # The regrade form is one click away; it is only read here (a batch would queue gradings).
    page.locator("a[href='/review/regrade/']").click()
    expect(page.locator("h1")).to_have_text("重新评分一道练习")
    expect(page.locator("#regrade-exercise")).to_contain_text("vector-add")
    ta.screenshot("regrade-form")


def open_the_offering(page: Page, offering_id: int) -> None:
    nav(page, "/instructor/")
    page.locator(f"a[href='/instructor/{offering_id}/']").first.click()


def sync_the_content(instructor: Student) -> None:
    page = instructor.open("/")
    nav(page, "/instructor/")
    expect(page.locator("h1")).to_have_text("教学")
    instructor.screenshot("teaching")
    page.locator("a[href='/instructor/content/']").click()
    page.locator("button[value='sync']").click()
    report = page.locator("#report")
    expect(report.locator(".badge").first).to_have_text("已同步")
    expect(report.locator(f"#report-items tr[data-slug='{NOTEBOOK}']")).to_contain_text(
        "Notebook 练习"
    )
    instructor.screenshot("synced")


def preview_a_students_variant(instructor: Student, cast: Cast) -> None:
    """The quiz with the numbers alice gets on her second attempt, and their answer."""
    page = instructor.page
    open_the_offering(page, cast.offering.pk)
    expect(page.locator(f"#items tr[data-slug='{NOTEBOOK}']")).to_contain_text("2026年11月20日")
    instructor.screenshot("offering")
    page.locator(f"#items tr[data-slug='{SLUG}'] a[href$='/preview/{SLUG}/']").click()
    page.locator("#id_student").fill("alice")
    page.locator("#id_attempt").fill("2")
    page.locator(".variant-form button").click()
    expect(page.locator("#variant-shown")).to_contain_text("alice")
    asked = question(DRAWN)
    numbers = variant(cast.alice, DRAWN, attempt=2)
    expected = asked.answer_text(asked.solve(numbers), numbers, "zh")
    expect(page.locator(f"section[data-key='{DRAWN}'] .answer")).to_have_text(expected)
    instructor.screenshot("quiz-preview")


def give_an_extension(instructor: Student, cast: Cast, notebook: Item) -> None:
    """bob gets until 1 December on the notebook, typed in the browser's zone (Shanghai)."""
    page = instructor.page
    open_the_offering(page, cast.offering.pk)
    page.locator(f"a[href='/instructor/{cast.offering.pk}/extensions/']").first.click()
    form = page.locator("#extension-form")
    form.locator("#id_student").select_option(label="bob")
    form.locator("#id_item").select_option(value=str(notebook.pk))
    form.locator("#id_due_at").fill("2026-12-01T18:00")
    form.locator("#id_reason").fill("生病，有医生证明。")
    form.locator("button").click()
    expect(page.locator(".messages")).to_contain_text("bob")
    row = page.locator("#extensions tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("2026年12月1日 18:00")
    expect(row).to_contain_text("生病，有医生证明。")
    instructor.screenshot("extension")


def read_the_quiz_statistics(instructor: Student, offering_id: int) -> None:
    """Three tries at the cores question, one right; 32 was given twice."""
    page = instructor.page
    open_the_offering(page, offering_id)
    page.locator(f"#items tr[data-slug='{SLUG}'] a[href$='/statistics/{SLUG}/']").click()
    expect(page.locator("h1")).to_contain_text("统计")
    cores = page.locator(f"#questions tr[data-key='{CORES}']")
    expect(cores.locator(".cell-attempts")).to_have_text("3")
    expect(cores.locator(".cell-right")).to_have_text("33%")
    expect(cores.locator(".cell-mean")).to_have_text("0.35 / 1")  # alice's 0.7, bob's 0
    expect(cores.locator(".cell-wrong li")).to_have_text("32 ×2")
    instructor.screenshot("statistics")


def test_an_instructor_syncs_previews_a_variant_gives_an_extension_and_reads_statistics_in_chinese(
    transactional_db, log_in
) -> None:
    cast = make_cast()
    answer(cast.alice, CORES, "32")
    answer(cast.alice, CORES, "64")
    answer(cast.bob, CORES, "32")
    notebook = Item.objects.get(slug=NOTEBOOK)
    ItemPolicy.objects.create(
        offering=cast.offering,
        item=notebook,
        due_at=datetime(2026, 11, 20, 23, 59, tzinfo=SHANGHAI),
    )
    instructor: Student = log_in(cast.ines, "zh-hans")

    sync_the_content(instructor)
    preview_a_students_variant(instructor, cast)
    give_an_extension(instructor, cast, notebook)
    given = Extension.objects.get(user=cast.bob, item=notebook)
    assert given.due_at == datetime(2026, 12, 1, 18, 0, tzinfo=SHANGHAI)
    read_the_quiz_statistics(instructor, cast.offering.pk)
