"""A similarity run (who asked, for which exercise and offering, how far it got) and the pairs
of final submissions it found alike."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering
from courseware.submissions.models import Submission


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


class SimilarityRun(models.Model):
    """One comparison of every student's final submission of an exercise in an offering.

    The row is also the log of who asked: it is never deleted by the site."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    offering = models.ForeignKey(Offering, on_delete=models.PROTECT, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    students = models.PositiveIntegerField(default=0)
    pairs_total = models.PositiveIntegerField(default=0)
    pairs_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"similarity of {self.item.slug} in {self.offering.slug} by {self.requested_by}"


class SimilarPair(models.Model):
    """Two final submissions that share fingerprints; `similarity` is the smaller share."""

    run = models.ForeignKey(SimilarityRun, on_delete=models.CASCADE, related_name="pairs")
    first = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="+")
    second = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="+")
    similarity = models.FloatField()
    first_share = models.FloatField()
    second_share = models.FloatField()
    tokens = models.PositiveIntegerField()
    flagged = models.BooleanField()
    first_spans = models.JSONField(default=list)
    second_spans = models.JSONField(default=list)

    class Meta:
        ordering = ["-similarity", "-tokens", "id"]

    def __str__(self) -> str:
        return f"{self.first_id} ~ {self.second_id} ({self.similarity:.0%})"
