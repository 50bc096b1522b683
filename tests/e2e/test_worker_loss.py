"""Workers die mid-grading, as real processes: the submission is graded once, elsewhere.

Two real Celery workers (slots 0 and 1, as the fleet runs them) on the real broker. The tests
SIGKILL the process running the sandbox, or the whole worker, while a grading is under way,
and read the outcome from the database: one grading, by the worker that survived; after a
second loss, a TA's review queue instead of a third worker. The heartbeat is sped up (1 s,
gone after 6 s) so the tests wait seconds rather than the production half minute; nothing
here asserts how fast anything was, only what happened, with generous waits.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from django.db import connection
from django.test import Client

from config.celery_app import app
from courseware.fleet.models import Worker as FleetWorker
from courseware.fleet.selectors import live_workers
from courseware.submissions.models import Grading, ReviewReason, Status, Submission
from courseware.submissions.services import GRADE_TASK_NAME, submission_create
from tests.celery_worker import Worker, purge_grading_queue, wait_for
from tests.conftest import Cast, make_cast

pytestmark = pytest.mark.e2e

CODE = "import torch\n\n\ndef vector_add(a, b):\n    return torch.add(a, b)\n"
FLEET_ENV = {"FLEET_HEARTBEAT_S": "1", "FLEET_GONE_AFTER_S": "6", "SUBMISSIONS_WAKE_AFTER_S": "5"}
GRADING_WAIT_S = 300  # a grading on a busy 2-core machine; generous on purpose
PENDING = (Status.QUEUED, Status.RUNNING)


@pytest.fixture
def workers(transactional_db: None, tmp_path: Path) -> Iterator[list[Worker]]:
    purge_grading_queue()
    pair = [Worker(tmp_path / f"worker-{slot}.log", slot=slot, env=FLEET_ENV) for slot in (0, 1)]
    yield pair
    for worker in pair:
        worker.stop()
    connection.close()


def start_all(workers: list[Worker]) -> None:
    for worker in workers:
        worker.start()
    names = {w.node_name for w in workers}
    up = wait_for(lambda: names <= set(live_workers().values_list("name", flat=True)), 120)
    assert up, "\n".join(w.log() for w in workers)


def fresh(submission: Submission) -> Submission:
    return Submission.objects.get(pk=submission.pk)


def holder_of(submission: Submission, workers: list[Worker]) -> Worker:
    claimed_by = fresh(submission).claimed_by
    return next(w for w in workers if w.node_name == claimed_by)


def descendants(pid: int) -> list[int]:
    """Every process under `pid`, read from /proc (children of children included)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def sandbox_running(worker: Worker) -> bool:
    """A sandboxed harness runs under this worker: the grading is under way, mid-sandbox."""
    assert worker.proc is not None
    for pid in descendants(worker.proc.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"harness" in command:
            return True
    return False


def wait_mid_grading(
    submission: Submission, workers: list[Worker], *, not_token: str = ""
) -> Worker:
    """Wait until a worker holds the submission (under a claim other than `not_token`) and
    runs its sandbox; return that worker."""

    def held() -> Worker | None:
        row = fresh(submission)
        if row.status != Status.RUNNING or row.claim_token in ("", not_token):
            return None
        holder = holder_of(submission, workers)
        return holder if sandbox_running(holder) else None

    holder = wait_for(held, GRADING_WAIT_S, every=0.2)
    assert holder is not None, f"{fresh(submission).status}\n" + "\n".join(w.log() for w in workers)
    return holder


def submit_without_wakeup(cast: Cast) -> Submission:
    """A queued submission whose wake-up the test sends itself."""
    with mock.patch("courseware.submissions.services.submission_enqueue"):
        return submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)


def test_a_worker_killed_mid_grading_leaves_the_submission_graded_once_by_another(
    workers: list[Worker],
) -> None:
    cast = make_cast()
    submission = submit_without_wakeup(cast)
    # The same message delivered twice (one id): the second delivery must not grade it again.
    task_id = str(uuid.uuid4())
    for _ in range(2):
        app.send_task(GRADE_TASK_NAME, args=[submission.pk], queue="cpu", task_id=task_id)
    start_all(workers)

    holder = wait_mid_grading(submission, workers)
    survivor = next(w for w in workers if w is not holder)
    holder.kill()  # main process, pool child and sandbox: the machine died
    killed_at = time.monotonic()

    done = wait_for(lambda: fresh(submission).status not in PENDING, GRADING_WAIT_S)
    took = time.monotonic() - killed_at
    logs = "\n".join(w.log() for w in workers)
    assert done, logs
    graded = fresh(submission)
    assert graded.status == Status.GRADED, (graded.status, logs)
    gradings = list(Grading.objects.filter(submission=graded))
    assert len(gradings) == 1, logs
    assert gradings[0].verdict == "correct"
    assert survivor.node_name in gradings[0].worker, (gradings[0].worker, f"{took:.0f} s", logs)
    assert graded.workers_lost == 1 and graded.claimed_by == survivor.node_name
    # The registry shows the dead worker gone and the survivor idle again.
    states = {w.name: w for w in FleetWorker.objects.all()}
    assert states[holder.node_name].heartbeat_at < states[survivor.node_name].heartbeat_at
    time.sleep(2)  # the duplicate message, if it were ever handled twice, would show by now
    assert Grading.objects.filter(submission=graded).count() == 1


def test_a_submission_that_lost_two_workers_goes_to_a_ta_not_a_third(
    workers: list[Worker], client: Client
) -> None:
    cast = make_cast()
    start_all(workers)
    submission = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)

    # First loss: the pool child running the sandbox is killed; its worker lives on, and Celery
    # hands the message back. The claim names the dead pid, so it is taken back at once.
    wait_mid_grading(submission, workers)
    first_claim = fresh(submission)
    os.kill(int(first_claim.claimed_pid or 0), signal.SIGKILL)

    # Second loss: whichever worker grades it next dies whole.
    second = wait_mid_grading(submission, workers, not_token=first_claim.claim_token)
    assert fresh(submission).workers_lost == 1
    second.kill()
    logs = "\n".join(w.log() for w in workers)

    handed = wait_for(lambda: fresh(submission).status == Status.NEEDS_REVIEW, GRADING_WAIT_S)
    assert handed, (fresh(submission).status, logs)
    time.sleep(3)  # a third worker is up and idle: it must not take it
    row = fresh(submission)
    assert row.status == Status.NEEDS_REVIEW and row.review_reason == ReviewReason.WORKERS_LOST
    assert row.workers_lost == 2 and not Grading.objects.filter(submission=row).exists()
    survivor = next(w for w in workers if w is not second)
    assert survivor.proc is not None and survivor.proc.poll() is None  # up, and did not take it

    client.force_login(cast.tara)
    page = client.get("/review/").content.decode()
    assert f'href="/submissions/{row.pk}/"' in page and 'data-reason="workers_lost"' in page
