"""Pages for TAs and instructors: the review queue, hand grading, overrides and regrades."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.selectors import user_is_staff_of
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.models import Submission


def _staff_submission(request: AuthenticatedHttpRequest, submission_id: int) -> Submission:
    submission = selectors.submission_get_visible(user=request.user, submission_id=submission_id)
    if submission is None or not user_is_staff_of(user=request.user, offering=submission.offering):
        raise Http404("No such submission")
    return submission


def _score_from(request: AuthenticatedHttpRequest) -> Decimal | None:
    try:
        return Decimal(request.POST.get("score", "").strip())
    except InvalidOperation:
        messages.error(request, _("Type the score as a number, e.g. 3 or 2.5."))
        return None


@login_required
def review_queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    queue = selectors.review_queue_for(user=request.user)[:200]
    return render(request, "courseware/review_queue.html", {"queue": queue})


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
