"""Quiz pages. Views only translate between forms and the services/selectors."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.quizzes import selectors, services
from courseware.quizzes.content import QuizUnavailable
from courseware.quizzes.spec import QuizFileError
from courseware.refusals import Refused


@login_required
def quiz_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    language = get_language()
    quizzes = [(item, item.title(language)) for item in selectors.quiz_list_published()]
    return render(request, "quizzes/list.html", {"quizzes": quizzes})


@login_required
@require_http_methods(["GET", "POST"])
def quiz_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    item = selectors.quiz_get_published(slug=slug)
    if item is None:
        raise Http404("No such quiz")
    typed: dict[str, object] = {}  # what the student sent, kept in the form when refused
    if request.method == "POST":
        key = request.POST.get("question", "")
        answer: object = (
            request.POST.getlist("answer")
            if request.POST.get("kind") == "multiple"
            else request.POST.get("answer", "")
        )
        try:
            attempt = services.attempt_create(
                user=request.user, quiz_slug=slug, question_key=key, answer=answer
            )
        except Refused as refused:
            messages.error(request, refused.message)
            typed[key] = answer
        else:
            if attempt.is_correct:
                messages.success(request, _("Right! Score: %(s)s") % {"s": attempt.score})
            else:
                messages.warning(request, _("Not right: %(a)s") % {"a": attempt.raw_answer})
            return redirect(reverse("quiz-detail", args=[slug]) + f"#q-{key}")
    try:
        state = selectors.quiz_state_for(user=request.user, item=item, language=get_language())
    except (QuizUnavailable, QuizFileError):
        messages.error(request, _("This quiz is being updated. Try again in a few minutes."))
        return render(request, "quizzes/list.html", {"quizzes": []}, status=503)
    for question in state.questions:
        value = typed.get(question.key)
        question.extra["typed"] = value if isinstance(value, str) else ""
        question.extra["checked"] = value if isinstance(value, list) else [value]
    return render(request, "quizzes/quiz.html", {"state": state})
