"""The student's dashboard (the home page): every item in the chapter's order with its due date
in the student's time zone, attempts left, best score and status; what is due soon first. And
the chapter order file that sets that order."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from courseware.accounts.timezone import zone_named
from courseware.authoring.chapter_order import chapter_positions
from courseware.courses.models import Item, ItemPolicy
from courseware.submissions.dashboard import DashboardRow
from courseware.submissions.services import (
    grading_record,
    submission_claim,
    submission_create,
    submission_mark_failed,
)
from graders import SpecError
from graders.report.schema import upgrade
from tests.conftest import Cast

CHAPTER_ORDER = [
    "vector-add",
    "softmax",
    "layernorm",
    "gelu-residual",
    "matmul",
    "attention",
    "fusion-notebook",
    "ch15-gpu-fundamentals-quiz",
]
CODE = "def vector_add(a, b):\n    return a + b\n"


def dashboard(
    user: User, *, language: str = "en", tz: str | None = None
) -> tuple[list[DashboardRow], str]:
    client = Client()
    client.force_login(user)
    if tz is not None:
        client.cookies["tz"] = tz
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.context["rows"], response.content.decode()


def row_for(rows: list[DashboardRow], slug: str) -> DashboardRow:
    return next(row for row in rows if row.item.slug == slug)


def policy(cast: Cast, slug: str, **fields: object) -> ItemPolicy:
    return ItemPolicy.objects.create(
        offering=cast.offering, item=Item.objects.get(slug=slug), **fields
    )


def graded(cast: Cast, score: float) -> None:
    submission = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    submission_claim(submission_id=submission.pk)
    report = {"verdict": "correct", "score": score, "max_score": 10, "gradable": True, "flags": []}
    grading_record(
        submission_id=submission.pk,
        report=upgrade(report),
        run_key=f"run-{submission.pk}",
        worker="w",
        duration_s=1,
    )


def test_every_item_is_listed_in_the_chapters_order(cast: Cast) -> None:
    rows, html = dashboard(cast.alice)
    assert [row.item.slug for row in rows] == CHAPTER_ORDER
    # The page itself lists them in that order too, each linking to its own page.
    places = [html.index(f'data-slug="{slug}"') for slug in CHAPTER_ORDER]
    assert places == sorted(places)
    assert 'href="/quizzes/ch15-gpu-fundamentals-quiz/"' in html
    assert 'href="/exercises/fusion-notebook/"' in html


def test_what_is_due_soon_comes_first_nearest_deadline_first(cast: Cast) -> None:
    now = timezone.now()
    policy(cast, "matmul", due_at=now + timedelta(days=2))
    policy(cast, "attention", due_at=now + timedelta(days=1))
    policy(cast, "layernorm", due_at=now + timedelta(days=30))  # not soon: stays in its place
    rows, html = dashboard(cast.alice)
    slugs = [row.item.slug for row in rows]
    assert slugs[:2] == ["attention", "matmul"]
    assert slugs[2:] == [s for s in CHAPTER_ORDER if s not in ("attention", "matmul")]
    assert [row.due_soon for row in rows[:3]] == [True, True, False]
    assert "due soon" in html


def test_due_dates_show_in_the_students_time_zone_in_both_languages(cast: Cast) -> None:
    policy(cast, "softmax", due_at=datetime(2099, 3, 1, 12, 30, tzinfo=UTC))
    _rows, utc = dashboard(cast.alice)
    assert "March 1, 2099, 12:30 p.m." in utc
    _rows, shanghai = dashboard(cast.alice, tz="Asia/Shanghai")
    assert "March 1, 2099, 8:30 p.m." in shanghai
    _rows, encoded = dashboard(cast.alice, tz="Asia%2FShanghai")  # as encodeURIComponent writes
    assert "March 1, 2099, 8:30 p.m." in encoded
    _rows, chinese = dashboard(cast.alice, language="zh-hans", tz="Asia/Shanghai")
    assert "2099年3月1日 20:30" in chinese and "截止" in chinese
    # A cookie naming no real zone is ignored: the site's zone (UTC) is used.
    _rows, bogus = dashboard(cast.alice, tz="../../etc/passwd")
    assert "March 1, 2099, 12:30 p.m." in bogus


def test_only_real_zone_names_are_activated() -> None:
    assert zone_named("Europe/Paris") is not None
    for name in ("", "Mars/Olympus_Mons", "../../etc/passwd", "x" * 200, "/etc/localtime"):
        assert zone_named(name) is None


def test_attempts_left_count_graded_work_but_not_grader_failures(cast: Cast) -> None:
    cast.offering.default_max_attempts = 3
    cast.offering.save()
    graded(cast, 7)
    failed = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    submission_mark_failed(submission_id=failed.pk, run_key="x", reason="boom")
    rows, html = dashboard(cast.alice)
    row = row_for(rows, "vector-add")
    assert row.attempts_left == 2 and row.best_score == 7 and row.status == "graded"
    assert row_for(rows, "softmax").attempts_left == 3
    assert row_for(rows, "softmax").status == "not_started"
    assert "Graded" in html and "Not started" in html


def test_the_best_score_is_the_best_graded_one_and_waiting_work_shows_submitted(
    cast: Cast,
) -> None:
    graded(cast, 9)
    graded(cast, 4)
    submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)  # queued
    row = row_for(dashboard(cast.alice)[0], "vector-add")
    assert row.best_score == 9 and row.status == "submitted"
    assert row_for(dashboard(cast.bob)[0], "vector-add").best_score is None


def test_late_and_closed_items_say_so(cast: Cast) -> None:
    now = timezone.now()
    policy(cast, "softmax", due_at=now - timedelta(days=1), late_until=now + timedelta(days=2))
    policy(cast, "matmul", due_at=now - timedelta(days=1))
    rows, _html = dashboard(cast.alice)
    assert row_for(rows, "softmax").status == "late"
    assert row_for(rows, "softmax").due_soon  # its late window ends within the week
    assert row_for(rows, "matmul").status == "closed"
    assert not row_for(rows, "matmul").due_soon


def test_a_quiz_counts_its_attempts_per_question(cast: Cast) -> None:
    rows, html = dashboard(cast.alice)
    quiz = row_for(rows, "ch15-gpu-fundamentals-quiz")
    assert quiz.attempts_per_question and quiz.attempts_left == 3
    assert quiz.status == "not_started" and "3 per question" in html


# ------------------------------------------------------------------ the chapter order file


def write_chapter(tmp_path: Path, order: str, items: tuple[str, ...] = ("a", "b")) -> list:
    for slug in items:
        (tmp_path / "ch" / slug).mkdir(parents=True)
    (tmp_path / "ch" / "chapter.toml").write_text(order)
    return [(slug, tmp_path / "ch" / slug) for slug in items]


def test_the_chapter_file_sets_each_items_position(tmp_path: Path) -> None:
    items = write_chapter(tmp_path, 'order = ["b", "a"]\n')
    assert chapter_positions(items) == {"b": 1, "a": 2}


@pytest.mark.parametrize(
    ("order", "fragment"),
    [
        ('order = ["a", "b", "c"]', "field 'order[2]': no item 'c' in this chapter's folders"),
        ('order = ["a", "b", "a"]', "field 'order[2]': 'a' is listed twice"),
        ('order = ["a"]', "field 'order': 'b' not listed; add each slug"),
        ('order = ["a", 2]', "field 'order[1]': expected string, got int"),
        ('order = "a, b"', "field 'order': expected array, got string"),
        ('order = ["a", "b"]\nposition = 1', "field 'position': unknown key"),
    ],
)
def test_a_bad_chapter_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, order: str, fragment: str
) -> None:
    items = write_chapter(tmp_path, order + "\n")
    with pytest.raises(SpecError) as caught:
        chapter_positions(items)
    assert str(tmp_path / "ch" / "chapter.toml") in str(caught.value)
    assert fragment in str(caught.value)


@pytest.mark.django_db
def test_sync_content_refuses_a_chapter_order_with_a_typo(tmp_path: Path) -> None:
    for slug in ("vector-add", "softmax"):
        shutil.copytree(settings.GRADERS_EXERCISES_ROOT / "ch15" / slug, tmp_path / "ch15" / slug)
    (tmp_path / "ch15" / "chapter.toml").write_text('order = ["softmax", "vectoradd"]\n')
    with pytest.raises(CommandError, match="no item 'vectoradd'"):
        call_command("sync_content", "--root", str(tmp_path))
    assert Item.objects.count() == 0
    (tmp_path / "ch15" / "chapter.toml").write_text('order = ["softmax", "vector-add"]\n')
    call_command("sync_content", "--root", str(tmp_path))
    assert list(Item.objects.values_list("slug", "position")) == [
        ("softmax", 1),
        ("vector-add", 2),
    ]
