"""Submissions and what became of them.

A Submission is what the student sent; its content never changes once made. Its `status` is
the only field that moves, and only through the services in `services.py`. Every grading is a
row of its own (a regrade adds one, history stays), and so is every override a TA makes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering


class Status(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    GRADED = "graded", _("Graded")
    NEEDS_REVIEW = "needs_review", _("Needs review")
    # The grader itself broke: the student loses nothing and may resubmit at no cost.
    FAILED = "failed", _("Failed (not your fault)")


PENDING_STATUSES = (Status.QUEUED, Status.RUNNING)


class ReviewReason(models.TextChoices):
    """Why a submission waits for a person when no grading asked for one."""

    NONE = "", "—"
    # Workers were lost twice while grading it: a third might die the same way (a submission
    # that kills its grader), so a person decides.
    WORKERS_LOST = (
        "workers_lost",
        _(
            "Its grading was cut off twice by a lost worker. Look at the code, then regrade it or "
            "give it a score."
        ),
    )


class Verdict(models.TextChoices):
    CORRECT = "correct", _("Correct")
    WRONG = "wrong", _("Wrong")
    ERROR = "error", _("Error")
    TIMEOUT = "timeout", _("Timeout")
    REJECTED = "rejected", _("Rejected")


class SubmissionKind(models.TextChoices):
    CODE = "code", _("Code")
    NOTEBOOK = "notebook", _("Notebook")


class Submission(models.Model):
    IMMUTABLE_FIELDS: ClassVar[tuple[str, ...]] = (
        "user_id",
        "item_id",
        "offering_id",
        "kind",
        "source",
        "source_sha256",
        "content_hash",
        "device_kind",
        "created_at",
        "is_late",
        "late_days",
    )

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions"
    )
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="submissions")
    offering = models.ForeignKey(
        Offering, on_delete=models.PROTECT, related_name="submissions", null=True, blank=True
    )
    kind = models.CharField(max_length=16, choices=SubmissionKind.choices)
    source = models.TextField(_("source"))
    source_sha256 = models.CharField(max_length=64)
    content_hash = models.CharField(
        _("exercise content hash"),
        max_length=64,
        help_text=_("The hash of the exercise files this was submitted against."),
    )
    # The worker kind that grades it, which is also its Celery queue: "cpu", "cuda-h100"...
    device_kind = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    is_late = models.BooleanField(default=False)
    late_days = models.PositiveIntegerField(default=0)

    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    status_changed_at = models.DateTimeField(auto_now=True)
    # When it joined the queue for its current grading (made, or a regrade asked for). A
    # submission put back after its worker was lost keeps its place: this does not move.
    queued_at = models.DateTimeField(default=timezone.now)

    # The claim of a running submission: which worker process holds it. A worker's result
    # counts only while its token is still the submission's (services.grading_record).
    claim_token = models.CharField(max_length=64, blank=True, default="")
    claimed_by = models.CharField(max_length=200, blank=True, default="")  # Celery node name
    claimed_pid = models.IntegerField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Times a worker died (or went silent) while grading it; at the limit a TA takes over.
    workers_lost = models.PositiveSmallIntegerField(default=0)
    # Times the grader itself raised on it; at the limit it is failed, at no cost to the student.
    grader_errors = models.PositiveSmallIntegerField(default=0)
    review_reason = models.CharField(
        max_length=32, choices=ReviewReason.choices, blank=True, default=ReviewReason.NONE
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "item", "status"]),
            # The fair queue of a worker kind reads its pending submissions.
            models.Index(fields=["device_kind", "status"]),
        ]

    def __str__(self) -> str:
        # "vector-add #3 by alice (graded)": what a person looking for a submission knows.
        status = str(self.status).replace("_", " ")
        return f"{self.item.slug} #{self.pk} by {self.user.get_username()} ({status})"

    def save(self, *args: Any, **kwargs: Any) -> None:  # Model.save's own signature
        if self.pk is not None and not self._state.adding:
            before = type(self).objects.filter(pk=self.pk).values(*self.IMMUTABLE_FIELDS).first()
            if before is not None:
                changed = [f for f in self.IMMUTABLE_FIELDS if before[f] != getattr(self, f)]
                if changed:
                    raise ValidationError(f"A submission never changes once made: {changed}")
        super().save(*args, **kwargs)

    @property
    def current_grading(self) -> Grading | None:
        """The newest grading (Grading's own ordering: newest first), or None before any.

        `first()` on the related manager, not a fresh `order_by`: where a list view loaded
        the gradings with prefetch_related it reads them from memory instead of a query per row.
        """
        return self.gradings.first()


class Grading(models.Model):
    """One run of the grader over a submission; the report is the engine's JSON."""

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="gradings")
    # The delivery that produced it: a task delivered twice still writes one grading.
    run_key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, null=True, blank=True)
    gradable = models.BooleanField(default=True)
    score = models.DecimalField(max_digits=8, decimal_places=3, null=True, blank=True)
    max_score = models.DecimalField(max_digits=8, decimal_places=3, null=True, blank=True)
    report = models.JSONField(default=dict)
    content_hash = models.CharField(max_length=64, help_text=_("Exercise content graded against."))
    worker = models.CharField(max_length=200, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text=_("Set for a regrade a person asked for."),
    )
    # Left for later while other submissions waited (courseware/submissions/profiles_later.py):
    # the grade is stored, the informative profile follows once the queue is empty.
    profile_pending = models.BooleanField(default=False)
    profile_claimed_at = models.DateTimeField(null=True, blank=True)
    # Its performance points were measured on a busy machine, twice (graders/measure/load.py):
    # they count for now, marked, and a grading on a quiet worker replaces them
    # (courseware/submissions/provisional.py).
    provisional = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def number(self) -> int:
        """1 for a submission's first grading, 2 for the regrade after it, and so on."""
        return Grading.objects.filter(submission_id=self.submission_id, pk__lte=self.pk).count()

    def __str__(self) -> str:
        submission = self.submission
        return f"grading {self.number} of {submission.item.slug} #{submission.pk}"


