"""Web pages: the exercise list, one exercise with its code box, one submission."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import ItemKind
from courseware.courses.selectors import item_get_published, item_list_published, user_is_staff_of
from courseware.markdown import render_markdown, without_title
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from graders import SpecError, load_exercise


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    language = get_language()
    items = [(item, item.title(language)) for item in item_list_published()]
    return render(request, "courseware/home.html", {"items": items})


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
    item = item_get_published(slug=slug)
    if item is None:
        raise Http404("No such exercise")
    code = ""
    if request.method == "POST":
        code = request.POST.get("code", "")
        try:
            submission = services.submission_create(
                user=request.user,
                exercise_slug=slug,
                code=code,
                notebook=_notebook_from_upload(request),
            )
        except Refused as refused:
            # Keep what the student typed in the box: nothing they sent is lost.
            messages.error(request, refused.message)
        else:
            return redirect("submission-detail", submission_id=submission.pk)
    prompt_html, starter = "", ""
    if item.kind == ItemKind.EXERCISE:
        try:
            spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / item.source_path)
            # mistune's HTML renderer returns text (its AST renderer would return a list).
            prompt_html = render_markdown(without_title(spec.prompt(get_language() or "en")))
            starter = spec.starter
        except SpecError as exc:
            messages.warning(request, _("This exercise's files have a problem: %s") % exc)
    context = {
        "item": item,
        "is_notebook": item.kind == ItemKind.NOTEBOOK,
        "title": item.title(get_language()),
        "prompt_html": prompt_html,
        "code": code or starter,
        "submissions": selectors.submission_list_for(user=request.user, item_id=item.pk)[:20],
    }
    return render(request, "courseware/exercise.html", context)


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
    data = selectors.submission_as_api(submission, for_staff=staff)
    context = {
        "submission": submission,
        "data": data,
        "is_staff": staff,
        "cells": (data["report"] or {}).get("cells") or [],
        "report_json": json.dumps(data["report"], indent=2) if data["report"] else "",
        "title": submission.item.title(get_language()),
    }
    return render(request, "courseware/submission.html", context)
