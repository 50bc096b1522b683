"""The gradebook page: rounded scores, links to the submission that counts, marks, filters."""

from __future__ import annotations

import re
from decimal import Decimal

from django.test import Client
from django.utils import translation

from courseware.courses.models import Item, ItemKind, ItemPolicy
from courseware.gradebook.numbers import score_for_export, score_for_people
from courseware.gradebook.selectors import gradebook_for
from courseware.quizzes.models import Attempt, Question
from courseware.submissions.models import Override, Status
from tests.conftest import Cast
from tests.courseware.gradebook.builders import submit


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(cast: Cast, query: str = "") -> str:
    response = logged_in(cast.tara).get(f"/gradebook/{cast.offering.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode()


def student_rows(html: str) -> list[str]:
    """The table body's rows: one per student shown."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr>.*?</tr>", body, flags=re.S)


def row_of(html: str, username: str) -> str:
    rows = [r for r in student_rows(html) if f'<th scope="row" class="gb-student">{username}' in r]
    assert len(rows) == 1, f"{username} should have one row, not {len(rows)}"
    return rows[0]


def test_scores_are_rounded_for_a_person_in_the_pages_language() -> None:
    assert score_for_people(Decimal("5.700")) == "5.7"
    assert score_for_people(Decimal("9.375")) == "9.38"
    assert score_for_people(Decimal("10.000")) == "10"
    assert score_for_people(Decimal("0.005")) == "0.01"
    assert score_for_people(None) == "—"
    with translation.override("de"):  # a language that writes a decimal comma
        assert score_for_people(Decimal("5.700")) == "5,7"
    with translation.override("zh-hans"):
        assert score_for_people(Decimal("9.375")) == "9.38"
    # The export writes a dot whatever the language.
    with translation.override("de"):
        assert score_for_export(Decimal("35.700000000000000")) == "35.7"
    assert score_for_export(None) == ""


def test_a_cell_shows_the_best_score_rounded_and_links_to_the_submission_that_gives_it(
    cast: Cast,
) -> None:
    best = submit(cast.alice, cast.item, cast.offering, scores=[9.375])
    submit(cast.alice, cast.item, cast.offering, scores=[5.7])  # newer, but lower
    row = row_of(page(cast), "alice")
    assert f'<a href="/submissions/{best.pk}/">9.38</a>' in row
    assert "9.375" not in row and "5.7" not in row
    # A student without work shows a dash and no link.
    assert "/submissions/" not in row_of(page(cast), "bob")


def test_the_marks_say_what_a_ta_should_know(cast: Cast) -> None:
    ItemPolicy.objects.create(offering=cast.offering, item=cast.item, late_penalty_per_day="0.1")
    late = submit(cast.alice, cast.item, cast.offering, scores=[6], late_days=1)
    submit(cast.alice, cast.item, cast.offering, scores=[2], status=Status.NEEDS_REVIEW)
    flagged = submit(cast.bob, cast.item, cast.offering, scores=[3], flags=["clock_skew"])
    Override.objects.create(submission=flagged, author=cast.tara, score=Decimal("7.25"))
    submit(cast.bob, cast.item, cast.offering, scores=[0], verdict="error")  # newest: broke

    book = gradebook_for(offering=cast.offering)
    alice, bob = (next(r for r in book.rows if r.username == n) for n in ("alice", "bob"))
    a, b = alice.cells[cast.item.slug], bob.cells[cast.item.slug]
    assert (a.score, a.submission_id, a.late, a.needs_person) == (
        Decimal("5.4"),
        late.pk,
        True,
        True,
    )
    assert (a.error, a.flags, a.overridden) == (False, [], False)
    assert (b.score, b.submission_id, b.overridden, b.late) == (
        Decimal("7.25"),
        flagged.pk,
        True,
        False,
    )
    assert (b.error, b.flags, b.needs_person) == (True, ["clock_skew"], False)
    assert alice.pending_review == 1

    html = page(cast)
    alice_row, bob_row = row_of(html, "alice"), row_of(html, "bob")
    assert f'<a href="/submissions/{late.pk}/">5.4</a>' in alice_row
    assert "gb-mark-late" in alice_row and "gb-mark-needs_person" in alice_row
    assert "gb-mark-error" not in alice_row and "gb-mark-overridden" not in alice_row
    assert f'<a href="/submissions/{flagged.pk}/">7.25</a>' in bob_row
    for mark in ("gb-mark-overridden", "gb-mark-error", "gb-mark-flags"):
        assert mark in bob_row
    assert "clock_skew" in bob_row  # the flag's name, in the mark's tooltip
    assert "gb-mark-late" not in bob_row


def test_a_cell_without_a_score_links_to_the_work_waiting_for_a_person(cast: Cast) -> None:
    waiting = submit(cast.alice, cast.item, cast.offering, scores=[4], status=Status.NEEDS_REVIEW)
    row = row_of(page(cast), "alice")
    assert f'<a href="/submissions/{waiting.pk}/">—</a>' in row
    assert "gb-mark-needs_person" in row


def test_items_come_in_the_chapters_order_with_the_quiz_linked(cast: Cast) -> None:
    quiz_item = Item.objects.get(kind=ItemKind.QUIZ, slug="ch15-gpu-fundamentals-quiz")
    question = Question.objects.filter(quiz__item=quiz_item, is_active=True).first()
    assert question is not None
    Attempt.objects.create(
        user=cast.alice,
        question=question,
        offering=cast.offering,
        number=1,
        raw_answer="42",
        answer=42,
        expected=42,
        is_correct=True,
        attempt_factor=1,
        score=question.points,
        content_hash="q" * 64,
    )
    book = gradebook_for(offering=cast.offering)
    slugs = [c.slug for c in book.columns]
    expected = list(Item.objects.filter(is_published=True).order_by("chapter", "position", "slug"))
    assert slugs == [i.slug for i in expected]
    assert slugs[0] == "vector-add" and slugs[-1] == quiz_item.slug  # as chapter.toml says
    row = row_of(page(cast), "alice")
    assert f'<a href="/quizzes/{quiz_item.slug}/">{score_for_people(question.points)}</a>' in row


def test_the_points_possible_row_is_a_header_and_each_student_has_a_total(cast: Cast) -> None:
    submit(cast.alice, cast.item, cast.offering, scores=[5.7])
    html = page(cast)
    head = html.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert "Points possible" in head and 'class="gb-max"' in head
    assert len(student_rows(html)) == 2  # alice and bob; no max row, no staff
    assert "(max)" not in html and "tara" not in "".join(student_rows(html))
    assert '<td class="number gb-total">5.7</td>' in row_of(html, "alice")
    assert 'class="gradebook-scroll"' in html  # the table scrolls in its own box


def test_filters_keep_the_students_with_a_mark_and_the_search_finds_a_name(cast: Cast) -> None:
    cast.bob.first_name, cast.bob.last_name, cast.bob.email = "Robert", "Tables", "rt@example.edu"
    cast.bob.save()
    submit(cast.alice, cast.item, cast.offering, scores=[2], status=Status.NEEDS_REVIEW)
    submit(cast.bob, cast.item, cast.offering, scores=[3], late_days=2)

    def shown(query: str) -> list[str]:
        return [
            name
            for name in ("alice", "bob")
            if any(f'class="gb-student">{name}' in r for r in student_rows(page(cast, query)))
        ]

    assert shown("") == ["alice", "bob"]
    assert shown("?needs_person=on") == ["alice"]
    assert shown("?late=on") == ["bob"]
    assert shown("?needs_person=on&late=on") == ["alice", "bob"]  # either mark
    assert shown("?error=on") == [] and shown("?flags=on") == []
    assert shown("?q=TABLES") == ["bob"]  # by name, any case
    assert shown("?q=rt%40example") == ["bob"]  # by email
    assert shown("?q=ali&late=on") == []
    html = page(cast, "?error=on")
    assert "No student matches these filters." in html
    assert 'name="error" id="id_error" checked' in html  # the form keeps what was ticked


def test_a_search_too_long_says_so_and_hides_nobody(cast: Cast) -> None:
    html = page(cast, "?q=" + "x" * 101)
    assert "at most 100 characters" in html
    assert len(student_rows(html)) == 2


def test_the_page_reads_in_chinese(cast: Cast) -> None:
    client = logged_in(cast.tara)
    with translation.override("zh-hans"):
        html = client.get(
            f"/gradebook/{cast.offering.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans"
        ).content.decode()
    for text in ("导出为 Canvas 格式（CSV）", "满分", "需要人工处理", "搜索学生"):
        assert text in html, text


def test_only_staff_of_the_offering_see_its_gradebook(cast: Cast) -> None:
    path = f"/gradebook/{cast.offering.pk}/"
    assert logged_in(cast.alice).get(path).status_code == 404
    assert logged_in(cast.stranger).get(path).status_code == 404
    html = logged_in(cast.ines).get(path).content.decode()
    assert "alice" in html and cast.item.title_en in html
    assert "Gradebook" in logged_in(cast.ines).get("/").content.decode()
    assert "Gradebook" not in logged_in(cast.alice).get("/").content.decode()


def test_the_gradebook_list_is_refused_to_people_who_teach_nothing(cast: Cast) -> None:
    refused = logged_in(cast.alice).get("/gradebook/")
    assert refused.status_code == 403
    assert "for the TAs and instructors" in refused.content.decode()
    listed = logged_in(cast.tara).get("/gradebook/")
    assert listed.status_code == 200 and cast.offering.title in listed.content.decode()


def test_the_old_csv_address_leads_to_the_export_and_an_unknown_format_says_what_to_do(
    cast: Cast,
) -> None:
    client = logged_in(cast.tara)
    old = client.get(f"/gradebook/{cast.offering.pk}/?format=csv")
    assert old.status_code == 302 and old["Location"] == f"/gradebook/{cast.offering.pk}/canvas.csv"
    unknown = client.get(f"/gradebook/{cast.offering.pk}/?format=xlsx", follow=True)
    assert "Unknown format" in unknown.content.decode()
