"""What people see: instructors the fleet and its queues; students their fair place in the
queue and a wait estimated from measured grading times."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from courseware.fleet.models import Worker
from courseware.fleet.registry import worker_grading, worker_register
from courseware.submissions.models import ReviewReason, Status, Submission
from courseware.submissions.selectors import poll_after_s
from tests.conftest import Cast
from tests.courseware.fleet.helpers import graded, identity, registered, silent_for, submit


@pytest.fixture(autouse=True)
def no_budget(settings: Settings) -> None:
    settings.GRADING_SECONDS_PER_DAY = 0
    settings.FLEET_GONE_AFTER_S = 30


def signed_in(cast: Cast, who: str) -> Client:
    client = Client()
    client.force_login(getattr(cast, who))
    return client


def test_instructors_see_each_worker_its_state_and_the_queues(cast: Cast) -> None:
    worker_register(
        identity("cpu-0@node-a"),
        peaks={"gbps": 12.34, "flops_per_s": 5e10, "device_name": "Xeon 8480"},
    )
    registered("cpu-1@node-a", slot=1)
    registered("cuda-h100-0@gpu-1", kind="cuda-h100")
    busy_on = submit(cast.alice)
    worker_grading(name="cpu-1@node-a", submission_id=busy_on.pk)
    Submission.objects.filter(pk=busy_on.pk).update(status=Status.RUNNING)
    submit(cast.bob), submit(cast.tara)
    silent_for("cuda-h100-0@gpu-1", 600)
    Submission.objects.filter(pk=submit(cast.ines).pk).update(
        status=Status.NEEDS_REVIEW, review_reason=ReviewReason.WORKERS_LOST
    )

    page = signed_in(cast, "ines").get("/instructor/fleet/").content.decode()
    assert 'data-worker="cpu-0@node-a" data-state="idle"' in page
    assert 'data-worker="cpu-1@node-a" data-state="busy"' in page
    assert 'data-worker="cuda-h100-0@gpu-1" data-state="gone"' in page
    assert "12.3 GB/s" in page and "Xeon 8480" in page and "not calibrated yet" in page
    assert f'href="/submissions/{busy_on.pk}/"' in page
    cpu_row = page.split('data-kind="cpu"')[1].split("</tr>")[0]
    assert '"number cell-queued">2<' in cpu_row and '"number cell-live">2' in cpu_row
    assert "lost its worker twice" in page
    assert signed_in(cast, "ines").get("/instructor/").content.decode().count("/instructor/fleet/")

    chinese = signed_in(cast, "ines").get("/instructor/fleet/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "评分工作机" in chinese.content.decode()


def test_a_ta_is_told_the_fleet_is_for_instructors(cast: Cast) -> None:
    assert signed_in(cast, "tara").get("/instructor/fleet/").status_code == 403


def place_and_wait(cast: Cast, who: str, submission: Submission) -> tuple[int | None, int | None]:
    answer = cast.token_client(getattr(cast, who)).get(f"/api/v1/submissions/{submission.pk}")
    body = answer.json()
    return body["queue_position"], body["estimated_wait_s"]


def test_a_student_sees_the_fair_place_and_a_wait_from_measured_times(cast: Cast) -> None:
    # vector-add on cpu workers: two refused in milliseconds, three graded in full; the
    # mean, 12 s, is what a place in the queue costs (the median, 0.05 s, would say nothing).
    for seconds in (0.01, 0.05, 10, 20, 30):
        graded(cast.tara, seconds=seconds)
    alice_first, alice_second = submit(cast.alice), submit(cast.alice)
    bob_first = submit(cast.bob)
    assert place_and_wait(cast, "alice", alice_first) == (1, None)  # no worker up: no estimate
    registered("cpu-0@node-a")
    assert place_and_wait(cast, "bob", bob_first) == (2, 24)  # ahead of alice's second
    assert place_and_wait(cast, "alice", alice_second) == (3, 36)
    registered("cpu-1@node-a", slot=1)  # twice the workers, half the wait
    assert place_and_wait(cast, "alice", alice_second) == (3, 18)
    registered("cuda-h100-0@gpu-1", kind="cuda-h100")  # another kind does not help this queue
    assert place_and_wait(cast, "alice", alice_second) == (3, 18)


def test_clients_are_told_to_ask_less_often_the_further_back_they_wait(cast: Cast) -> None:
    graded(cast.tara, seconds=20)
    registered("cpu-0@node-a")
    queue = [submit(person) for person in (cast.alice, cast.bob, cast.tara)]
    hints = []
    for person, submission in zip(("alice", "bob", "tara"), queue, strict=True):
        body = cast.token_client(getattr(cast, person)).get(f"/api/v1/submissions/{submission.pk}")
        hints.append((body.json()["estimated_wait_s"], body.json()["poll_after_s"]))
    # A quarter of the estimated wait, between 0.5 s and 10 s.
    assert hints == [(20, 5.0), (40, 10.0), (60, 10.0)]
    Submission.objects.filter(pk=queue[0].pk).update(status=Status.RUNNING)
    running = cast.token_client(cast.alice).get(f"/api/v1/submissions/{queue[0].pk}").json()
    assert running["poll_after_s"] == 0.5  # the grade is about 2 s away
    Submission.objects.filter(pk=queue[0].pk).update(status=Status.GRADED)
    done = cast.token_client(cast.alice).get(f"/api/v1/submissions/{queue[0].pk}").json()
    assert done["poll_after_s"] is None


def test_another_exercise_with_no_history_is_estimated_from_its_kind(cast: Cast) -> None:
    graded(cast.tara, seconds=12)
    registered("cpu-0@node-a")
    softmax = submit(cast.alice, "softmax")
    assert place_and_wait(cast, "alice", softmax) == (1, 12)


def test_the_exercise_page_can_say_the_wait(cast: Cast) -> None:
    page = signed_in(cast, "alice").get("/exercises/vector-add/").content.decode()
    strings = json.loads(
        page.split('id="exercise-strings" type="application/json">')[1].split("<")[0]
    )
    assert "{n}" in strings["wait_minutes"] and strings["wait_under_minute"]
    assert strings["workers_lost"]
    assert Worker.objects.count() == 0


def test_the_front_of_the_queue_asks_again_as_soon_as_a_grading_runs() -> None:
    # Next in line, its grading is a couple of seconds off: polls as often as a running one's.
    assert poll_after_s(Status.QUEUED, 1) == poll_after_s(Status.RUNNING, None) == 0.5
    assert poll_after_s(Status.QUEUED, 4) == 1.0
    assert poll_after_s(Status.QUEUED, None) == 1.5  # no worker or no grading measured yet
    assert poll_after_s(Status.GRADED, 4) is None
