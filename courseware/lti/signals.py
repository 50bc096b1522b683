"""Score changes, wherever they happen, queue the passback.

Receivers on the rows that change a score (a grading, a regrade's new grading, an override, a
person's hand grade, a quiz attempt, an item's late penalty), so that the submissions and
quizzes apps need not know about LMSes. Each costs one query when nothing is linked to an LMS.
The score itself is read later, by the task, from the gradebook: at post_save the grading's
transaction has not yet set the submission's status that the gradebook reads.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save

from courseware.courses.models import ItemPolicy
from courseware.lti.models import LtiContext, ResourceLink, SendReason
from courseware.lti.passback import score_changed
from courseware.quizzes.models import Attempt, ShortAnswerGrade
from courseware.submissions.models import Grading, ManualGrade, Override, Submission


def lms_linked(offering_id: int, item_id: int) -> bool:
    return ResourceLink.objects.filter(item_id=item_id, context__offering_id=offering_id).exists()


def submission_score_changed(submission: Submission, reason: SendReason) -> None:
    if submission.offering_id is None:
        return
    score_changed(
        offering_id=submission.offering_id,
        user_id=submission.user_id,
        item_id=submission.item_id,
        reason=reason,
    )


def grading_saved(sender: type[Grading], instance: Grading, created: bool, **_: Any) -> None:
    if not created:
        return
    submission = instance.submission
    if submission.offering_id is None or not lms_linked(submission.offering_id, submission.item_id):
        return
    earlier = Grading.objects.filter(submission_id=submission.pk).exclude(pk=instance.pk)
    reason = SendReason.REGRADED if earlier.exists() else SendReason.GRADED
    submission_score_changed(submission, reason)


def override_saved(sender: type[Override], instance: Override, created: bool, **_: Any) -> None:
    if created:
        submission_score_changed(instance.submission, SendReason.OVERRIDDEN)


def manual_grade_saved(
    sender: type[ManualGrade], instance: ManualGrade, created: bool, **_: Any
) -> None:
    if created:
        submission_score_changed(instance.submission, SendReason.HAND_GRADED)


def attempt_saved(sender: type[Attempt], instance: Attempt, created: bool, **_: Any) -> None:
    if not created or instance.offering_id is None:
        return
    if not LtiContext.objects.filter(offering_id=instance.offering_id).exists():
        return
    score_changed(
        offering_id=instance.offering_id,
        user_id=instance.user_id,
        item_id=instance.question.quiz.item_id,
        reason=SendReason.QUIZ,
    )


def short_answer_graded(
    sender: type[ShortAnswerGrade], instance: ShortAnswerGrade, created: bool, **_: Any
) -> None:
    """A TA's grade of a short answer changes the quiz's total (the gradebook counts it)."""
    answer = instance.answer
    if not created or answer.offering_id is None:
        return
    if not LtiContext.objects.filter(offering_id=answer.offering_id).exists():
        return
    score_changed(
        offering_id=answer.offering_id,
        user_id=answer.user_id,
        item_id=answer.item_id,
        reason=SendReason.HAND_GRADED,
    )


def policy_saved(sender: type[ItemPolicy], instance: ItemPolicy, **_: Any) -> None:
    """A changed late penalty changes the score of every late submission of the item."""
    if not LtiContext.objects.filter(offering_id=instance.offering_id).exists():
        return
    late_students = (
        Submission.objects.filter(
            offering_id=instance.offering_id, item_id=instance.item_id, is_late=True
        )
        .values_list("user_id", flat=True)
        .distinct()
    )
    for user_id in late_students:
        score_changed(
            offering_id=instance.offering_id,
            user_id=user_id,
            item_id=instance.item_id,
            reason=SendReason.LATE_PENALTY,
        )


def connect() -> None:
    post_save.connect(grading_saved, sender=Grading, dispatch_uid="lti-grading")
    post_save.connect(override_saved, sender=Override, dispatch_uid="lti-override")
    post_save.connect(manual_grade_saved, sender=ManualGrade, dispatch_uid="lti-manual-grade")
    post_save.connect(attempt_saved, sender=Attempt, dispatch_uid="lti-quiz-attempt")
    post_save.connect(policy_saved, sender=ItemPolicy, dispatch_uid="lti-item-policy")
    post_save.connect(
        short_answer_graded, sender=ShortAnswerGrade, dispatch_uid="lti-short-answer-grade"
    )
