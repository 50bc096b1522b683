"""The notebook a student submitted, as they sent it: for its author and the course staff."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.submissions import selectors
from courseware.submissions.models import Submission, SubmissionKind


def notebook_file_name(submission: Submission) -> str:
    """e.g. "fusion-notebook-42-alice.ipynb": which exercise, which submission, whose."""
    username = "".join(
        ch if ch.isalnum() or ch in "-_." else "_" for ch in submission.user.get_username()
    )
    return f"{submission.item.slug}-{submission.pk}-{username}.ipynb"


@login_required
def notebook_download(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    """The submitted .ipynb as a download. Anyone else gets a 404, as for the page itself."""
    submission = selectors.submission_get_visible(user=request.user, submission_id=submission_id)
    if submission is None or submission.kind != SubmissionKind.NOTEBOOK:
        raise Http404("No such notebook submission")
    response = HttpResponse(submission.source, content_type="application/x-ipynb+json")
    response["Content-Disposition"] = f'attachment; filename="{notebook_file_name(submission)}"'
    return response
