"""Pages for TAs and instructors: the review queue, hand grading, overrides and regrades."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.selectors import offering_ids_staffed_by, user_is_staff_of
from courseware.quizzes.short_answers import short_answers_waiting
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.models import Submission
from courseware.submissions.notebook_review import ReviewCell
from courseware.submissions.report_page import report_page


def _staff_submission(request: AuthenticatedHttpRequest, submission_id: int) -> Submission:
    submission = selectors.submission_get_visible(user=request.user, submission_id=submission_id)
    if submission is None or not user_is_staff_of(user=request.user, offering=submission.offering):
        raise Http404("No such submission")
    return submission


def _score_from(request: AuthenticatedHttpRequest) -> Decimal | None:
    try:
        score = Decimal(request.POST.get("score", "").strip())
    except InvalidOperation:
        score = None
    if score is None or not score.is_finite():  # Decimal reads "NaN" and "Infinity" too
        messages.error(request, _("Type the score as a number, e.g. 3 or 2.5."))
        return None
    return score


def refused_to_non_staff(request: AuthenticatedHttpRequest) -> HttpResponse | None:
    """A 403 page for a user who is staff of no offering; None for course staff."""
    if offering_ids_staffed_by(user=request.user) == []:
        return render(request, "courseware/review_forbidden.html", status=403)
    return None


@login_required
def review_queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    refusal = refused_to_non_staff(request)
    if refusal is not None:
        return refusal
    queue = selectors.review_queue_for(user=request.user)[:200]
    # Quizzes' short answers wait for a person too (courseware/quizzes/short_answers.py).
    short = short_answers_waiting(user=request.user)
    return render(request, "courseware/review_queue.html", {"queue": queue, "short": short})


def _go_on(request: AuthenticatedHttpRequest, submission: Submission) -> HttpResponse:
    """Back to the submission, or on to the next one waiting for a person when asked."""
    if request.POST.get("after") != "next":
        return redirect("submission-detail", submission_id=submission.pk)
    following = selectors.next_in_review_queue(user=request.user, after=submission)
    if following is None:
        messages.info(request, _("Nothing else is waiting for a person."))
        return redirect("review-queue")
    return redirect(reverse("submission-detail", args=[following.pk]) + "#hand-grading")


def _record_score(
    request: AuthenticatedHttpRequest,
    submission_id: int,
    record: Callable[..., object],
    **fields: object,
) -> HttpResponse:
    """Read the score from the form, let a service record it, and say how that went."""
    submission = _staff_submission(request, submission_id)
    score = _score_from(request)
    if score is not None:
        try:
            record(
                submission=submission,
                score=score,
                comment=request.POST.get("comment", ""),
                author=request.user,
                **fields,
            )
        except Refused as refused:
            messages.error(request, refused.message)
        else:
            messages.success(request, _("Saved."))
            return _go_on(request, submission)
    return redirect("submission-detail", submission_id=submission.pk)


@login_required
@require_POST
def manual_grade(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    return _record_score(
        request,
        submission_id,
        services.manual_grade_record,
        grade_id=request.POST.get("grade_id", ""),
    )


@login_required
@require_POST
def override(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    return _record_score(request, submission_id, services.override_record)


@login_required
@require_POST
def regrade(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    submission = _staff_submission(request, submission_id)
    if services.submission_regrade(submission=submission, requested_by=request.user):
        messages.success(request, _("Queued for a regrade; earlier gradings stay in the history."))
    else:
        messages.error(request, _("It is still waiting to be graded; regrade it once it is done."))
    return redirect("submission-detail", submission_id=submission.pk)


class _FormProblem(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _comment_with_saved(request: AuthenticatedHttpRequest, grade_id: str) -> str:
    """The comment typed for a cell, with the saved comment chosen in its list (the way it
    is inserted without JavaScript) added when the text does not hold it already."""
    comment = request.POST.get(f"comment-{grade_id}", "").strip()
    chosen = request.POST.get(f"saved-{grade_id}", "").strip()
    if chosen and chosen not in comment:
        comment = f"{comment}\n{chosen}".strip()
    return comment


def _cell_scores(
    request: AuthenticatedHttpRequest, cells: list[ReviewCell]
) -> list[services.CellScore]:
    """The scores typed in the hand-grading form; a cell left blank is left as it was."""
    scores = []
    for cell in cells:
        typed = request.POST.get(f"score-{cell.grade_id}", "").strip()
        comment = _comment_with_saved(request, cell.grade_id)
        if not typed:
            if comment and comment != cell.comment:
                raise _FormProblem(
                    _("Give a score for %(cell)s as well as the comment.") % {"cell": cell.grade_id}
                )
            continue
        try:
            score = Decimal(typed)
        except InvalidOperation:
            raise _FormProblem(
                _("Type the score for %(cell)s as a number, e.g. 3 or 2.5.")
                % {"cell": cell.grade_id}
            ) from None
        if score == cell.score and comment == cell.comment:
            continue  # unchanged: saving it again would only add a duplicate to the history
        scores.append(services.CellScore(cell.grade_id, score, comment))
    return scores


def _page_with_typed(
    request: AuthenticatedHttpRequest, submission: Submission, message: str
) -> HttpResponse:
    """The submission page again, with the refusal and what the TA typed still in the boxes."""
    messages.error(request, message)
    page = report_page(submission=submission, viewer=request.user, is_staff=True)
    page.review_cells = [
        dataclasses.replace(
            cell,
            score_text=request.POST.get(f"score-{cell.grade_id}", cell.score_text),
            comment=_comment_with_saved(request, cell.grade_id),
        )
        for cell in page.review_cells
    ]
    context = {
        "submission": submission,
        "page": page,
        "is_staff": True,
        "title": submission.item.title(get_language()),
    }
    return render(request, "courseware/submission.html", context, status=400)


@login_required
@require_POST
def hand_grades(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    """Save every hand-graded cell's score and comment at once ("Save", or "Save and next
    ungraded"); comments ticked "keep" are saved for reuse on this exercise."""
    submission = _staff_submission(request, submission_id)
    page = report_page(submission=submission, viewer=request.user, is_staff=True)
    try:
        scores = _cell_scores(request, page.review_cells)
        services.manual_grades_record(submission=submission, scores=scores, author=request.user)
    except _FormProblem as problem:
        return _page_with_typed(request, submission, problem.message)
    except Refused as refused:
        return _page_with_typed(request, submission, refused.message)
    for cell in page.review_cells:
        if request.POST.get(f"keep-{cell.grade_id}"):
            services.saved_comment_keep(
                submission=submission,
                grade_id=cell.grade_id,
                text=request.POST.get(f"comment-{cell.grade_id}", ""),
                author=request.user,
            )
    messages.success(
        request,
        _("Saved.") if scores else _("Nothing changed: type a score to grade a cell."),
    )
    return _go_on(request, submission)
