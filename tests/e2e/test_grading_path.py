"""The whole path: HTTP in, a real worker on a real broker grades, the API gives the result."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from courseware.accounts.services import token_issue
from courseware.submissions.models import Grading
from tests.celery_worker import Worker, wait_for
from tests.conftest import make_cast

pytestmark = pytest.mark.e2e

FAST = "import torch\n\n\ndef vector_add(a, b):\n    return torch.add(a, b)\n"
WRONG = "def vector_add(a, b):\n    return a - b\n"
BROKEN = "def vector_add(a, b)\n    return a + b\n"


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def submit(self, code: str) -> int:
        status, body = self.call(
            "POST", "/api/v1/submissions", {"exercise": "vector-add", "code": code}
        )
        assert status == 201, body
        return int(body["id"])

    def finished(self, submission_id: int) -> dict | None:
        _, body = self.call("GET", f"/api/v1/submissions/{submission_id}")
        return body if body["status"] not in ("queued", "running") else None


def test_queued_work_waits_for_a_worker_then_every_verdict_comes_back(
    live_server, worker: Worker
) -> None:
    cast = make_cast()
    api = Api(live_server.url, token_issue(user=cast.alice).key)
    fast, wrong, broken = api.submit(FAST), api.submit(WRONG), api.submit(BROKEN)

    time.sleep(2)  # no worker yet: nothing may move
    for submission_id in (fast, wrong, broken):
        assert api.call("GET", f"/api/v1/submissions/{submission_id}")[1]["status"] == "queued"

    worker.start()
    results = {}
    for submission_id in (fast, wrong, broken):
        results[submission_id] = wait_for(lambda s=submission_id: api.finished(s), timeout=300)
        assert results[submission_id] is not None, worker.log()

    correct = results[fast]
    assert correct["status"] == "graded", correct
    assert correct["verdict"] == "correct"
    assert correct["score"] > 0 and correct["max_score"] >= correct["score"]
    assert correct["report"]["performance"]["achieved_gbps"] > 0

    assert results[wrong]["verdict"] == "wrong" and results[wrong]["score"] == 0
    assert results[wrong]["report"]["message"]
    assert results[broken]["verdict"] == "rejected"
    assert "line" in results[broken]["report"]["message"].lower()

    # Another student cannot read it over HTTP either.
    other = Api(live_server.url, token_issue(user=cast.bob).key)
    assert other.call("GET", f"/api/v1/submissions/{fast}")[0] == 404
    assert Grading.objects.filter(submission_id=fast).count() == 1

    # The fast one was graded while the other two waited: its grade came at once and its
    # profile was left for later, then taken by the worker once the queue was empty.
    def profiled() -> list | None:
        body = api.finished(fast)
        return (body or {}).get("report", {}).get("profile") or None

    rows = wait_for(profiled, timeout=120)
    assert rows and any("add" in row["name"] for row in rows), worker.log()
    first = Grading.objects.get(submission_id=fast)
    assert first.profile_claimed_at is not None and not first.profile_pending
    assert (api.finished(fast) or {}).get("score") == correct["score"]
