"""One row per grading worker process (a Celery node), kept up to date by the worker itself."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class WorkerState(models.TextChoices):
    IDLE = "idle", _("Idle")
    BUSY = "busy", _("Busy")
    GONE = "gone", _("Gone")


class Worker(models.Model):
    """A grading worker as it last reported itself. The state (idle, busy, gone) is read from
    the heartbeat and `grading` (selectors.worker_state), never stored: a dead worker cannot
    write that it died."""

    # The Celery node name, unique across the fleet: "<kind>-<slot>@<host>".
    name = models.CharField(_("name"), max_length=200, unique=True)
    kind = models.CharField(_("kind"), max_length=32, db_index=True)
    hostname = models.CharField(_("host"), max_length=200)
    slot = models.PositiveSmallIntegerField(_("slot"))
    # The CPU core its slot times on (graders.sandbox.launch.pick_core); None where it cannot tell.
    core = models.SmallIntegerField(_("timing core"), null=True, blank=True)
    pid = models.IntegerField(_("process id"))
    # graders.measure.calibrate's measured peaks as cached on that machine when it started;
    # None when the device had not been calibrated yet (registering never starts a calibration).
    peaks = models.JSONField(_("measured peaks"), null=True, blank=True)
    started_at = models.DateTimeField(_("started"))
    heartbeat_at = models.DateTimeField(_("last heartbeat"), db_index=True)
    stopped_at = models.DateTimeField(_("stopped"), null=True, blank=True)
    grading = models.ForeignKey(
        "submissions.Submission",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("grading now"),
    )
    grading_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["kind", "hostname", "slot", "name"]

    def __str__(self) -> str:
        return self.name
