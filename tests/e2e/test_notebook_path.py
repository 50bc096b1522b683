"""A notebook goes up through the API, a real worker autogrades it, a TA grades the rest."""

from __future__ import annotations

import json
import urllib.request
import uuid

import pytest
from django.conf import settings
from django.test import Client

from courseware.accounts.services import token_issue
from graders.notebooks import load_notebook_exercise
from tests.celery_worker import Worker, wait_for
from tests.conftest import make_cast
from tests.e2e.test_grading_path import Api
from tests.graders.notebooks.conftest import solved_release

pytestmark = pytest.mark.e2e


def solved_notebook() -> bytes:
    return solved_release(
        load_notebook_exercise(settings.GRADERS_EXERCISES_ROOT / "ch15" / "fusion-notebook")
    )


def upload(base: str, token: str, notebook: bytes) -> tuple[int, dict]:
    """POST the notebook as a multipart form, the way `curl -F file=@mine.ipynb` does."""
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="exercise"\r\n\r\n'
            f'fusion-notebook\r\n--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="mine.ipynb"\r\nContent-Type: application/x-ipynb+json\r\n\r\n'
        ).encode()
        + notebook
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        base + "/api/v1/submissions/",
        data=body,
        method="POST",
        headers={
            "Authorization": f"Token {token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def test_a_notebook_is_autograded_then_a_ta_grades_the_explanation(
    live_server, worker: Worker
) -> None:
    cast = make_cast()
    token = token_issue(user=cast.alice).key
    status, created = upload(live_server.url, token, solved_notebook())
    assert status == 201, created
    worker.start()
    api = Api(live_server.url, token)
    result = wait_for(lambda: api.finished(created["id"]), timeout=300)
    assert result is not None, worker.log()
    assert result["status"] == "needs_review", result
    cells = {c["grade_id"]: c for c in result["report"]["cells"]}
    autograded = [c for c in cells.values() if not c["needs_manual_grade"]]
    assert autograded and all(c["score"] == c["max_score"] for c in autograded)
    auto_total = sum(c["score"] for c in autograded)
    assert result["score"] == auto_total
    manual = [g for g, c in cells.items() if c["needs_manual_grade"]]
    assert manual

    ta = Client()
    ta.force_login(cast.tara)
    for grade_id in manual:
        response = ta.post(
            f"/submissions/{created['id']}/manual-grade",
            {"grade_id": grade_id, "score": "1", "comment": "Say which ops the profile shows."},
        )
        assert response.status_code == 302
    after = api.call("GET", f"/api/v1/submissions/{created['id']}")[1]
    assert after["status"] == "graded"
    assert after["score"] == auto_total + len(manual)
    explained = next(c for c in after["report"]["cells"] if c["grade_id"] == manual[0])
    assert explained["comment"] == "Say which ops the profile shows."
