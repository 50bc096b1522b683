"""Grade passback (LTI Assignment and Grade Services 2.0, the score publish service).

When a score changes, `score_changed` records a ScoreSend per LMS line item of that item and
queues the `lti.send_score` task on the LTI queue (never a grading queue: a slow LMS must not
hold a GPU). The task calls `score_send_attempt`, which reads the score the gradebook shows at
that moment — `gradebook_for` and its rounding, nothing recomputed here — and posts it. A send
that finds the LMS down is retried with exponential back-off; every attempt is recorded on the
ScoreSend (what was sent, when, the LMS's answer), which the staff's LTI page lists.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import partial

import requests
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector

from courseware.gradebook.numbers import score_for_export
from courseware.gradebook.selectors import gradebook_for
from courseware.lti.keys import NoToolKey
from courseware.lti.lms_session import LmsSession
from courseware.lti.models import (
    LtiIdentity,
    ResourceLink,
    ScoreSend,
    SendReason,
    SendStatus,
)
from courseware.lti.tool_config import registration_for

logger = logging.getLogger(__name__)

SEND_TASK_NAME = "lti.send_score"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
# An LMS answering these may answer differently later; any other error will not change.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
DETAIL_CHARS = 1000


def score_changed(*, offering_id: int, user_id: int, item_id: int, reason: SendReason) -> int:
    """Queue a send to every LMS line item of this item in this offering, for this student (if
    they are an LMS user there). Returns how many were queued."""
    links = list(
        ResourceLink.objects.filter(item_id=item_id, context__offering_id=offering_id)
        .exclude(context__lineitems_url="", lineitem_url="")
        .select_related("context")
    )
    if not links:
        return 0
    subs = dict(
        LtiIdentity.objects.filter(
            user_id=user_id, platform_id__in={link.context.platform_id for link in links}
        ).values_list("platform_id", "sub")
    )
    queued, seen = 0, set()
    for link in links:
        sub = subs.get(link.context.platform_id)
        # Two placements of one item may share one gradebook column: send to it once.
        target = link.lineitem_url or f"{link.context_id}:{link.resource_link_id}"
        if sub is None or target in seen:
            continue
        seen.add(target)
        send = ScoreSend.objects.create(
            link=link,
            offering_id=offering_id,
            item_id=item_id,
            user_id=user_id,
            lti_user_id=sub,
            reason=reason,
        )
        transaction.on_commit(partial(score_send_enqueue, send_id=send.pk))
        queued += 1
    return queued


def score_send_enqueue(*, send_id: int, countdown: float | None = None) -> None:
    """Send the task (only the id travels). A broker outage leaves the send queued: the staff
    page shows it and offers to send it again."""
    try:
        current_app.send_task(
            SEND_TASK_NAME, args=[send_id], queue=settings.LTI_PASSBACK_QUEUE, countdown=countdown
        )
    except Exception:
        logger.exception("Could not queue LTI score send %s; it stays queued", send_id)


@dataclass(frozen=True)
class ShownScore:
    """The gradebook's cell as an AGS score: the score exactly as the gradebook shows it (two
    decimals at most), or None when there is none to show yet."""

    given: Decimal | None
    maximum: Decimal
    activity_progress: str
    grading_progress: str


def shown_score(send: ScoreSend) -> ShownScore | None:
    """None when the gradebook has no such student or item (a TA, an unpublished item)."""
    book = gradebook_for(offering=send.offering)
    column = next((c for c in book.columns if c.slug == send.item.slug), None)
    row = next((r for r in book.rows if r.user_id == send.user_id), None)
    if column is None or row is None:
        return None
    cell = row.cells.get(column.slug)
    text = score_for_export(cell.score if cell is not None else None)
    given = Decimal(text) if text else None
    if cell is not None and cell.needs_person:
        grading = "PendingManual"  # a TA must look; the LMS shows the score as provisional
    elif cell is not None and cell.provisional:
        # Measured on a busy machine: a quiet worker grades it again and sends the final score.
        grading = "Pending"
    elif given is None:
        grading = "Pending"
    else:
        grading = "FullyGraded"
    # "Submitted": handed in, and the student may still submit again (attempts permitting).
    return ShownScore(given, Decimal(score_for_export(column.max_score)), "Submitted", grading)


def score_timestamp() -> str:
    """Now, in ISO 8601 with milliseconds and the offset, as AGS asks ("…T12:00:00.123+00:00");
    the LMS ignores a score older than the last one it took, so each attempt is stamped anew."""
    return timezone.now().isoformat(timespec="milliseconds")


def grade_for(send: ScoreSend, score: ShownScore, timestamp: str) -> Grade:
    grade = (
        Grade()
        .set_user_id(send.lti_user_id)
        .set_score_maximum(float(score.maximum))
        .set_activity_progress(score.activity_progress)
        .set_grading_progress(score.grading_progress)
        .set_timestamp(timestamp)
    )
    if score.given is not None:
        grade.set_score_given(float(score.given))
    return grade


def ags_service(link: ResourceLink, session: LmsSession) -> AssignmentsGradesService:
    context = link.context
    connector = ServiceConnector(registration_for(context.platform), requests_session=session)
    data = {"scope": context.ags_scopes, "lineitems": context.lineitems_url}
    return AssignmentsGradesService(connector, data)  # type: ignore[arg-type]


def lineitem_ensure(
    link: ResourceLink, ags: AssignmentsGradesService, score: ShownScore
) -> LineItem:
    """The link's LMS gradebook column. A link placed by hand (not through deep linking) may
    come without one: find the one made for it earlier, or make it, when the LMS lets the tool
    manage line items."""
    if link.lineitem_url:
        return LineItem({"id": link.lineitem_url})
    if LINEITEM_SCOPE not in link.context.ags_scopes:
        raise LtiException(
            "The LMS gave this link no gradebook column and does not let the tool make one."
        )
    title = link.title or (link.item.title_en if link.item else link.resource_link_id)
    wanted = (
        LineItem()
        .set_label(title)
        .set_score_maximum(float(score.maximum))
        .set_resource_link_id(link.resource_link_id)
        .set_tag(link.item.slug if link.item else "")
    )
    found = ags.find_or_create_lineitem(wanted, find_by="resource_link_id")
    link.lineitem_url = str(found.get_id() or "")
    link.save(update_fields=["lineitem_url"])
    return found


@dataclass(frozen=True)
class AttemptOutcome:
    retry: bool = False


def score_send_attempt(*, send_id: int) -> AttemptOutcome:
    """One try at a send, recorded on its row; `retry` when the LMS may take it later."""
    send = ScoreSend.objects.select_related(
        "link__context__platform", "link__item", "item", "offering"
    ).get(pk=send_id)
    if send.status in (SendStatus.SENT, SendStatus.SKIPPED):
        return AttemptOutcome()  # a second delivery of a finished send
    score = shown_score(send)
    if score is None or score.maximum <= 0:
        send.status, send.detail = SendStatus.SKIPPED, "not a student's gradable item here"
        send.save(update_fields=["status", "detail"])
        return AttemptOutcome()
    timestamp = score_timestamp()
    send.attempts += 1
    send.last_attempt_at = timezone.now()
    send.next_attempt_at = None
    send.score_given, send.score_maximum = score.given, score.maximum
    send.activity_progress, send.grading_progress = score.activity_progress, score.grading_progress
    send.score_timestamp = timestamp
    session = LmsSession()
    outcome = AttemptOutcome()
    try:
        ags = ags_service(send.link, session)
        lineitem = lineitem_ensure(send.link, ags, score)
        ags.put_grade(grade_for(send, score, timestamp), lineitem)
    except requests.RequestException as exc:
        send.status, send.detail = SendStatus.RETRYING, f"{type(exc).__name__}: {exc}"
        outcome = AttemptOutcome(retry=True)
    except LtiServiceException as exc:
        status = exc.response.status_code
        retry = status in RETRY_STATUSES
        send.status = SendStatus.RETRYING if retry else SendStatus.FAILED
        send.detail = exc.response.text[:DETAIL_CHARS]
        outcome = AttemptOutcome(retry=retry)
    except (LtiException, NoToolKey) as exc:  # the registration or the scopes: not transient
        send.status, send.detail = SendStatus.FAILED, str(exc)[:DETAIL_CHARS]
    else:
        send.status, send.detail, send.sent_at = SendStatus.SENT, "", timezone.now()
    send.response_status = session.last_status
    send.save()
    log = logger.info if send.status == SendStatus.SENT else logger.warning
    log(
        "LTI score send %s (%s) attempt %s: %s %s",
        send.pk,
        send.lti_user_id,
        send.attempts,
        send.status,
        send.response_status,
    )
    return outcome


def backoff_s(retries_done: int) -> float:
    """Exponential: base, 2×base, 4×base… (base LTI_PASSBACK_BACKOFF_S, 30 s by default)."""
    return float(settings.LTI_PASSBACK_BACKOFF_S) * (2**retries_done)


def score_send_retry_scheduled(*, send_id: int, countdown: float) -> None:
    ScoreSend.objects.filter(pk=send_id).update(
        next_attempt_at=timezone.now() + timedelta(seconds=countdown)
    )


def score_send_given_up(*, send_id: int) -> None:
    send = ScoreSend.objects.get(pk=send_id)
    send.status = SendStatus.FAILED
    send.next_attempt_at = None
    send.detail = f"Gave up after {send.attempts} attempts. {send.detail}"[:DETAIL_CHARS]
    send.save(update_fields=["status", "next_attempt_at", "detail"])
    logger.error("LTI score send %s given up after %s attempts", send.pk, send.attempts)


def score_send_again(*, send: ScoreSend) -> ScoreSend:
    """A person asks to send a failed (or stuck) one again: a new send, the gradebook's score
    as it is now."""
    again = ScoreSend.objects.create(
        link=send.link,
        offering=send.offering,
        item=send.item,
        user=send.user,
        lti_user_id=send.lti_user_id,
        reason=SendReason.RESENT,
    )
    transaction.on_commit(lambda: score_send_enqueue(send_id=again.pk))
    return again
