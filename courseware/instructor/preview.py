"""An item as a student sees it, for its staff: nothing is submitted or recorded.

A coding or notebook exercise shows the facts block, the prompt and the starter code as the
exercise page does. A quiz shows every question with the numbers of one variant — a given
student's attempt (the same draw courseware.quizzes.variants makes for them) or a seed — and
the right answer with the worked explanation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from courseware.courses.models import Item, ItemKind, Offering
from courseware.courses.selectors import policy_for
from courseware.markdown import render_markdown, without_title
from courseware.quizzes import variants
from courseware.quizzes.content import QuizUnavailable, quiz_spec_for
from courseware.quizzes.spec import Choice, QuizFileError, render
from courseware.quizzes.spec import Question as QuestionSpec
from courseware.submissions.exercise_page import ExercisePage
from courseware.submissions.notebook_tasks import notebook_tasks
from courseware.submissions.selectors import grading_device_for, source_limit_bytes
from graders import SpecError, load_exercise


@dataclass
class ExercisePreview:
    page: ExercisePage  # the facts a student sees: deadline, attempts, device, size limit
    prompt_html: str = ""
    starter: str = ""
    problem: str = ""  # the files' error, if they cannot be read


def exercise_preview(*, offering: Offering, item: Item, language: str | None) -> ExercisePreview:
    page = ExercisePage(
        item=item,
        language=language,
        now=timezone.now(),
        enrolled=True,
        policy=policy_for(offering=offering, item=item),
        attempts_used=0,
        device=grading_device_for(item),
        source_limit=source_limit_bytes(item),
        submissions=[],
        tasks=notebook_tasks(item) if item.kind == ItemKind.NOTEBOOK else [],
    )
    preview = ExercisePreview(page=page)
    if item.kind != ItemKind.EXERCISE:
        return preview
    try:
        spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / item.source_path)
    except SpecError as exc:
        preview.problem = str(exc)
        return preview
    preview.prompt_html = render_markdown(without_title(spec.prompt(language or "en")))
    preview.starter = spec.starter
    return preview


@dataclass(frozen=True)
class Variant:
    """Which numbers to show: a student's attempt, or a seed for any draw."""

    student: User | None = None
    attempt: int = 1
    seed: int = 1


@dataclass
class ChoicePreview:
    letter: str
    text: str
    correct: bool


@dataclass
class QuestionPreview:
    number: int
    key: str
    kind: str
    section: str
    points: float
    text: str = ""
    variables: dict[str, Any] = field(default_factory=dict)
    choices: list[ChoicePreview] = field(default_factory=list)
    unit: str | None = None
    answer_text: str = ""
    explanation: str = ""
    problem: str = ""  # the answer function failed for these numbers


@dataclass
class QuizPreview:
    variant: Variant
    questions: list[QuestionPreview] = field(default_factory=list)
    problem: str = ""  # the quiz's files cannot be loaded


def quiz_preview(*, item: Item, variant: Variant, language: str | None) -> QuizPreview:
    preview = QuizPreview(variant=variant)
    try:
        spec = quiz_spec_for(item)
    except QuizUnavailable as exc:
        preview.problem = str(exc)
        return preview
    lang = "zh" if language and language.startswith("zh") else "en"
    for number, question in enumerate(spec.questions, start=1):
        preview.questions.append(
            question_preview(
                number=number, question=question, quiz_slug=spec.slug, variant=variant, lang=lang
            )
        )
    return preview


def question_preview(
    *, number: int, question: QuestionSpec, quiz_slug: str, variant: Variant, lang: str
) -> QuestionPreview:
    shown = QuestionPreview(
        number=number,
        key=question.key,
        kind=question.kind,
        section=question.section,
        points=question.points,
        unit=question.unit,
    )
    if variant.student is not None:
        variables = variants.variant_for(
            question=question,
            user_id=variant.student.pk,
            quiz_slug=quiz_slug,
            attempt=variant.attempt,
        )
        order = variants.choice_order(
            question=question, user_id=variant.student.pk, quiz_slug=quiz_slug
        )
    else:
        variables = question.draw(variant.seed) if question.is_parameterized else {}
        order = list(question.choices)
    shown.variables = variables
    try:
        solution = question.solve(variables)
        shown.text = render(question.text[lang], variables)
        shown.choices = _choices(order, variables, solution.answer, lang)
        shown.answer_text = question.answer_text(solution, variables, lang)
        context = question.explanation_context(solution, variables, lang)
        shown.explanation = render(question.explanation[lang], context)
    except QuizFileError as exc:
        shown.problem = str(exc)
    except (KeyError, IndexError, ValueError) as exc:  # a template naming an unknown field
        shown.problem = f"{question.file}: {type(exc).__name__}: {exc}"
    return shown


def _choices(
    order: list[Choice], variables: dict[str, Any], answer: object, lang: str
) -> list[ChoicePreview]:
    right = answer if isinstance(answer, frozenset) else frozenset()
    return [
        ChoicePreview(chr(ord("A") + i), render(c.text[lang], variables), c.id in right)
        for i, c in enumerate(order)
    ]
