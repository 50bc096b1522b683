"""Per-student extensions: grant (or replace), revoke, list. The deadline checks read them
through courses.selectors.policy_for(user=...)."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.accounts.timezone import local_datetime_text
from courseware.courses.models import Enrolment, Extension, Item, ItemPolicy, Offering, Role
from courseware.refusals import Refused


def extension_list(*, offering: Offering) -> QuerySet[Extension]:
    return Extension.objects.filter(offering=offering).select_related("user", "item", "granted_by")


def extension_grant(
    *,
    offering: Offering,
    item: Item,
    student: User,
    due_at: datetime | None,
    late_until: datetime | None,
    reason: str,
    granted_by: User,
) -> Extension:
    """Give `student` more time for `item`; a second grant for the same item replaces the first.

    Refused (nothing saved) when the dates would not give more time than the item's policy,
    or the student is not a student of the offering.
    """
    if not Enrolment.objects.filter(user=student, offering=offering, role=Role.STUDENT).exists():
        raise Refused(_("%(user)s is not a student of this offering.") % {"user": student.username})
    if item.course_id != offering.course_id:
        raise Refused(_("%(item)s is not part of this course.") % {"item": item.slug})
    if not reason.strip():
        raise Refused(_("Say why the extension is given; the student and other staff see it."))
    if due_at is None and late_until is None:
        raise Refused(_("Set a new due date, a new end of late work, or both."))
    if due_at is not None and late_until is not None and late_until < due_at:
        raise Refused(_("Late work must end on or after the extended due date."))
    policy = ItemPolicy.objects.filter(offering=offering, item=item).first()
    if policy is None or policy.due_at is None:
        raise Refused(
            _("%(item)s has no deadline in this offering, so there is nothing to extend.")
            % {"item": item.slug}
        )
    _refuse_earlier(due_at, policy.due_at, _("the due date"))
    if policy.late_until is not None and policy.late_until > policy.due_at:
        _refuse_earlier(late_until, policy.late_until, _("the end of late work"))
    else:
        _refuse_earlier(late_until, policy.due_at, _("the due date"))
    with transaction.atomic():
        extension, created = Extension.objects.update_or_create(
            offering=offering,
            item=item,
            user=student,
            defaults={
                "due_at": due_at,
                "late_until": late_until,
                "reason": reason.strip(),
                "granted_by": granted_by,
            },
        )
        if not created:
            # A replaced grant is a new decision: record when it was made.
            extension.granted_at = timezone.now()
            extension.save(update_fields=["granted_at"])
    return extension


def _refuse_earlier(asked: datetime | None, current: datetime, what: str) -> None:
    if asked is not None and asked <= current:
        raise Refused(
            _(
                "The new date is not later than %(what)s every student has (%(when)s); an "
                "extension can only give more time."
            )
            % {"what": what, "when": local_datetime_text(current)}
        )


def extension_revoke(*, offering: Offering, extension_id: int) -> Extension:
    """Remove an extension of this offering; the student's deadline is the policy's again."""
    extension = (
        Extension.objects.filter(offering=offering, pk=extension_id)
        .select_related("user", "item")
        .first()
    )
    if extension is None:
        raise Refused(_("That extension no longer exists."), status_code=404)
    extension.delete()
    return extension
