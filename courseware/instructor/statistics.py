"""How an offering's students did on one item: the figures an instructor reads to see which
exercise or question needs another look. Only the offering's students count: a TA trying an
exercise out does not move the figures."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Q, QuerySet

from courseware.courses.models import Enrolment, Item, Offering, Role
from courseware.quizzes.content import QuizUnavailable, quiz_spec_for
from courseware.quizzes.models import Attempt, QuestionKind
from courseware.quizzes.spec import Question as QuestionSpec
from courseware.quizzes.spec import render
from courseware.submissions.models import Status, Submission, Verdict
from courseware.submissions.selectors import (
    LatePenalties,
    submission_effective_score,
    submissions_with_scores,
)

HISTOGRAM_BINS = 10
MOST_COMMON_WRONG = 5
FINISHED = (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)


def _student_ids(offering: Offering) -> list[int]:
    return list(
        Enrolment.objects.filter(offering=offering, role=Role.STUDENT).values_list(
            "user_id", flat=True
        )
    )


@dataclass(frozen=True)
class Bin:
    low: Decimal  # share of the maximum score, 0..1
    high: Decimal
    count: int
    width_percent: int  # of the tallest bin, for the bar


@dataclass
class ExerciseStatistics:
    item: Item
    students: int  # students of the offering
    submitted: int  # students with at least one submission
    attempts: int
    scored: int  # students with a finished, scored submission
    mean_best: Decimal | None
    histogram: list[Bin]
    verdicts: list[tuple[str, str, int]]  # (verdict, its label, submissions)


def exercise_statistics(*, offering: Offering, item: Item) -> ExerciseStatistics:
    students = _student_ids(offering)
    qs = Submission.objects.filter(offering=offering, item=item, user_id__in=students)
    attempts = qs.count()
    submitted = qs.values("user_id").distinct().count()
    best: dict[int, Decimal] = {}
    verdicts: Counter[str] = Counter()
    penalties = LatePenalties()
    for submission in submissions_with_scores(qs.filter(status__in=FINISHED)):
        grading = submission.current_grading
        if grading is None:
            continue
        verdicts[grading.verdict or ""] += 1
        score = submission_effective_score(submission, grading, penalties=penalties)
        if score is not None and score > best.get(submission.user_id, Decimal(-1)):
            best[submission.user_id] = score
    mean = (sum(best.values(), Decimal(0)) / len(best)).quantize(Decimal("0.01")) if best else None
    labels = dict(Verdict.choices)
    return ExerciseStatistics(
        item=item,
        students=len(students),
        submitted=submitted,
        attempts=attempts,
        scored=len(best),
        mean_best=mean,
        histogram=score_histogram(list(best.values()), item.max_score),
        verdicts=[
            (verdict, str(labels.get(verdict, verdict or "—")), n)
            for verdict, n in verdicts.most_common()
        ],
    )


def score_histogram(scores: list[Decimal], max_score: Decimal) -> list[Bin]:
    """Scores in ten bins of a tenth of the maximum each; the last bin holds full marks."""
    counts = [0] * HISTOGRAM_BINS
    for score in scores:
        share = score / max_score if max_score > 0 else Decimal(0)
        index = int(share * HISTOGRAM_BINS)
        counts[min(max(index, 0), HISTOGRAM_BINS - 1)] += 1
    tallest = max(counts) or 1
    step = Decimal(1) / HISTOGRAM_BINS
    return [
        Bin(step * i, step * (i + 1), n, round(100 * n / tallest)) for i, n in enumerate(counts)
    ]


@dataclass(frozen=True)
class WrongAnswer:
    text: str  # the options as the student saw them, or the number with its unit
    count: int


@dataclass
class QuestionStatistics:
    number: int
    key: str
    kind: str
    points: Decimal
    attempts: int
    students: int
    right_attempts: int
    mean_score: Decimal | None  # of each student's best score on the question
    wrong_answers: list[WrongAnswer] = field(default_factory=list)

    @property
    def percent_right(self) -> int | None:
        return round(100 * self.right_attempts / self.attempts) if self.attempts else None


@dataclass
class QuizStatistics:
    item: Item
    students: int
    questions: list[QuestionStatistics]
    problem: str = ""  # the quiz's files cannot be read: choice texts are shown as ids


def quiz_statistics(*, offering: Offering, item: Item, language: str | None) -> QuizStatistics:
    students = _student_ids(offering)
    lang = "zh" if language and language.startswith("zh") else "en"
    specs: dict[str, QuestionSpec] = {}
    problem = ""
    try:
        specs = {q.key: q for q in quiz_spec_for(item).questions}
    except QuizUnavailable as exc:
        problem = str(exc)
    rows = list(item.quiz.questions.filter(is_active=True).order_by("position"))
    attempts = Attempt.objects.filter(offering=offering, user_id__in=students, question__in=rows)
    totals = {
        row["question_id"]: row
        for row in attempts.values("question_id").annotate(
            n=Count("id"),
            students=Count("user_id", distinct=True),
            right=Count("id", filter=Q(is_correct=True)),
        )
    }
    means = _mean_of_best(attempts)
    wrong: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in attempts.filter(is_correct=False).order_by("created_at"):
        wrong[attempt.question_id].append(attempt)
    questions = []
    for number, row in enumerate(rows, start=1):
        total = totals.get(row.pk, {})
        questions.append(
            QuestionStatistics(
                number=number,
                key=row.key,
                kind=row.kind,
                points=row.points,
                attempts=total.get("n", 0),
                students=total.get("students", 0),
                right_attempts=total.get("right", 0),
                mean_score=means.get(row.pk),
                wrong_answers=most_common_wrong(
                    wrong.get(row.pk, []), kind=row.kind, spec=specs.get(row.key), lang=lang
                ),
            )
        )
    return QuizStatistics(item=item, students=len(students), questions=questions, problem=problem)


def _mean_of_best(attempts: QuerySet[Attempt]) -> dict[int, Decimal]:
    """Each question's mean of every student's best score on it."""
    best: dict[tuple[int, int], Decimal] = {}
    for question_id, user_id, score in attempts.values_list("question_id", "user_id", "score"):
        key = (question_id, user_id)
        best[key] = max(best.get(key, score), score)
    per_question: dict[int, list[Decimal]] = defaultdict(list)
    for (question_id, _user), score in best.items():
        per_question[question_id].append(score)
    return {
        q: (sum(scores, Decimal(0)) / len(scores)).quantize(Decimal("0.01"))
        for q, scores in per_question.items()
    }


def most_common_wrong(
    attempts: list[Attempt], *, kind: str, spec: QuestionSpec | None, lang: str
) -> list[WrongAnswer]:
    """The wrong answers given most often: for a choice question the options picked, worded
    as the student saw them (with their numbers); for a number, the value read in the
    question's unit."""
    counts: Counter[str] = Counter()
    for attempt in attempts:
        if kind == QuestionKind.NUMERIC:
            counts[_number_text(attempt.answer, spec)] += 1
        else:
            counts[_options_text(attempt, spec, lang)] += 1
    return [WrongAnswer(text, n) for text, n in counts.most_common(MOST_COMMON_WRONG)]


def _number_text(value: object, spec: QuestionSpec | None) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    text = format(float(value), ".4g")
    unit = spec.unit if spec is not None else None
    return f"{text} {unit}" if unit else text


def _options_text(attempt: Attempt, spec: QuestionSpec | None, lang: str) -> str:
    ids = attempt.answer if isinstance(attempt.answer, list) else [attempt.answer]
    texts = {c.id: c.text[lang] for c in spec.choices} if spec is not None else {}
    shown = []
    for cid in ids:
        template = texts.get(str(cid))
        if template is None:
            shown.append(str(cid))  # removed from the files since: its id is all there is
            continue
        try:
            shown.append(render(template, attempt.variables))
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            shown.append(template)
    return "; ".join(shown)