class Override(models.Model):
    """A person's score for a submission; the latest one wins over any grading."""

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="overrides")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    score = models.DecimalField(max_digits=8, decimal_places=3)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"override of {self.submission.item.slug} #{self.submission_id}: {self.score}"


class ManualGrade(models.Model):
    """A person's score for one hand-graded cell of a notebook; the latest per cell wins."""

    submission = models.ForeignKey(
        Submission, on_delete=models.PROTECT, related_name="manual_grades"
    )
    grade_id = models.CharField(_("cell"), max_length=200)
    score = models.DecimalField(_("score"), max_digits=8, decimal_places=3)
    comment = models.TextField(_("comment"), blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["submission", "grade_id"])]


class SavedComment(models.Model):
    """A comment a TA wrote once and reuses when grading the same cell of the same exercise.

    Shared by the course's staff rather than kept per TA: the TAs of one exercise should give
    the same words for the same mistake, and a new TA starts from what the others wrote. Keyed
    on the item and the cell (`grade_id`; empty for a whole-submission override), not on the
    offering, so next term's staff inherit them. The author is kept to say who wrote it.
    """

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="saved_comments")
    grade_id = models.CharField(_("cell"), max_length=200, blank=True)
    text = models.TextField(_("comment"))
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    times_used = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-times_used", "text"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "grade_id", "text"], name="saved_comment_unique_text"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item.slug} {self.grade_id}: {self.text[:40]}"


class RegradeScope(models.TextChoices):
    LATEST = "latest", _("The latest submission of each student")
    ALL = "all", _("Every submission")


class RegradeBatch(models.Model):
    """A regrade of many submissions of one exercise in one offering, asked for at once.

    The submissions it queued are kept, so its progress is read from their statuses and from
    the gradings written since the batch began.
    """

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    offering = models.ForeignKey(Offering, on_delete=models.PROTECT, related_name="+")
    scope = models.CharField(max_length=16, choices=RegradeScope.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    submissions = models.ManyToManyField(Submission, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"regrade of {self.item.slug} in {self.offering.slug} ({self.scope})"
