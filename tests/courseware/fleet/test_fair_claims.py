"""Fair order in the database: a student's second submission waits behind the others' first,
and a claim is atomic: of two workers claiming at once, one wins (PostgreSQL and SQLite)."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from django.db import connection

from courseware.submissions import selectors
from courseware.submissions.models import Status, Submission
from courseware.submissions.selectors import fair_queue, queue_position
from courseware.submissions.services import (
    GradingJob,
    Holder,
    submission_claim,
    submission_claim_next,
    submission_reclaim,
)
from tests.conftest import Cast, make_cast
from tests.courseware.fleet.helpers import submit

WORKER = Holder("cpu-0@node-a", 1)


def claim_all(kind: str = "cpu") -> list[int]:
    taken = []
    while (job := submission_claim_next(kind=kind, holder=WORKER)) is not None:
        taken.append(job.submission_id)
    return taken


def test_everyones_first_submission_comes_before_anyones_second(cast: Cast) -> None:
    a1, a2, a3 = submit(cast.alice), submit(cast.alice), submit(cast.alice)
    b1, b2 = submit(cast.bob), submit(cast.bob)
    t1 = submit(cast.tara)
    order = [a1.pk, b1.pk, t1.pk, a2.pk, b2.pk, a3.pk]
    assert fair_queue(kind="cpu").order == order
    assert [queue_position(s) for s in (a1, b1, t1, a2, b2, a3)] == [1, 2, 3, 4, 5, 6]
    assert claim_all() == order
    assert all(s.status == Status.RUNNING for s in Submission.objects.all())


def test_one_being_graded_counts_as_its_students_first(cast: Cast) -> None:
    a1, a2 = submit(cast.alice), submit(cast.alice)
    assert submission_claim(submission_id=a1.pk) is not None
    b1 = submit(cast.bob)  # later than alice's second, but bob has nothing being graded
    assert fair_queue(kind="cpu").order == [b1.pk, a2.pk]
    # The place counts the one being graded: bob is 2nd (behind alice's running one).
    assert (queue_position(Submission.objects.get(pk=b1.pk)), queue_position(a2)) == (2, 3)
    assert claim_all() == [b1.pk, a2.pk]


def test_a_submission_whose_worker_was_lost_keeps_its_place(cast: Cast) -> None:
    a1 = submit(cast.alice)
    job = submission_claim(submission_id=a1.pk)
    assert job is not None
    b1 = submit(cast.bob)
    with mock.patch("courseware.submissions.services.submission_enqueue"):
        assert submission_reclaim(submission_id=a1.pk, claim_token=job.claim_token, why="test")
    assert claim_all() == [a1.pk, b1.pk]


def test_each_worker_kind_has_its_own_queue(cast: Cast) -> None:
    on_h100 = submit(cast.alice, device_kind="cuda-h100")
    on_cpu = submit(cast.bob)
    assert on_h100.device_kind == "cuda-h100" and on_cpu.device_kind == "cpu"
    assert claim_all("cpu") == [on_cpu.pk]
    assert claim_all("cuda-a100") == []
    assert claim_all("cuda-h100") == [on_h100.pk]


def claim_in_threads(count: int, *, race_first_read: bool) -> list[list[GradingJob]]:
    """`count` threads, each its own database connection, claim until nothing is left. With
    `race_first_read`, all of them read the queue before any claims, so they all go for the
    same first candidate at the same moment."""
    barrier = threading.Barrier(count)
    real_fair_queue = selectors.fair_queue
    read_once = threading.local()

    def fair_queue_then_wait(*, kind: str) -> selectors.FairQueue:
        queue = real_fair_queue(kind=kind)
        if race_first_read and not getattr(read_once, "done", False):
            read_once.done = True
            barrier.wait(timeout=30)
        return queue

    results: list[list[GradingJob]] = [[] for _ in range(count)]
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        try:
            holder = Holder(f"cpu-{n}@node-a", 1000 + n)
            while (job := submission_claim_next(kind="cpu", holder=holder)) is not None:
                results[n].append(job)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    with mock.patch("courseware.submissions.services.fair_queue", fair_queue_then_wait):
        threads = [threading.Thread(target=claimer, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors, errors
    return results


@pytest.mark.django_db(transaction=True)
def test_of_two_workers_claiming_the_same_submission_at_once_one_wins() -> None:
    cast = make_cast()
    only = submit(cast.alice)
    results = claim_in_threads(2, race_first_read=True)
    winners = [jobs for jobs in results if jobs]
    assert len(winners) == 1 and [job.submission_id for job in winners[0]] == [only.pk]
    row = Submission.objects.get(pk=only.pk)
    assert row.status == Status.RUNNING and row.claim_token == winners[0][0].claim_token
    assert row.claimed_by == f"cpu-{results.index(winners[0])}@node-a"


@pytest.mark.django_db(transaction=True)
def test_workers_claiming_a_queue_together_take_each_submission_exactly_once() -> None:
    cast = make_cast()
    made = [submit(user) for user in (cast.alice, cast.bob, cast.tara, cast.ines) for _ in (1, 2)]
    results = claim_in_threads(3, race_first_read=True)
    taken = [job.submission_id for jobs in results for job in jobs]
    assert sorted(taken) == sorted(s.pk for s in made)
    assert len({job.claim_token for jobs in results for job in jobs}) == len(made)
