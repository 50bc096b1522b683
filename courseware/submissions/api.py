"""JSON API v1 for submissions. Views only translate between HTTP and the services."""

from __future__ import annotations

import json
from collections.abc import Callable
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
from courseware.courses.selectors import item_list_published, user_is_staff_of
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.models import SubmissionKind

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
        rows = selectors.submissions_with_scores(selectors.submission_list_for(user=user))[:100]
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
    return JsonResponse(selectors.submission_as_api(submission, for_staff=staff))


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
    return JsonResponse(
        {
            "exercises": [
                {
                    "slug": item.slug,
                    "chapter": item.chapter,
                    "title": item.title(language),
                    "max_score": float(item.max_score),
                    "kind": item.kind,
                    "device_kinds": item.device_kinds,
                }
                for item in item_list_published()
            ]
        }
    )
