"""What the API added for the command-line client: each exercise with the caller's standing,
one exercise, its starter, a submission's report page and feedback, and the token page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from django.test import Client

from courseware.accounts.models import ApiToken
from courseware.accounts.services import token_issue
from courseware.courses.models import ItemPolicy
from courseware.submissions.models import Grading, Status, Submission, SubmissionKind
from graders.report.schema import upgrade
from tests.conftest import Cast

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "courseware" / "submissions" / "sample_reports" / "vector-add"


def graded(cast: Cast, sample: str = "slow", *, score: str = "6") -> Submission:
    """alice's vector-add submission, graded with one of the recorded reports."""
    submission = Submission.objects.create(
        user=cast.alice,
        item=cast.item,
        offering=cast.offering,
        kind=SubmissionKind.CODE,
        source="import torch\n\ndef vector_add(a, b):\n    return (a.double() + b).float()\n",
        source_sha256="c" * 64,
        content_hash=cast.item.content_hash,
        device_kind="cpu",
        status=Status.GRADED,
    )
    report = json.loads((SAMPLES / f"{sample}.json").read_text())
    Grading.objects.create(
        submission=submission,
        run_key=f"client-{submission.pk}",
        verdict=report["verdict"],
        score=Decimal(score),
        max_score=cast.item.max_score,
        report=upgrade(report),
        content_hash=cast.item.content_hash,
    )
    return submission


def test_each_exercise_carries_the_callers_deadline_attempts_and_best_score(cast: Cast) -> None:
    due = datetime(2030, 1, 1, tzinfo=UTC)
    ItemPolicy.objects.create(offering=cast.offering, item=cast.item, due_at=due, max_attempts=5)
    graded(cast, score="6")
    body = cast.token_client(cast.alice).get("/api/v1/exercises").json()
    vector_add = next(e for e in body["exercises"] if e["slug"] == "vector-add")
    assert vector_add["due_at"] == due.isoformat()
    assert vector_add["attempts_left"] == 4 and vector_add["best_score"] == 6.0
    assert vector_add["status"] == "graded"
    # bob has done nothing: his own standing, not alice's.
    bobs = cast.token_client(cast.bob).get("/api/v1/exercises").json()["exercises"]
    bob_vector_add = next(e for e in bobs if e["slug"] == "vector-add")
    assert bob_vector_add["attempts_left"] == 5 and bob_vector_add["best_score"] is None


def test_one_exercise_by_its_slug_and_a_wrong_slug_is_404(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    assert client.get("/api/v1/exercises/fusion-notebook").json()["kind"] == "notebook"
    assert client.get("/api/v1/exercises/vector-add/").json()["title"]
    missing = client.get("/api/v1/exercises/no-such-thing")
    assert missing.status_code == 404 and "no-such-thing" in missing.json()["error"]


def test_the_starter_is_the_exercises_starter_file_or_the_student_notebook(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    code = client.get("/api/v1/exercises/vector-add/starter").json()
    starter_py = next(ROOT.glob("exercises/*/vector-add/starter.py")).read_text()
    assert code == {
        "exercise": "vector-add",
        "kind": "exercise",
        "filename": "vector_add.py",
        "starter": starter_py,
    }
    notebook = client.get("/api/v1/exercises/fusion-notebook/starter").json()
    assert notebook["filename"] == "fusion-notebook.ipynb"
    assert json.loads(notebook["starter"])["cells"]  # the student version, a real notebook
    assert client.get("/api/v1/exercises/nope/starter").status_code == 404
    assert Client().get("/api/v1/exercises/vector-add/starter").status_code == 401


def test_a_graded_submission_links_its_page_and_carries_the_pages_feedback(cast: Cast) -> None:
    submission = graded(cast, "slow")
    body = cast.token_client(cast.alice).get(f"/api/v1/submissions/{submission.pk}").json()
    assert body["url"] == f"http://testserver/submissions/{submission.pk}/"
    feedback = body["feedback"]
    assert feedback["kind"] == "slower_than_naive"
    assert feedback["next_step"].startswith("Next step:") and feedback["findings"]


def test_the_submission_list_filters_by_exercise(cast: Cast) -> None:
    graded(cast)
    client = cast.token_client(cast.alice)
    assert len(client.get("/api/v1/submissions?exercise=vector-add").json()["submissions"]) == 1
    assert client.get("/api/v1/submissions?exercise=softmax").json()["submissions"] == []


def test_the_token_page_makes_and_replaces_the_users_own_token(cast: Cast) -> None:
    browser = Client()
    browser.force_login(cast.alice)
    page = browser.get("/account/token/")
    assert page.status_code == 200 and b"Make my token" in page.content
    assert not ApiToken.objects.filter(user=cast.alice).exists()  # a GET makes nothing

    browser.post("/account/token/")
    first = ApiToken.objects.get(user=cast.alice).key
    shown = browser.get("/account/token/").content.decode()
    assert first in shown and "gpucourse login --server http://testserver" in shown

    browser.post("/account/token/")
    second = ApiToken.objects.get(user=cast.alice).key
    assert second != first
    old = Client(HTTP_AUTHORIZATION=f"Token {first}").get("/api/v1/exercises")
    assert old.status_code == 401  # a replaced token stops working at once
    assert Client(HTTP_AUTHORIZATION=f"Token {second}").get("/api/v1/exercises").status_code == 200
    bobs = token_issue(user=cast.bob).key
    assert bobs not in browser.get("/account/token/").content.decode()  # one's own only
    assert 'href="/account/token/"' in browser.get("/").content.decode()  # linked in the header


def test_the_token_page_speaks_chinese(cast: Cast) -> None:
    browser = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    browser.force_login(cast.alice)
    assert "生成我的令牌" in browser.get("/account/token/").content.decode()
