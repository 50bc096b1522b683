"""JSON API v1 for submissions. Views only translate between HTTP and the services."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt

from courseware.accounts.auth import BadCredentials, api_user
from courseware.courses.models import Item, ItemKind
from courseware.courses.selectors import item_get_published, item_list_published, user_is_staff_of
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.dashboard import DashboardRow, dashboard_for
from courseware.submissions.feedback import feedback_for
from courseware.submissions.models import Status, Submission, SubmissionKind
from courseware.submissions.report_page import source_is_naive
from graders import SpecError, load_exercise

ApiView = Callable[..., JsonResponse]


def error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _csrf_failure(request: HttpRequest) -> HttpResponse | None:
    """Session-authenticated writes need the CSRF token, as any form post does."""
    check = CsrfViewMiddleware(lambda r: HttpResponse())
    return check.process_view(request, lambda r: HttpResponse(), (), {})


def api_endpoint(methods: tuple[str, ...]) -> Callable[[ApiView], Callable[..., HttpResponse]]:
    def decorate(view: ApiView) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                response = error(_("Use %(m)s on this route.") % {"m": " or ".join(methods)}, 405)
                response["Allow"] = ", ".join(methods)
                return response
            try:
                user = api_user(request)
            except BadCredentials as exc:
                return error(str(exc), 401)
            if not user.is_authenticated:
                return error(
                    _("Log in, or send 'Authorization: Token <key>' with your API token."), 401
                )
            uses_session = "Authorization" not in request.headers
            if uses_session and request.method == "POST":
                failure = _csrf_failure(request)
                if failure is not None:
                    return error(_("CSRF check failed: send the X-CSRFToken header."), 403)
            return view(request, user, *args, **kwargs)

        return wrapper

    return decorate


def _read_submission_body(request: HttpRequest) -> dict[str, Any] | JsonResponse:
    """The fields of a JSON body, or of a multipart form whose `file` is the notebook."""
    limit = int(settings.SUBMISSIONS_MAX_BODY_BYTES)
    too_big = error(
        _("The request is larger than %(kib)d KiB. Send a smaller file.") % {"kib": limit // 1024},
        413,
    )
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        return too_big
    if request.content_type == "multipart/form-data":
        return _read_multipart(request, too_big)
    try:
        body = request.body
    except RequestDataTooBig:
        return too_big
    if len(body) > limit:
        return too_big
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return error(
            _('The body must be JSON, e.g. {"exercise": "vector-add", "code": "..."}.'), 400
        )
    if not isinstance(data, dict):
        return error(_("The body must be a JSON object with 'exercise' and 'code'."), 400)
    return data


def _read_multipart(request: HttpRequest, too_big: JsonResponse) -> dict[str, Any] | JsonResponse:
    try:
        upload = request.FILES.get("file")
        fields: dict[str, Any] = {"exercise": request.POST.get("exercise", "")}
    except RequestDataTooBig:
        return too_big
    if upload is None:
        return error(_("Attach your notebook as the form field 'file'."), 400)
    if (upload.size or 0) > int(settings.SUBMISSIONS_MAX_BODY_BYTES):
        return too_big
    try:
        fields["notebook"] = upload.read().decode("utf-8")
    except UnicodeDecodeError:
        return error(_("The file is not UTF-8 text; upload the .ipynb file saved by Jupyter."), 400)
    return fields


@api_endpoint(("GET", "POST"))
def submissions_collection(request: HttpRequest, user: User) -> JsonResponse:
    if request.method == "GET":
        mine = selectors.submission_list_for(user=user)
        if request.GET.get("exercise"):  # `?exercise=<slug>`: that exercise's only
            mine = mine.filter(item__slug=request.GET["exercise"])
        rows = selectors.submissions_with_scores(mine)[:100]
        return JsonResponse(
            {"submissions": [selectors.submission_as_api(s, for_staff=False) for s in rows]}
        )
    data = _read_submission_body(request)
    if isinstance(data, JsonResponse):
        return data
    code, notebook = data.get("code"), data.get("notebook")
    if code is not None and not isinstance(code, str):
        return error(_("'code' must be a string holding your Python source."), 400)
    if isinstance(notebook, dict):
        notebook = json.dumps(notebook)  # the notebook sent as a JSON object, not as text
    if notebook is not None and not isinstance(notebook, str):
        return error(_("'notebook' must be the text of your .ipynb file."), 400)
    try:
        submission = services.submission_create(
            user=user, exercise_slug=data.get("exercise", ""), code=code, notebook=notebook
        )
    except Refused as refused:
        return error(refused.message, refused.status_code)
    url = request.build_absolute_uri(reverse("submission-detail", args=[submission.pk]))
    return JsonResponse({"id": submission.pk, "status": submission.status, "url": url}, status=201)


@api_endpoint(("GET",))
def submission_detail(request: HttpRequest, user: User, submission_id: int) -> JsonResponse:
    submission = selectors.submission_get_visible(user=user, submission_id=int(submission_id))
    if submission is None:
        return error(_("No such submission."), 404)
    staff = user_is_staff_of(user=user, offering=submission.offering)
    data = selectors.submission_as_api(submission, for_staff=staff)
    data["url"] = request.build_absolute_uri(reverse("submission-detail", args=[submission.pk]))
    data["feedback"] = _feedback(submission, data.get("report"))
    return JsonResponse(data)


def _feedback(submission: Submission, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report page's feedback (findings and the next step), for clients without the page."""
    if report is None or submission.status != Status.GRADED:
        return None
    found = feedback_for(report, is_naive_source=source_is_naive(submission))
    return asdict(found) if found is not None else None


