"""Web pages: the exercise list, one exercise with its code box, one submission."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Item, ItemKind
from courseware.courses.selectors import enrolment_exists, item_get_published, user_is_staff_of
from courseware.markdown import render_markdown, without_title
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.dashboard import dashboard_for
from courseware.submissions.exercise_page import editor_strings, exercise_page_for
from courseware.submissions.report_page import report_page, source_diff
from graders import SpecError, load_exercise


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The dashboard: every item with its deadline, attempts left, best score and status."""
    rows = dashboard_for(user=request.user, language=get_language())
    enrolled = enrolment_exists(user=request.user)
    return render(request, "courseware/home.html", {"rows": rows, "enrolled": enrolled})


def _notebook_from_upload(request: AuthenticatedHttpRequest) -> str | None:
    upload = request.FILES.get("file")
    if upload is None:
        return None
    if (upload.size or 0) > int(settings.SUBMISSIONS_MAX_BODY_BYTES):
        raise Refused(
            _("The file is larger than %(kib)d KiB.")
            % {"kib": int(settings.SUBMISSIONS_MAX_BODY_BYTES) // 1024},
            status_code=413,
        )
    try:
        return upload.read().decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(
            _("The file is not UTF-8 text; upload the .ipynb file saved by Jupyter.")
        ) from None


@login_required
@require_http_methods(["GET", "POST"])
def exercise_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The prompt, the editor (with the student's last code) and their submissions.

    With JavaScript the page submits through the JSON API and follows the grading live; the
    form post below is what works without it (and the way a notebook file is sent)."""
    item = item_get_published(slug=slug)
    if item is None:
        raise Http404("No such exercise")
    typed: str | None = None
    if request.method == "POST":
        typed = request.POST.get("code", "")
        try:
            submission = services.submission_create(
                user=request.user,
                exercise_slug=slug,
                code=typed,
                notebook=_notebook_from_upload(request),
            )
        except Refused as refused:
            # Keep what the student typed in the box: nothing they sent is lost.
            messages.error(request, refused.message)
        else:
            return redirect("submission-detail", submission_id=submission.pk)
    prompt_html, starter = _prompt_and_starter(request, item)
    if typed is None:
        latest = selectors.submission_latest_code(user=request.user, item=item)
        typed = starter if "starter" in request.GET or latest is None else latest
    page = exercise_page_for(user=request.user, item=item, language=get_language())
    context = {
        "item": item,
        "is_notebook": item.kind == ItemKind.NOTEBOOK,
        "title": item.title(get_language()),
        "prompt_html": prompt_html,
        "code": typed,
        "starter": starter,
        "page": page,
        "editor_strings": editor_strings(page),
    }
    return render(request, "courseware/exercise.html", context)


def _prompt_and_starter(request: AuthenticatedHttpRequest, item: Item) -> tuple[str, str]:
    """A coding exercise's prompt as HTML and its starter code; a notebook has neither."""
    if item.kind != ItemKind.EXERCISE:
        return "", ""
    try:
        spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / item.source_path)
    except SpecError as exc:
        messages.warning(request, _("This exercise's files have a problem: %s") % exc)
        return "", ""
    # mistune's HTML renderer returns text (its AST renderer would return a list).
    return render_markdown(without_title(spec.prompt(get_language() or "en"))), spec.starter


@login_required
def notebook_release(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The student version of a notebook exercise: solutions and hidden tests removed."""
    item = item_get_published(slug=slug)
    if item is None or item.kind != ItemKind.NOTEBOOK:
        raise Http404("No such notebook exercise")
    from graders.notebooks import load_notebook_exercise, release_notebook

    spec = load_notebook_exercise(settings.GRADERS_EXERCISES_ROOT / item.source_path)
    response = HttpResponse(release_notebook(spec), content_type="application/x-ipynb+json")
    response["Content-Disposition"] = f'attachment; filename="{item.slug}.ipynb"'
    return response


@login_required
def submission_detail(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    submission = selectors.submission_get_visible(user=request.user, submission_id=submission_id)
    if submission is None:
        raise Http404("No such submission")
    staff = user_is_staff_of(user=request.user, offering=submission.offering)
    page = report_page(submission=submission, viewer=request.user, is_staff=staff)
    context = {
        "submission": submission,
        "page": page,
        "is_staff": staff,
        "title": submission.item.title(get_language()),
    }
    return render(request, "courseware/submission.html", context)


@login_required
def submission_diff(request: AuthenticatedHttpRequest, submission_id: int) -> HttpResponse:
    """Two submissions' code side by side, for whoever may see both (`?against=<id>`)."""
    newer = selectors.submission_get_visible(user=request.user, submission_id=submission_id)
    against = request.GET.get("against", "")
    if newer is None:
        raise Http404("No such submission")
    if not against.isdigit():
        messages.error(request, _("Choose a submission to compare with from the history below."))
        return redirect("submission-detail", submission_id=newer.pk)
    older = selectors.submission_get_visible(user=request.user, submission_id=int(against))
    if older is None:
        raise Http404("No such submission")
    context = {
        "newer": newer,
        "older": older,
        "lines": source_diff(older, newer),
        "title": newer.item.title(get_language()),
    }
    return render(request, "courseware/submission_diff.html", context)
