"""The similarity report end to end in Django: who may ask, the log of who asked, the run as the
Celery task carries it out (progress, ranked pairs), the side-by-side page, and the demo course."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from courseware.courses.models import Enrolment, Offering, Role
from courseware.similarity import services
from courseware.similarity.demo_solutions import (
    CHUNKED,
    CHUNKED_DISGUISED,
    CLONE_THEN_ADD,
    FLAT_COPY_THEN_ADD,
)
from courseware.similarity.models import RunStatus, SimilarityRun
from courseware.similarity.tasks import similarity_run
from courseware.submissions.models import Status, Submission, SubmissionKind
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG as QUIZ_SLUG


def hand_in(cast: Cast, user_name: str, code: str) -> Submission:
    user = getattr(cast, user_name)
    return Submission.objects.create(
        user=user,
        item=cast.item,
        offering=cast.offering,
        kind=SubmissionKind.CODE,
        source=code,
        source_sha256="0" * 64,
        content_hash=cast.item.content_hash,
        device_kind="cpu",
        status=Status.GRADED,
    )


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def start(client: Client, cast: Cast) -> SimilarityRun:
    response = client.post(
        "/review/similarity/", {"offering": cast.offering.pk, "exercise": "vector-add"}
    )
    assert response.status_code == 302, response.content
    return SimilarityRun.objects.get()


@pytest.mark.django_db(transaction=True)
def test_a_ta_asks_the_task_compares_and_the_copy_ranks_first(
    cast: Cast, caplog: pytest.LogCaptureFixture
) -> None:
    hand_in(cast, "alice", "print('first try')\n")
    alice = hand_in(cast, "alice", CHUNKED)  # her final submission is the one compared
    bob = hand_in(cast, "bob", CHUNKED_DISGUISED)
    hand_in(cast, "tara", CHUNKED)  # staff's own tries are left out
    ta = client_for(cast.tara)
    with caplog.at_level(logging.INFO, logger="courseware.similarity.services"):
        run = start(ta, cast)
    assert run.requested_by == cast.tara and run.status == RunStatus.QUEUED
    assert f"similarity run {run.pk}: vector-add" in caplog.text and "asked by tara" in caplog.text

    page = ta.get(f"/review/similarity/{run.pk}/")
    assert "Queued: waiting for a worker" in page.content.decode()
    assert ta.get(f"/review/similarity/{run.pk}/progress").json()["finished"] is False

    similarity_run.apply(args=(run.pk,))  # what the worker does with the queued message
    run.refresh_from_db()
    assert (run.status, run.students, run.pairs_total, run.pairs_done) == ("done", 2, 1, 1)
    assert ta.get(f"/review/similarity/{run.pk}/progress").json() == {
        "status": "done",
        "done": 1,
        "total": 1,
        "finished": True,
    }
    (pair,) = run.pairs.all()
    assert {pair.first_id, pair.second_id} == {alice.pk, bob.pk} and pair.flagged

    listing = ta.get(f"/review/similarity/{run.pk}/").content.decode()
    assert 'data-first="alice" data-second="bob" class="flagged"' in listing
    assert f'href="/review/similarity/{run.pk}/pairs/{pair.pk}/"' in listing
    side_by_side = ta.get(f"/review/similarity/{run.pk}/pairs/{pair.pk}/").content.decode()
    assert "<mark>" in side_by_side and "torch.add(a[lo:hi]" in side_by_side
    assert ta.get("/review/similarity/").content.decode().count(">tara</td>") == 1


@pytest.mark.django_db
def test_students_and_other_offerings_staff_never_see_a_report(cast: Cast) -> None:
    hand_in(cast, "alice", CHUNKED)
    hand_in(cast, "bob", CHUNKED_DISGUISED)
    run = services.run_start(item=cast.item, offering=cast.offering, requested_by=cast.ines)
    services.run_execute(run.pk)
    pair = run.pairs.get()
    urls = [
        "/review/similarity/",
        f"/review/similarity/{run.pk}/",
        f"/review/similarity/{run.pk}/progress",
        f"/review/similarity/{run.pk}/pairs/{pair.pk}/",
    ]
    alice = client_for(cast.alice)
    for url in urls:
        response = alice.get(url)
        assert response.status_code in (403, 404), url
        assert CHUNKED_DISGUISED.splitlines()[5] not in response.content.decode()
    assert alice.post("/review/similarity/", {"offering": cast.offering.pk}).status_code == 403
    assert SimilarityRun.objects.count() == 1

    other = Offering.objects.create(course=cast.offering.course, slug="2027-spring", title="S")
    Enrolment.objects.create(user=cast.stranger, offering=other, role=Role.TA)
    stranger = client_for(cast.stranger)
    assert stranger.get(f"/review/similarity/{run.pk}/").status_code == 404
    refused = stranger.post(
        "/review/similarity/", {"offering": cast.offering.pk, "exercise": "vector-add"}
    )
    assert "Choose one of your offerings." in refused.content.decode()
    assert SimilarityRun.objects.count() == 1


@pytest.mark.django_db
def test_honest_solutions_make_no_flagged_pair_and_the_page_says_so(cast: Cast) -> None:
    hand_in(cast, "alice", CLONE_THEN_ADD)
    hand_in(cast, "bob", FLAT_COPY_THEN_ADD)
    run = services.run_start(item=cast.item, offering=cast.offering, requested_by=cast.tara)
    services.run_execute(run.pk)
    assert not run.pairs.filter(flagged=True).exists()
    page = client_for(cast.tara).get(f"/review/similarity/{run.pk}/").content.decode()
    assert "flagged</span>" not in page


@pytest.mark.django_db
def test_a_quiz_cannot_be_compared(cast: Cast) -> None:
    response = client_for(cast.tara).post(
        "/review/similarity/", {"offering": cast.offering.pk, "exercise": QUIZ_SLUG}
    )
    assert response.status_code == 200
    assert "Choose a coding exercise of this offering" in response.content.decode()
    assert not SimilarityRun.objects.exists()


@pytest.mark.django_db
def test_the_demo_course_seeded_submissions_flag_only_the_copied_pair(cast: Cast) -> None:
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    call_command("seed_similarity_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    demo = Offering.objects.get(slug="demo")
    ta = User.objects.get(username="ta")
    run = services.run_start(item=cast.item, offering=demo, requested_by=ta)
    services.run_execute(run.pk)
    run.refresh_from_db()
    assert run.students == 4 and run.pairs_total == 6
    flagged = [
        (p.first.user.username, p.second.user.username) for p in run.pairs.filter(flagged=True)
    ]
    assert flagged == [("dana", "eli")]
    top = run.pairs.first()
    assert top is not None and top.flagged  # ranked first


@pytest.mark.django_db
def test_the_report_pages_read_in_chinese(cast: Cast) -> None:
    hand_in(cast, "alice", CHUNKED)
    hand_in(cast, "bob", CHUNKED_DISGUISED)
    run = services.run_start(item=cast.item, offering=cast.offering, requested_by=cast.tara)
    services.run_execute(run.pk)
    pair = run.pairs.get()
    ta = client_for(cast.tara)
    ta.cookies["django_language"] = "zh-hans"
    index = ta.get("/review/similarity/").content.decode()
    assert "把一道练习中每位学生的最终提交" in index and "至少 50% 的代码" in index
    assert ">相似度</a>" in index  # the header's link
    pairs = ta.get(f"/review/similarity/{run.pk}/").content.decode()
    assert "提交对（最相似的排在前面）" in pairs and "2 名学生的最终提交" in pairs
    assert "已标记" in pairs
    side = ta.get(f"/review/similarity/{run.pk}/pairs/{pair.pk}/").content.decode()
    assert "alice 与 bob" in side and "也出现在另一份中" in side


@pytest.mark.django_db
def test_students_who_hand_in_the_starter_make_no_pair(cast: Cast) -> None:
    starter = services.given_code(cast.item)[0]
    hand_in(cast, "alice", starter)
    hand_in(cast, "bob", starter)
    run = services.run_start(item=cast.item, offering=cast.offering, requested_by=cast.tara)
    services.run_execute(run.pk)
    assert not run.pairs.exists()
    page = client_for(cast.tara).get(f"/review/similarity/{run.pk}/").content.decode()
    assert "No two final submissions share 20% or more of their code" in page
