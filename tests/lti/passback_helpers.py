"""For the passback tests: a student launched from the LMS, their graded work, and the LTI
queue's messages run in the test's process (what a worker on that queue does)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.contrib.auth.models import User
from django.utils import timezone
from kombu import Queue

from config.celery_app import app
from courseware.gradebook.numbers import score_for_export
from courseware.gradebook.selectors import gradebook_for
from courseware.lti.models import LtiIdentity
from courseware.submissions.models import Status, Submission, SubmissionKind
from courseware.submissions.services import grading_record
from tests.courseware.submissions.test_overrides_trail import REPORT
from tests.lti.conftest import World
from tests.lti.platform import LEARNER, LmsLink

LINE_ITEM = {"label": "Vector add", "scoreMaximum": 10, "tag": "vector-add"}


def launched_student(world: World, sub: str = "lms-sam") -> tuple[User, LmsLink]:
    """A learner who opened the course's "Vector add" link (with its gradebook column)."""
    world.link_course()
    world.lms.add_user(sub, "Sam Student", f"{sub}@uni.example", LEARNER)
    link = world.lms.links.get("link-1") or world.lms.add_link(
        "Vector add", custom={"item": "vector-add"}, lineitem=LINE_ITEM
    )
    page = world.browser().launch(world.lms.login_initiation_url(sub, link=link))
    assert page.status_code == 200 and page.url.endswith("/exercises/vector-add/"), page.text[:400]
    return LtiIdentity.objects.get(sub=sub).user, link


def submitted(world: World, user: User, *, late_days: int = 0) -> Submission:
    """Work the grader is grading now (as submission_create and submission_claim leave it)."""
    item = world.cast.item
    return Submission.objects.create(
        user=user,
        item=item,
        offering=world.cast.offering,
        kind=SubmissionKind.CODE,
        source="def vector_add(a, b): ...",
        source_sha256="s" * 64,
        content_hash=item.content_hash,
        device_kind="cpu",
        is_late=late_days > 0,
        late_days=late_days,
        status=Status.RUNNING,
    )


def graded(submission: Submission, score: float, run_key: str) -> None:
    """The grading task's last step, with the engine's report."""
    report = REPORT.copy()
    report["score"] = score
    grading_record(
        submission_id=submission.pk, report=report, run_key=run_key, worker="w", duration_s=1
    )


def gradebook_text(world: World, user: User) -> str:
    """The score the gradebook shows for the student's vector-add (its export's digits)."""
    book = gradebook_for(offering=world.cast.offering)
    row = next(r for r in book.rows if r.user_id == user.pk)
    return score_for_export(row.cells["vector-add"].score)


def run_lti_queue() -> list[str]:
    """Take every passback message waiting on the broker's `lti` queue and run its task here;
    the task names run. (Only the queue's consumer is replaced: the message, the routing and
    the task are the real ones.) The queue also carries staff work (similarity reports, routed
    there in config/settings/base.py): a message of that kind is left by another test whose
    rows are gone, and is dropped."""
    app.loader.import_default_modules()  # what a worker does first: find the apps' tasks
    ran = []
    queue: Queue = app.amqp.queues["lti"]
    with app.connection_for_read() as connection:
        bound = queue.bind(connection.default_channel)
        bound.queue_declare()
        while (message := bound.get(no_ack=False)) is not None:
            name = message.headers["task"]
            if name.startswith("lti."):
                args, kwargs, _embed = message.decode()
                app.tasks[name].apply(args=args, kwargs=kwargs, throw=True)
                ran.append(name)
            message.ack()
    return ran


def days_ago(days: int) -> object:
    return timezone.now() - timedelta(days=days)


def as_decimal(number: float | int) -> Decimal:
    return Decimal(str(number))
