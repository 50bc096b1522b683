"""Pages for short answers: the student's answer page, and the TAs' grading page with the rubric
beside each answer (the pattern of the notebook review: answer, rubric, score form, save)."""

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
from courseware.courses.models import Item
from courseware.quizzes.selectors import quiz_get_published
from courseware.quizzes.short_answer_models import ShortAnswer
from courseware.quizzes.short_answers import (
    review_rows,
    short_answer_grade,
    short_answer_save,
    short_items_for,
    short_questions_for,
    staff_may_review,
)
from courseware.quizzes.short_spec import MAX_ANSWER_CHARS, ShortQuestion
from courseware.refusals import Refused


def _published(slug: str, key: str) -> tuple[Item, ShortQuestion]:
    item = quiz_get_published(slug=slug)
    question = next((q for q in short_questions_for(item) if q.key == key), None) if item else None
    if item is None or question is None:
        raise Http404("No such question")
    return item, question


@login_required
@require_http_methods(["GET", "POST"])
def short_answer_page(request: AuthenticatedHttpRequest, slug: str, key: str) -> HttpResponse:
    item, _question = _published(slug, key)
    typed: str | None = None
    status = 200
    if request.method == "POST":
        typed = request.POST.get("answer", "")
        try:
            short_answer_save(user=request.user, quiz_slug=slug, key=key, text=typed)
        except Refused as refused:
            messages.error(request, refused.message)
            status = refused.status_code
        else:
            messages.success(request, _("Your answer is saved. A TA will grade it."))
            if request.POST.get("from") == "quiz":  # answered on the quiz page: back to it
                return redirect(f"{reverse('quiz-detail', args=[slug])}#short-{key}")
            return redirect("quiz-short-answer", slug=slug, key=key)
    state = next(
        s
        for s in short_items_for(user=request.user, item=item, language=get_language())
        if s.question.key == key
    )
    context = {
        "item": item,
        "state": state,
        "typed": typed if typed is not None else (state.answer.text if state.answer else ""),
        "max_chars": MAX_ANSWER_CHARS,
        "may_review": staff_may_review(user=request.user, item=item),
    }
    return render(request, "quizzes/short_answer.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def short_answer_review(request: AuthenticatedHttpRequest, slug: str, key: str) -> HttpResponse:
    item, question = _published(slug, key)
    if not staff_may_review(user=request.user, item=item):
        raise Http404("No such page")
    lang = "zh" if (get_language() or "").startswith("zh") else "en"
    if request.method == "POST":
        answer = ShortAnswer.objects.filter(
            pk=request.POST.get("answer_id") or 0, item=item, key=key
        ).first()
        if answer is None:
            raise Http404("No such answer")
        points = {c.id: request.POST.get(f"points-{c.id}", "") for c in question.criteria}
        try:
            short_answer_grade(
                grader=request.user,
                answer=answer,
                points=points,
                comment=request.POST.get("comment", ""),
            )
        except Refused as refused:
            messages.error(request, refused.message)
        else:
            messages.success(
                request,
                _("Grade saved for %(student)s.") % {"student": answer.user.get_username()},
            )
        url = reverse("quiz-short-answer-review", kwargs={"slug": slug, "key": key})
        return redirect(f"{url}#answer-{answer.pk}")
    context = {
        "item": item,
        "question": question,
        "text": question.text[lang],
        "guide": question.guide[lang],
        "rows": review_rows(
            user=request.user, item=item, question=question, language=get_language()
        ),
    }
    return render(request, "quizzes/short_answer_review.html", context)
