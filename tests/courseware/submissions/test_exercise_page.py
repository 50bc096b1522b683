"""The exercise page: the editor holds the student's last code, the page states the deadline,
the attempts left and the device, a paste over the grader's size limit is refused before
anything is queued, and the API tells a queued submission its place in the queue."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from unittest import mock

from django.conf import settings
from django.test import Client
from django.utils import timezone, translation

from courseware.courses.models import ItemPolicy
from courseware.refusals import Refused
from courseware.submissions.models import Submission
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders import load_exercise
from graders.report.schema import upgrade
from tests.conftest import Cast

CODE = "def vector_add(a, b):\n    return a + b  # alice's version\n"
LIMIT = 65536  # exercises/ch15/vector-add/exercise.toml: [limits] source_bytes
# What the student pasted: 258 KB of Python.
HUGE = "def vector_add(a, b):\n    return a + b\n" + "# padding\n" * 26_000


def logged_in(user, **cookies: str) -> Client:
    client = Client()
    client.force_login(user)
    for name, value in cookies.items():
        client.cookies[name] = value
    return client


def page(client: Client, path: str = "/exercises/vector-add/", language: str = "en") -> str:
    response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


def textarea(html: str) -> str:
    found = re.search(r'<textarea id="code" name="code"[^>]*>(.*?)</textarea>', html, re.S)
    assert found is not None
    return found.group(1)


def graded(submission: Submission, *, score: float, verdict: str = "correct") -> None:
    submission_claim(submission_id=submission.pk)
    report = {"verdict": verdict, "score": score, "max_score": 10, "gradable": True, "flags": []}
    grading_record(
        submission_id=submission.pk,
        report=upgrade(report),
        run_key=f"run-{submission.pk}",
        worker="w",
        duration_s=1,
    )


def test_the_editor_opens_with_the_last_submission_and_can_go_back_to_the_starter(
    cast: Cast,
) -> None:
    starter = load_exercise(settings.GRADERS_EXERCISES_ROOT / cast.item.source_path).starter
    client = logged_in(cast.alice)
    assert "vector_add" in textarea(page(client)) and "alice&#x27;s" not in page(client)
    submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    html = page(client)
    assert textarea(html) == CODE.replace("'", "&#x27;")
    assert 'id="editor"' in html and 'id="reset-starter"' in html
    shipped = re.search(r'id="starter-code"[^>]*>(.*?)</script>', html, re.S)
    assert shipped is not None and json.loads(shipped[1]) == starter
    # Without JavaScript the reset link loads the starter into the box.
    assert "alice" not in textarea(page(client, "/exercises/vector-add/?starter"))
    # Bob's editor is his own.
    assert "alice" not in textarea(page(logged_in(cast.bob)))


def test_the_page_states_the_deadline_attempts_left_and_device(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering,
        item=cast.item,
        due_at=datetime(2099, 3, 1, 12, 30, tzinfo=UTC),
        max_attempts=3,
    )
    graded(submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE), score=6)
    html = page(logged_in(cast.alice, tz="Asia/Shanghai"))
    assert "March 1, 2099, 8:30 p.m." in html and re.search(r"\(in \d+\s+years", html)
    assert re.search(r'<span class="count">2</span> of 3', html)
    assert "a CPU core" in html  # the test site grades on the CPU
    assert f"{LIMIT} bytes (64 KiB)" in html and f'data-max-bytes="{LIMIT}"' in html
    chinese = page(logged_in(cast.alice, tz="Asia/Shanghai"), language="zh-hans")
    assert "2099年3月1日 20:30" in chinese and re.search(r"\(\d+\s*年.*后\)", chinese)
    assert "剩余提交次数" in chinese and "一个 CPU 核心" in chinese


def test_the_submission_list_shows_scores_verdicts_and_late_marks_newest_first(
    cast: Cast,
) -> None:
    first = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    graded(first, score=4, verdict="wrong")
    policy = ItemPolicy.objects.create(
        offering=cast.offering,
        item=cast.item,
        due_at=timezone.now() - timedelta(hours=1),
        late_until=timezone.now() + timedelta(days=1),
        late_penalty_per_day="0.5",
    )
    second = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    graded(second, score=10)
    assert policy.pk
    html = page(logged_in(cast.alice))
    table = html[html.index('id="submissions"') :]
    rows = re.findall(r'<tr data-submission="(\d+)">(.*?)</tr>', table, re.S)
    assert [int(pk) for pk, _ in rows] == [second.pk, first.pk]
    newest, oldest = rows[0][1], rows[1][1]
    assert "Correct" in newest and "5 / 10" in newest and "late" in newest  # 10 less 50%
    assert "Wrong" in oldest and "4 / 10" in oldest and "late" not in oldest


def test_the_notebook_page_says_what_the_notebook_asks_and_what_it_is_worth(cast: Cast) -> None:
    html = page(logged_in(cast.alice), "/exercises/fusion-notebook/")
    assert "What the notebook asks" in html
    assert "3. Write the fused block" in html and "read and scored by a TA" in html
    assert re.search(r"Write the fused block</td><td class=\"number\">4</td>", html)
    assert "9 points" in html
    chinese = page(logged_in(cast.alice), "/exercises/fusion-notebook/", language="zh-hans")
    assert "3. 写出融合版本" in chinese


def test_a_paste_over_the_size_limit_is_refused_at_once_and_kept_in_the_editor(
    cast: Cast,
) -> None:
    assert len(HUGE.encode()) > 258_000
    client = logged_in(cast.alice)
    with mock.patch("courseware.submissions.services.submission_enqueue") as enqueue:
        response = client.post("/exercises/vector-add/", {"code": HUGE})
    assert response.status_code == 200 and not enqueue.called
    assert Submission.objects.count() == 0
    html = response.content.decode()
    assert f"the limit for vector-add is {LIMIT} bytes (64 KiB)" in html
    assert "did not count as an attempt" in html
    assert textarea(html).count("# padding") == 26_000  # nothing typed is lost


def test_the_api_refuses_an_oversized_paste_with_413_in_both_languages(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    response = client.post(
        "/api/v1/submissions",
        json.dumps({"exercise": "vector-add", "code": HUGE}),
        content_type="application/json",
    )
    assert response.status_code == 413 and str(LIMIT) in response.json()["error"]
    with translation.override("zh-hans"):
        try:
            submission_create(user=cast.alice, exercise_slug="vector-add", code=HUGE)
        except Refused as refused:
            message = refused.message
    assert f"上限是 {LIMIT} 字节" in message and "不计入提交次数" in message
    assert Submission.objects.count() == 0


def test_code_at_the_limit_is_accepted(cast: Cast) -> None:
    head = "def vector_add(a, b):\n    return a + b\n"
    code = head + "#" * (LIMIT - len(head))
    assert submission_create(user=cast.alice, exercise_slug="vector-add", code=code).pk


def test_a_deadline_refusal_shows_a_local_date_not_an_iso_timestamp(cast: Cast) -> None:
    ItemPolicy.objects.create(
        offering=cast.offering, item=cast.item, due_at=datetime(2026, 1, 5, 16, 0, tzinfo=UTC)
    )
    client = logged_in(cast.alice, tz="Asia/Shanghai")
    html = client.post("/exercises/vector-add/", {"code": CODE}).content.decode()
    found = re.search(r'<li class="error">(.*?)</li>', html, re.S)
    assert found is not None
    message = found[1]
    assert "Jan. 6, 2026, midnight (Asia/Shanghai)" in message, message
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", message)
    chinese = client.post(
        "/exercises/vector-add/", {"code": CODE}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert "已于 2026年1月6日 00:00 (Asia/Shanghai) 截止" in chinese
    assert Submission.objects.count() == 0


def test_the_api_tells_a_queued_submission_its_place_in_the_queue(cast: Cast) -> None:
    first = submission_create(user=cast.alice, exercise_slug="vector-add", code=CODE)
    second = submission_create(user=cast.bob, exercise_slug="vector-add", code=CODE)
    third = submission_create(user=cast.alice, exercise_slug="softmax", code="def softmax(x): ...")

    def place(client: Client, submission: Submission) -> int | None:
        answer = client.get(f"/api/v1/submissions/{submission.pk}").json()
        return answer["queue_position"]

    alice, bob = cast.token_client(cast.alice), cast.token_client(cast.bob)
    assert (place(alice, first), place(bob, second), place(alice, third)) == (1, 2, 3)
    submission_claim(submission_id=first.pk)  # a worker takes it: still ahead of the others
    assert (place(alice, first), place(bob, second), place(alice, third)) == (None, 2, 3)
    graded(second, score=1)  # claimed and finished
    assert (place(bob, second), place(alice, third)) == (None, 2)