@api_endpoint(("GET",))
def submission_notebook(request: HttpRequest, user: User, submission_id: int) -> JsonResponse:
    """The text of a submitted notebook, as sent: for its author and the course staff."""
    submission = selectors.submission_get_visible(user=user, submission_id=int(submission_id))
    if submission is None:
        return error(_("No such submission."), 404)
    if submission.kind != SubmissionKind.NOTEBOOK:
        return error(_("Submission %(id)s is code, not a notebook.") % {"id": submission.pk}, 404)
    return JsonResponse(
        {"id": submission.pk, "exercise": submission.item.slug, "notebook": submission.source}
    )


@api_endpoint(("GET",))
def exercises_collection(request: HttpRequest, user: User) -> JsonResponse:
    language = getattr(request, "LANGUAGE_CODE", None)
    # The dashboard's rows hold the caller's own deadline (extensions included), attempts
    # left and best score (overrides and late penalties included): the same figures as the page.
    mine = {row.item.pk: row for row in dashboard_for(user=user, language=language)}
    return JsonResponse(
        {
            "exercises": [
                _exercise_as_api(item, mine.get(item.pk), language)
                for item in item_list_published()
            ]
        }
    )


@api_endpoint(("GET",))
def exercise_detail(request: HttpRequest, user: User, slug: str) -> JsonResponse:
    """One exercise as the list shows it: clients check a slug and its kind before sending."""
    item = item_get_published(slug=slug)
    if item is None or item.kind not in (ItemKind.EXERCISE, ItemKind.NOTEBOOK):
        return _no_such_exercise(slug)
    language = getattr(request, "LANGUAGE_CODE", None)
    row = next(
        (r for r in dashboard_for(user=user, language=language) if r.item.pk == item.pk), None
    )
    return JsonResponse(_exercise_as_api(item, row, language))


def _no_such_exercise(slug: str) -> JsonResponse:
    return error(
        _("There is no exercise named '%(slug)s'. Check the slug on the exercise page.")
        % {"slug": slug[:80]},
        404,
    )


def _exercise_as_api(item: Item, row: DashboardRow | None, language: str | None) -> dict[str, Any]:
    return {
        "slug": item.slug,
        "chapter": item.chapter,
        "title": item.title(language),
        "max_score": float(item.max_score),
        "kind": item.kind,
        "device_kinds": item.device_kinds,
        **_standing(row),
    }


def _standing(row: DashboardRow | None) -> dict[str, Any]:
    """Where the caller stands on an item: dates as ISO 8601 in UTC, None where unset."""
    if row is None:
        return dict.fromkeys(("due_at", "closes_at", "attempts_left", "best_score", "status"))
    closes = row.window.closes_at
    return {
        "due_at": row.window.due_at.isoformat() if row.window.due_at else None,
        "closes_at": closes.isoformat() if closes else None,
        "attempts_left": row.attempts_left,  # None: no limit
        "best_score": float(row.best_score) if row.best_score is not None else None,
        "status": row.status,
    }


@api_endpoint(("GET",))
def exercise_starter(request: HttpRequest, user: User, slug: str) -> JsonResponse:
    """What a student starts from: a coding exercise's starter.py, or a notebook exercise's
    student version (solutions and hidden tests removed), with the file name to save it as."""
    item = item_get_published(slug=slug)
    if item is None or item.kind not in (ItemKind.EXERCISE, ItemKind.NOTEBOOK):
        return _no_such_exercise(slug)
    folder = settings.GRADERS_EXERCISES_ROOT / item.source_path
    try:
        if item.kind == ItemKind.NOTEBOOK:
            from graders.notebooks import load_notebook_exercise, release_notebook

            release = release_notebook(load_notebook_exercise(folder))
            text, filename = release.decode("utf-8"), f"{slug}.ipynb"
        else:
            text, filename = load_exercise(folder).starter, f"{slug.replace('-', '_')}.py"
    except (SpecError, OSError):
        return error(_("This exercise is being updated. Try again in a few minutes."), 503)
    return JsonResponse(
        {"exercise": item.slug, "kind": item.kind, "filename": filename, "starter": text}
    )
