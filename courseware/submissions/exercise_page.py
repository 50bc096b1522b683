"""What the exercise page shows a student besides the prompt: the deadline, the attempts left,
the device that will grade the work, the size limit, and their submissions with scores."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from courseware.courses.models import Item, ItemKind
from courseware.courses.selectors import EffectivePolicy, enrolment_for_item, policy_for
from courseware.submissions.ladder_view import LadderView, exercise_ladder
from courseware.submissions.models import PENDING_STATUSES, Status, Submission, Verdict
from courseware.submissions.notebook_tasks import NotebookTask, notebook_tasks
from courseware.submissions.selectors import (
    LatePenalties,
    attempts_used,
    grading_device_for,
    source_limit_bytes,
    submission_effective_score,
    submission_list_for,
    submissions_with_scores,
)
from graders import SpecError, load_exercise
from graders.authoring.ladder_rules import LadderRecord
from graders.authoring.validate import latest_ladder
from graders.spec.exercise import worker_kind_device

DEVICE_LABELS: dict[str, Promise] = {
    "cuda": gettext_lazy("an NVIDIA GPU (CUDA)"),
    "cpu": gettext_lazy("a CPU core"),
}
FINISHED = (Status.GRADED, Status.NEEDS_REVIEW, Status.FAILED)
SHOWN_SUBMISSIONS = 20


@dataclass(frozen=True)
class SubmissionRow:
    submission: Submission
    score: Decimal | None
    verdict: str | None

    @property
    def is_pending(self) -> bool:
        return self.submission.status in PENDING_STATUSES

    @property
    def verdict_label(self) -> str:
        labels = dict(Verdict.choices)
        return str(labels.get(self.verdict, self.verdict)) if self.verdict else ""


@dataclass
class ExercisePage:
    item: Item
    language: str | None
    now: datetime
    enrolled: bool
    policy: EffectivePolicy | None
    attempts_used: int
    device: str | None
    source_limit: int | None
    submissions: list[SubmissionRow]
    tasks: list[NotebookTask] = field(default_factory=list)
    ladder: LadderView | None = None  # naive, reference and the student's best on one axis

    @property
    def titled_tasks(self) -> list[tuple[NotebookTask, str]]:
        return [(task, task.title(self.language)) for task in self.tasks]

    @property
    def attempts_left(self) -> int | None:
        """None: no limit (or not enrolled, which the page says instead)."""
        if self.policy is None or self.policy.max_attempts is None:
            return None
        return max(0, self.policy.max_attempts - self.attempts_used)

    @property
    def source_limit_kib(self) -> str:
        return f"{(self.source_limit or 0) / 1024:g}"

    @property
    def device_label(self) -> str:
        return str(DEVICE_LABELS.get(self.device or "", self.device or "—"))

    @property
    def is_late_window(self) -> bool:
        """The deadline has passed but late work is still taken (with a penalty)."""
        policy = self.policy
        return (
            policy is not None
            and policy.due_at is not None
            and policy.due_at < self.now
            and policy.closes_at is not None
            and self.now <= policy.closes_at
        )

    @property
    def is_closed(self) -> bool:
        closes = self.policy.closes_at if self.policy is not None else None
        return closes is not None and self.now > closes

    @property
    def not_open_yet(self) -> bool:
        opens = self.policy.opens_at if self.policy is not None else None
        return opens is not None and self.now < opens

    @property
    def late_penalty_percent(self) -> Decimal:
        if self.policy is None:
            return Decimal(0)
        return self.policy.late_penalty_per_day * 100

    @property
    def pending(self) -> Submission | None:
        """The newest submission still waiting for a grader, whose status the page follows."""
        waiting = [row.submission for row in self.submissions if row.is_pending]
        return waiting[0] if waiting else None


def submission_rows(*, user: User, item: Item) -> list[SubmissionRow]:
    """The user's newest submissions of the item, each with its effective score (a TA's
    override or hand grades included, less any late penalty) once it is finished."""
    penalties = LatePenalties()
    qs = submissions_with_scores(submission_list_for(user=user, item_id=item.pk))
    rows = []
    for submission in qs[:SHOWN_SUBMISSIONS]:
        grading = submission.current_grading if submission.status in FINISHED else None
        rows.append(
            SubmissionRow(
                submission=submission,
                score=submission_effective_score(submission, grading, penalties=penalties)
                if grading is not None
                else None,
                verdict=grading.verdict if grading is not None else None,
            )
        )
    return rows


def exercise_page_for(
    *, user: User, item: Item, language: str | None, now: datetime | None = None
) -> ExercisePage:
    enrolment = enrolment_for_item(user=user, item=item)
    offering = enrolment.offering if enrolment is not None else None
    return ExercisePage(
        item=item,
        language=language,
        now=now or timezone.now(),
        enrolled=enrolment is not None,
        policy=(
            policy_for(offering=offering, item=item, user=user) if offering is not None else None
        ),
        attempts_used=(
            attempts_used(user=user, item=item, offering_id=offering.pk) if offering else 0
        ),
        device=grading_device_for(item),
        source_limit=source_limit_bytes(item),
        submissions=(rows := submission_rows(user=user, item=item)),
        tasks=notebook_tasks(item),
        ladder=ladder_for(item, rows),
    )


def ladder_for(item: Item, rows: list[SubmissionRow]) -> LadderView | None:
    """The exercise's ladder from the student's own reports, else from its latest --perf
    validation record (the same content, on the device that grades it)."""
    if item.kind != ItemKind.EXERCISE:
        return None
    reports = [
        (row.submission.pk, row.submission.current_grading.report)
        for row in rows
        if row.submission.status in FINISHED and row.submission.current_grading is not None
    ]
    return exercise_ladder(reports, validation_ladder(item))


def validation_ladder(item: Item) -> LadderRecord | None:
    try:
        spec = load_exercise(settings.GRADERS_EXERCISES_ROOT / item.source_path)
    except SpecError:
        return None  # the page says what is wrong with the files (views._prompt_and_starter)
    return latest_ladder(spec, worker_kind_device(grading_device_for(item) or "cpu"))


def editor_strings(page: ExercisePage) -> dict[str, object]:
    """What exercise.js says, in the page's language (it has no catalog of its own)."""
    return {
        "status": {value: str(label) for value, label in Status.choices},
        "verdict": {value: str(label) for value, label in Verdict.choices},
        "too_big": _(
            "Your code is {size} bytes; the limit is {limit} bytes ({kib} KiB). "
            "Remove unused code, then submit. Nothing was sent."
        )
        .replace("{limit}", str(page.source_limit or 0))
        .replace("{kib}", page.source_limit_kib),
        "queued_next": _("Queued: yours is next in line."),
        "queued_behind_one": _("Queued: 1 submission ahead of yours."),
        "queued_behind": _("Queued: {n} submissions ahead of yours."),
        # The API's estimated_wait_s, from measured grading times (selectors.estimated_wait_s).
        "wait_under_minute": _("Expected wait: under a minute."),
        "wait_minutes": _("Expected wait: about {n} min."),
        "workers_lost": _(
            "Grading was cut off twice when a grading machine failed; a TA will grade it. "
            "This costs you nothing."
        ),
        "running": _("Running: your code is being graded on {device}."),
        "graded": _("Graded: {verdict}, score {score} / {max}."),
        "needs_review": _("Graded by the machine; a TA will look at it before the score is final."),
        "failed": _("The grader failed on our side; this costs you nothing. Submit again."),
        "report": _("See the full report"),
        "submitting": _("Sending your code…"),
        "offline": _(
            "Could not reach the server; your code is still here. Check your connection and "
            "submit again."
        ),
        "reset_confirm": _("Replace what is in the editor with the starter code?"),
        "device": page.device_label,
        "max_score": f"{page.item.max_score.normalize():f}",
    }
