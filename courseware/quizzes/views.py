"""Quiz pages. Views only translate between forms and the services/selectors.

A quiz is shown a part (a chapter section) at a time. Answering posts the question's form; the
page then comes back on that question (`?part=N#q-<number>`) with the feedback inside the
question's own block, never at the top of the page. The result of the answer travels to that
page in the session, once, so a reload shows the question without repeating it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.sessions.backends.base import SessionBase
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Item
from courseware.quizzes import selectors, services
from courseware.quizzes.content import QuizUnavailable
from courseware.quizzes.models import QuestionKind
from courseware.quizzes.parts import (
    ALL_PARTS,
    QuizPart,
    part_asked_for,
    part_holding,
    part_to_resume,
    parts_of_rows,
    quiz_parts,
)
from courseware.quizzes.short_answers import short_items_for
from courseware.quizzes.spec import QuizFileError
from courseware.refusals import Refused

ANSWERED = "quiz-answered"  # session key: the attempt to report beside its question, once


@dataclass(frozen=True)
class Refusal:
    """An answer that was not taken, with why, shown beside the question it was for."""

    key: str
    message: str
    typed: object


@login_required
def quiz_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    language = get_language()
    quizzes = [(item, item.title(language)) for item in selectors.quiz_list_published()]
    return render(request, "quizzes/list.html", {"quizzes": quizzes})


def part_url(slug: str, part: int | str, position: int | None = None) -> str:
    anchor = f"#q-{position}" if position is not None else ""
    return f"{reverse('quiz-detail', args=[slug])}?part={part}{anchor}"


def _answer_posted(item: Item, key: str, values: list[str]) -> tuple[object, str | None]:
    """The answer as the service reads it (a list for a multiple-choice question, else one
    string), and a message when a choice question was sent with nothing chosen."""
    kind = item.quiz.questions.filter(key=key).values_list("kind", flat=True).first()
    if kind == QuestionKind.MULTIPLE:
        missing = None if values else _("Choose at least one answer, then press Check.")
        return values, missing
    value = values[0] if values else ""
    if kind == QuestionKind.SINGLE and not value.strip():
        return value, _("Choose one of the answers, then press Check.")
    return value, None


def _recall_answered(session: SessionBase, slug: str) -> tuple[str, int] | None:
    """The (question, attempt number) just answered on this quiz; forgotten once read."""
    answered: Any = session.pop(ANSWERED, None)
    if not isinstance(answered, dict) or answered.get("quiz") != slug:
        return None
    key, number = answered.get("question"), answered.get("attempt")
    return (key, number) if isinstance(key, str) and isinstance(number, int) else None


def _wrong_quiz_message(slug: str, key: str) -> tuple[str, str | None]:
    """Why `key` cannot be answered here, and the page of the quiz that does ask it."""
    other = selectors.quiz_asking_question(key=key, excluding=slug)
    if other is None:
        return _("This quiz has no question '%(key)s'. Reload the page and try again.") % {
            "key": key[:80]
        }, None
    title = other.title(get_language())
    message = _("That question belongs to another quiz, “%(title)s”; answer it there.") % {
        "title": title
    }
    return message, reverse("quiz-detail", args=[other.slug])


@login_required
@require_http_methods(["GET", "POST"])
def quiz_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    item = selectors.quiz_get_published(slug=slug)
    if item is None:
        raise Http404("No such quiz")
    refusal: Refusal | None = None
    answered: tuple[str, int] | None = None
    if request.method == "POST":
        key = request.POST.get("question", "")[:200]
        answer, missing = _answer_posted(item, key, request.POST.getlist("answer"))
        try:
            if missing:
                raise Refused(missing, status_code=400)
            attempt = services.attempt_create(
                user=request.user, quiz_slug=slug, question_key=key, answer=answer
            )
        except Refused as refused:
            refusal = Refusal(key, refused.message, answer)
        else:
            request.session[ANSWERED] = {"quiz": slug, "question": key, "attempt": attempt.number}
            placed = parts_of_rows(list(item.quiz.questions.order_by("position")))
            part = part_holding(placed, key)
            return redirect(part_url(slug, part.number if part else 1, attempt.question.position))
    else:
        answered = _recall_answered(request.session, slug)
    try:
        state = selectors.quiz_state_for(user=request.user, item=item, language=get_language())
    except (QuizUnavailable, QuizFileError):
        messages.error(request, _("This quiz is being updated. Try again in a few minutes."))
        return render(request, "quizzes/list.html", {"quizzes": []}, status=503)
    parts = quiz_parts(state.questions)
    focus = refusal.key if refusal else (answered[0] if answered else "")
    asked = request.GET.get("part")
    shown: list[QuizPart[selectors.QuestionState]]
    if asked == ALL_PARTS and not focus:
        shown, current = parts, None
    else:
        current = (
            part_holding(parts, focus) or part_asked_for(parts, asked) or part_to_resume(parts)
        )
        shown = [current] if current else []
    elsewhere: tuple[str, str | None] | None = None
    for question in state.questions:
        if refusal is not None and question.key == refusal.key:
            question.extra["refused"] = refusal.message
            typed = refusal.typed
            question.extra["typed"] = typed if isinstance(typed, str) else ""
            question.extra["checked"] = typed if isinstance(typed, list) else [typed]
        if answered is not None and question.key == answered[0]:
            question.extra["answered"] = next(
                (a for a in question.attempts if a.number == answered[1]), None
            )
    if refusal is not None and part_holding(parts, refusal.key) is None:
        elsewhere = _wrong_quiz_message(slug, refusal.key)
    context = {
        "state": state,
        "parts": parts,
        "shown": shown,
        "current": current,
        "previous": _neighbour(parts, current, -1),
        "next": _neighbour(parts, current, +1),
        "elsewhere": elsewhere,
        "all_parts": ALL_PARTS,
        # The hand-graded "explain your reasoning" items (short_answers.py), after the others.
        "short_items": short_items_for(user=request.user, item=item, language=get_language()),
    }
    return render(request, "quizzes/quiz.html", context)


def _neighbour(
    parts: list[QuizPart[selectors.QuestionState]],
    current: QuizPart[selectors.QuestionState] | None,
    step: int,
) -> QuizPart[selectors.QuestionState] | None:
    if current is None:
        return None
    index = current.number - 1 + step
    return parts[index] if 0 <= index < len(parts) else None


@login_required
@require_GET
def quiz_question(request: AuthenticatedHttpRequest, slug: str, number: int) -> HttpResponse:
    """A question's own address, /quizzes/<slug>/q/<number>/: its part, scrolled to it."""
    item = selectors.quiz_get_published(slug=slug)
    if item is None:
        raise Http404("No such quiz")
    rows = list(item.quiz.questions.filter(is_active=True).order_by("position"))
    placed = parts_of_rows(rows)
    part = next((p for p in placed if any(r.position == number for r in p.questions)), None)
    if part is None:
        raise Http404("No such question")
    return redirect(part_url(slug, part.number, number))
