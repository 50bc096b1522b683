"""The bridge between Celery and the engine: an id comes in, a grading row goes out.

This is the one module of `graders/` that imports Django. The task only translates: it claims
the submission, calls the engine, and hands the report to the services that write it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from pathlib import Path
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready
from django.conf import settings

from graders import grade, load_exercise

logger = logging.getLogger(__name__)

MAX_RETRIES = 2


@shared_task(
    bind=True, name="graders.grade_submission", max_retries=MAX_RETRIES, ignore_result=True
)
def grade_submission(self, submission_id: int) -> None:  # type: ignore[no-untyped-def]
    from courseware.submissions import services

    run_key = str(self.request.id or f"local-{submission_id}-{time.time_ns()}")
    submission = services.submission_claim(submission_id=submission_id)
    if submission is None:
        logger.info("Submission %s is not queued (already taken or gone); skipping", submission_id)
        return
    started = time.monotonic()
    folder = Path(settings.GRADERS_EXERCISES_ROOT) / submission.item.source_path
    try:
        content_hash, report = _grade(
            submission.kind, folder, submission.source, submission.device_kind
        )
    # grade() never raises for what the student did, so anything raised here (GraderError, a
    # soft time limit, a bug) is the grader breaking: retry, then fail without cost to them.
    except Exception as exc:
        logger.exception("Grading submission %s failed", submission_id)
        if self.request.retries < MAX_RETRIES and not isinstance(exc, SoftTimeLimitExceeded):
            services.submission_release_claim(submission_id=submission_id)
            raise self.retry(exc=exc, countdown=5 * (self.request.retries + 1)) from exc
        services.submission_mark_failed(
            submission_id=submission_id, run_key=run_key, reason=traceback.format_exc()
        )
        return
    services.grading_record(
        submission=submission,
        report=report,
        run_key=run_key,
        worker=f"{socket.gethostname()}:{self.request.hostname or ''}",
        duration_s=time.monotonic() - started,
        content_hash=content_hash,
    )


def sandbox_slot() -> int:
    """This worker's device slot. Workers on one machine need different slots: each slot has
    its own sandbox uid (process limits count per uid) and, on a GPU node, its own GPU."""
    return int(os.environ.get("GRADERS_SLOT", "0"))


def _grade(kind: str, folder: Path, source: str, device: str) -> tuple[str, dict[str, Any]]:
    """Run the engine for this kind of submission; returns the content hash and the report."""
    if kind == "notebook":
        from graders.notebooks import grade_notebook, load_notebook_exercise

        notebook_spec = load_notebook_exercise(folder)
        return notebook_spec.content_hash, grade_notebook(
            notebook_spec, source, slot=sandbox_slot()
        )
    spec = load_exercise(folder)
    return spec.content_hash, grade(spec, source, device=device, slot=sandbox_slot())


@shared_task(name="graders.requeue_stale", ignore_result=True)
def requeue_stale() -> int:
    from courseware.submissions.services import submission_requeue_stale

    return submission_requeue_stale()


@worker_ready.connect
def _sweep_on_start(**_kwargs: object) -> None:
    # A worker coming up picks up what a lost worker or a broker outage left behind.
    from django.db import connection

    from courseware.submissions.services import submission_requeue_stale

    try:
        submission_requeue_stale()
    except Exception:  # never keep a worker from starting
        logger.exception("The stale-submission sweep failed")
    finally:
        connection.close()  # the worker's main process holds no database connection
