"""Redis restarted or emptied, and a task delivered twice: every submission is graded once.

Real processes on a private redis-server that the tests SIGKILL and start again with nothing
saved (as a Redis without persistence comes back from a crash or a restart). The submission row
in PostgreSQL is the truth; the messages are only wake-up calls, and an idle worker that sees
work of its kind waiting in the database sends itself a new one (courseware.fleet.recovery).
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from tests.faults.single_host import Site
from tests.faults.stack import SLOW, WRONG, wait_for

pytestmark = pytest.mark.e2e

QUEUE = "cpu"  # the worker kind's queue


def restart_redis_empty(site: Site) -> None:
    site.redis.kill()
    site.redis.start()
    # Nothing survived. A running worker may already have declared its queues' bindings
    # again (how soon is a race with this check), but no message is left.
    keys = site.redis.client().scan_iter()
    left = [key for key in keys if not key.startswith(b"_kombu.binding.")]
    assert left == [], left


def assert_graded_once(site: Site, submission_id: int, timeout: float = 180) -> None:
    status = wait_for(lambda: site.truth.finished(submission_id), timeout=timeout)
    assert status == "graded", f"submission {submission_id}: {status}\n{site.logs()}"
    gradings = site.truth.gradings(submission_id)
    assert len(gradings) == 1, gradings
    assert gradings[0]["verdict"] == "wrong", gradings  # the sandbox really ran it


def test_a_running_worker_and_the_site_carry_on_after_redis_restarts(site: Site) -> None:
    site.start_worker()
    restart_redis_empty(site)
    # The web process publishes on a connection Redis dropped, possibly before the worker has
    # declared its queue again; either the message goes through or the worker's own check of
    # the database finds the work.
    submission = site.student("alice").submit(WRONG)
    assert_graded_once(site, submission)
    assert site.worker.wait_for_output(r"Connection to broker lost", timeout=5), site.logs()


def test_redis_emptied_while_work_waits_for_a_worker_loses_nothing(site: Site) -> None:
    site.start_worker()
    site.worker.stop()  # every worker busy or down: the wake-up call waits in Redis
    submission = site.student("bob").submit(WRONG)
    assert site.redis.queue_length(QUEUE) >= 1, "the wake-up call never reached Redis"

    restart_redis_empty(site)
    assert site.truth.status(submission) == "queued"  # the row is the truth, and still waits

    site.start_worker()  # it finds the work in the database; no message for it exists any more
    assert_graded_once(site, submission)


def test_the_same_task_delivered_twice_grades_once(site: Site) -> None:
    site.start_worker()
    submission = site.student("alice").submit(SLOW)  # still grading when the copy arrives
    assert wait_for(lambda: site.truth.status(submission) == "running", timeout=120), site.logs()

    # The delivery being graded, not yet acknowledged (late acknowledgement), is in kombu's
    # hash; put an exact copy back on the queue, as a broker redelivering it would.
    [raw] = site.redis.unacked()
    message = json.loads(raw)[0]
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    assert args == [submission], message  # the web's wake-up for it, as sent
    task_id = message["headers"]["id"]
    site.redis.push(QUEUE, json.dumps(message))

    assert_graded_once(site, submission)
    # Both deliveries ran to the end, and the second graded nothing.
    done = rf"Task graders\.grade_submission\[{task_id}\] succeeded"
    both = wait_for(lambda: len(re.findall(done, site.worker.output())) == 2, timeout=120)
    assert both, site.logs()
    assert len(site.truth.gradings(submission)) == 1
