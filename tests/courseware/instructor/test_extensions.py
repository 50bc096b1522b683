"""A per-student extension: given on its page, honoured by every deadline check and by the
late penalty, shown to the student as their due date, and revocable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from courseware.courses.models import Extension, Item, ItemPolicy
from courseware.quizzes.services import attempt_create
from courseware.refusals import Refused
from courseware.submissions.models import Submission
from courseware.submissions.selectors import late_factor
from courseware.submissions.services import submission_create
from tests.conftest import Cast
from tests.courseware.instructor.conftest import CODE, logged_in

pytestmark = pytest.mark.django_db

QUIZ = "ch15-gpu-fundamentals-quiz"
FAR = datetime(2099, 3, 1, 12, 30, tzinfo=UTC)


def extend(cast: Cast, item: Item, **dates: datetime) -> Extension:
    return Extension.objects.create(
        offering=cast.offering,
        item=item,
        user=cast.alice,
        reason="ill",
        granted_by=cast.ines,
        **dates,
    )


def test_a_submission_after_the_deadline_is_taken_on_time_within_the_extension(
    cast: Cast,
) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=timezone.now() - timedelta(hours=2)
    )
    extend(cast, cast.item, due_at=timezone.now() + timedelta(days=1))
    submission = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    assert not submission.is_late and submission.late_days == 0
    # The extension is Alice's own: Bob is still refused.
    with pytest.raises(Refused, match="deadline"):
        submission_create(user=cast.bob, exercise_slug="vector-add", code=CODE)


def test_the_late_penalty_counts_from_the_extended_due_date(cast: Cast) -> None:
    now = timezone.now()
    ItemPolicy.objects.create(
        offering=cast.offering,
        item=cast.item,
        due_at=now - timedelta(days=4, hours=20),
        late_until=now + timedelta(days=1),
        late_penalty_per_day=Decimal("0.1"),
    )
    extend(cast, cast.item, due_at=now - timedelta(hours=30))
    alice = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    bob = submission_create(user=cast.bob, exercise_slug="vector-add", code=CODE)
    assert (alice.is_late, alice.late_days) == (True, 2)
    assert (bob.is_late, bob.late_days) == (True, 5)
    assert late_factor(Submission.objects.get(pk=alice.pk)) == Decimal("0.8")


def test_a_quiz_answer_after_the_deadline_is_taken_within_the_extension(cast: Cast) -> None:
    quiz = Item.objects.get(slug=QUIZ)
    ItemPolicy.objects.create(
        offering=cast.offering, item=quiz, due_at=timezone.now() - timedelta(hours=1)
    )
    extend(cast, quiz, due_at=timezone.now() + timedelta(days=2))
    attempt = attempt_create(
        user=cast.alice, quiz_slug=QUIZ, question_key="04-a100-cores-per-sm", answer="64"
    )
    assert attempt.is_correct and not attempt.is_late and attempt.score > 0
    with pytest.raises(Refused):
        attempt_create(
            user=cast.bob, quiz_slug=QUIZ, question_key="04-a100-cores-per-sm", answer="64"
        )
    page = logged_in(cast.alice).get(reverse("quiz-detail", args=[QUIZ])).content.decode()
    assert "The deadline has passed" not in page


def test_the_student_sees_the_extended_date_as_their_due_date(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=datetime(2099, 1, 1, tzinfo=UTC)
    )
    extend(cast, cast.item, due_at=FAR)
    shown = FAR.isoformat()
    for url in (reverse("exercise-detail", args=["vector-add"]), reverse("home")):
        assert shown in logged_in(cast.alice).get(url).content.decode(), url
        assert shown not in logged_in(cast.bob).get(url).content.decode(), url


def grant(cast: Cast, **fields: str) -> str:
    form = {
        "student": str(cast.alice.pk),
        "item": str(cast.item.pk),
        "due_at": "2099-03-01T12:30",
        "late_until": "",
        "reason": "Medical note",
        **fields,
    }
    url = reverse("instructor-extensions", args=[cast.offering.pk])
    return logged_in(cast.ines).post(url, form, follow=True).content.decode()


def test_an_instructor_grants_lists_and_revokes_an_extension(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=datetime(2099, 1, 1, tzinfo=UTC)
    )
    page = grant(cast)
    extension = Extension.objects.get(user=cast.alice, item=cast.item)
    assert extension.due_at == FAR and extension.granted_by == cast.ines
    assert "Extension saved" in page and "Medical note" in page
    # Granting again replaces it: one extension per student and item.
    grant(cast, due_at="2099-04-01T00:00")
    replaced = Extension.objects.get(user=cast.alice, item=cast.item).due_at
    assert replaced is not None and replaced.month == 4
    url = reverse("instructor-extension-revoke", args=[cast.offering.pk, extension.pk])
    page = logged_in(cast.ines).post(url, follow=True).content.decode()
    assert "Extension revoked" in page and not Extension.objects.exists()
    page = logged_in(cast.ines).post(url, follow=True).content.decode()
    assert "no longer exists" in page


def test_bad_extensions_are_refused_with_a_message_and_nothing_saved(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=datetime(2099, 1, 1, tzinfo=UTC)
    )
    assert "new end of late work, or both" in grant(cast, due_at="")
    assert "on or after the extended due date" in grant(cast, late_until="2099-02-01T00:00")
    assert "can only give more time" in grant(cast, due_at="2098-12-01T00:00")
    assert "Enter a valid date" in grant(cast, due_at="tomorrow")
    assert "Select a valid choice" in grant(cast, student=str(cast.tara.pk))
    page = grant(cast, item=str(Item.objects.get(slug="softmax").pk))
    assert "no deadline in this offering" in page
    assert not Extension.objects.exists()


def test_the_extension_page_and_its_messages_are_in_chinese(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=datetime(2099, 1, 1, tzinfo=UTC)
    )
    client = logged_in(cast.ines)
    url = reverse("instructor-extensions", args=[cast.offering.pk])
    form = {"student": cast.alice.pk, "item": cast.item.pk, "due_at": "2098-01-01T00:00"}
    page = client.post(url, {**form, "reason": "x"}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = page.content.decode()
    assert "给予延期" in text and "延期只能给学生更多时间" in text
    teaching = client.get(reverse("instructor-index"), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "同步并验证课程内容" in teaching.content.decode()


def test_the_exercise_page_shows_the_extended_date_as_the_students_own(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=FAR - timedelta(days=30)
    )
    extend(cast, cast.item, due_at=FAR)
    alice = logged_in(cast.alice).get("/exercises/vector-add/").content.decode()
    bob = logged_in(cast.bob).get("/exercises/vector-add/").content.decode()
    assert "2099-03-01T12:30:00+00:00" in alice and "extended for you" in alice
    assert "2099-03-01T12:30" not in bob and "extended for you" not in bob
