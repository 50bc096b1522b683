"""Shared helpers of the fleet tests: workers in the registry, submissions, gradings."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from courseware.fleet.identity import WorkerIdentity
from courseware.fleet.models import Worker
from courseware.fleet.registry import worker_register
from courseware.submissions.models import Submission
from courseware.submissions.services import (
    Holder,
    grading_record,
    submission_claim,
    submission_create,
)
from graders.report.schema import upgrade

CODE = "def vector_add(a, b):\n    return a + b\n"
REPORT = upgrade(
    {
        "exercise": "vector-add",
        "exercise_hash": "h",
        "verdict": "correct",
        "score": 10,
        "max_score": 10,
        "gradable": True,
        "flags": [],
    }
)


def identity(
    name: str = "cpu-0@node-a",
    *,
    kind: str = "cpu",
    slot: int = 0,
    core: int | None = None,
    hostname: str = "node-a",
) -> WorkerIdentity:
    """A worker's identity; its core is 100 + its slot unless given (no clash between tests'
    workers, which all claim the same host)."""
    return WorkerIdentity(
        name=name,
        kind=kind,
        slot=slot,
        hostname=hostname,
        pid=4242,
        core=100 + slot if core is None else core,
    )


def registered(name: str = "cpu-0@node-a", *, kind: str = "cpu", slot: int = 0) -> Worker:
    """A worker registered now, on the host its name says."""
    host = name.partition("@")[2]
    return worker_register(identity(name, kind=kind, slot=slot, hostname=host), peaks=None)


def silent_for(name: str, seconds: float) -> None:
    """The worker's last heartbeat was `seconds` ago."""
    Worker.objects.filter(name=name).update(
        heartbeat_at=timezone.now() - timedelta(seconds=seconds)
    )


def submit(user: User, slug: str = "vector-add", *, device_kind: str | None = None) -> Submission:
    return submission_create(user=user, exercise_slug=slug, code=CODE, device_kind=device_kind)


def graded(user: User, *, seconds: float, slug: str = "vector-add") -> Submission:
    """A submission of `user` graded now, its grading having taken `seconds`."""
    made = submit(user, slug)
    job = submission_claim(submission_id=made.pk, holder=Holder("cpu-9@elsewhere", 1))
    assert job is not None
    grading_record(
        submission_id=made.pk,
        report=REPORT,
        run_key=job.claim_token,
        worker="w",
        duration_s=seconds,
        claim_token=job.claim_token,
    )
    return made
