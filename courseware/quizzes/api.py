"""JSON API v1 for quizzes. Views only translate between HTTP and the services/selectors."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest, JsonResponse
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from courseware.courses.selectors import enrolment_for_item, user_is_staff_of
from courseware.quizzes import selectors, services
from courseware.quizzes.content import QuizUnavailable
from courseware.quizzes.spec import QuizFileError
from courseware.refusals import Refused
from courseware.submissions.api import api_endpoint, error

MAX_BODY_BYTES = 64 * 1024  # an answer is a few characters; nothing bigger is read


def _read_body(request: HttpRequest) -> dict[str, Any] | JsonResponse:
    example = _('Send JSON such as {"answer": "33 us"}, {"answer": "b"} or {"answer": ["a", "c"]}.')
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return error(_("The request is too large. %(ex)s") % {"ex": example}, 413)
    try:
        data = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return error(_("The body is not valid JSON. %(ex)s") % {"ex": example}, 400)
    if not isinstance(data, dict) or "answer" not in data:
        return error(
            _("The body must be a JSON object with 'answer'. %(ex)s") % {"ex": example}, 400
        )
    return data


def _state_or_error(user: User, slug: str) -> selectors.QuizState | JsonResponse:
    item = selectors.quiz_get_published(slug=slug)
    if item is None:
        return error(_("There is no quiz named '%(slug)s'.") % {"slug": slug[:80]}, 404)
    try:
        return selectors.quiz_state_for(user=user, item=item, language=get_language())
    except (QuizUnavailable, QuizFileError):
        return error(_("This quiz is being updated. Try again in a few minutes."), 503)


@api_endpoint(("GET",))
def quizzes_collection(request: HttpRequest, user: User) -> JsonResponse:
    language = get_language()
    return JsonResponse(
        {
            "quizzes": [
                {
                    "slug": item.slug,
                    "chapter": item.chapter,
                    "title": item.title(language),
                    "max_score": float(item.max_score),
                }
                for item in selectors.quiz_list_published()
            ]
        }
    )


@api_endpoint(("GET",))
def quiz_detail(request: HttpRequest, user: User, slug: str) -> JsonResponse:
    state = _state_or_error(user, slug)
    if isinstance(state, JsonResponse):
        return state
    return JsonResponse(selectors.quiz_as_api(state))


@api_endpoint(("GET",))
def question_detail(request: HttpRequest, user: User, slug: str, key: str) -> JsonResponse:
    state = _state_or_error(user, slug)
    if isinstance(state, JsonResponse):
        return state
    question = next((q for q in state.questions if q.key == key), None)
    if question is None:
        return error(
            _("Quiz '%(quiz)s' has no question '%(key)s'.") % {"quiz": slug, "key": key}, 404
        )
    return JsonResponse(selectors.question_as_api(question))


@api_endpoint(("POST",))
def attempts_collection(request: HttpRequest, user: User, slug: str, key: str) -> JsonResponse:
    data = _read_body(request)
    if isinstance(data, JsonResponse):
        return data
    try:
        attempt = services.attempt_create(
            user=user, quiz_slug=slug, question_key=key, answer=data["answer"]
        )
    except Refused as refused:
        return error(refused.message, refused.status_code)
    state = _state_or_error(user, slug)
    if isinstance(state, JsonResponse):
        return state
    question = next(q for q in state.questions if q.key == key)
    return JsonResponse(
        {
            "attempt": {
                "number": attempt.number,
                "answer": attempt.raw_answer,
                "correct": attempt.is_correct,
                "score": float(attempt.score),
                "is_late": attempt.is_late,
            },
            "question": selectors.question_as_api(question),
        },
        status=201,
    )


@api_endpoint(("GET",))
def quiz_scores(request: HttpRequest, user: User, slug: str) -> JsonResponse:
    """The offering's scores on this quiz, for its TAs and instructors only."""
    item = selectors.quiz_get_published(slug=slug)
    if item is None:
        return error(_("There is no quiz named '%(slug)s'.") % {"slug": slug[:80]}, 404)
    enrolment = enrolment_for_item(user=user, item=item)
    if enrolment is None or not user_is_staff_of(user=user, offering=enrolment.offering):
        return error(_("Only the offering's TAs and instructors see everyone's scores."), 403)
    rows = [r for r in selectors.quiz_scores_for(offering=enrolment.offering) if r.quiz == slug]
    return JsonResponse(
        {
            "scores": [
                {
                    "user": r.username,
                    "score": float(r.score),
                    "max_score": float(r.max_score),
                    "answered": r.answered,
                    "questions": {k: float(v) for k, v in r.questions.items()},
                }
                for r in rows
            ]
        }
    )
