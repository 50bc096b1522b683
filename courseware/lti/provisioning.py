"""What a launch records: the LMS course (context) and placement (resource link), and the
person's enrolment in the offering the course is linked to."""

from __future__ import annotations

import enum
import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from courseware.courses.models import Enrolment, Item, Offering, Role
from courseware.lti.models import LtiContext, Platform, ResourceLink
from courseware.refusals import Refused

logger = logging.getLogger(__name__)

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
CONTEXT_CLAIM = CLAIM + "context"
RESOURCE_LINK_CLAIM = CLAIM + "resource_link"
CUSTOM_CLAIM = CLAIM + "custom"
DEPLOYMENT_CLAIM = CLAIM + "deployment_id"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
# The custom parameter deep linking puts on each link: the slug of the item it opens.
ITEM_PARAMETER = "item"


def claim_dict(body: dict[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name)
    return value if isinstance(value, dict) else {}


def context_record(*, platform: Platform, body: dict[str, Any]) -> LtiContext | None:
    """The launch's LMS course, with the service addresses of this launch kept for the roster
    sync and the passback. None for a launch without a context claim."""
    claim = claim_dict(body, CONTEXT_CLAIM)
    context_id = str(claim.get("id") or "")[:255]
    if not context_id:
        return None
    context, _made = LtiContext.objects.get_or_create(
        platform=platform,
        context_id=context_id,
        defaults={"deployment_id": str(body.get(DEPLOYMENT_CLAIM) or "")[:255]},
    )
    context.title = str(claim.get("title") or "")[:255]
    context.label = str(claim.get("label") or "")[:255]
    context.last_launch_at = timezone.now()
    nrps = claim_dict(body, NRPS_CLAIM)
    if isinstance(nrps.get("context_memberships_url"), str):
        context.memberships_url = nrps["context_memberships_url"][:800]
    ags = claim_dict(body, AGS_CLAIM)
    if isinstance(ags.get("lineitems"), str):
        context.lineitems_url = ags["lineitems"][:800]
    if isinstance(ags.get("scope"), list):
        context.ags_scopes = [str(s) for s in ags["scope"]]
    context.save()
    return context


def link_record(*, context: LtiContext, body: dict[str, Any]) -> ResourceLink | None:
    """The launch's placement. A new one opens the item its custom parameter names (deep
    linking put it there); its LMS gradebook column is the launch's AGS line item."""
    claim = claim_dict(body, RESOURCE_LINK_CLAIM)
    link_id = str(claim.get("id") or "")[:255]
    if not link_id:
        return None
    link, _made = ResourceLink.objects.get_or_create(context=context, resource_link_id=link_id)
    link.title = str(claim.get("title") or "")[:255]
    if link.item_id is None and context.offering is not None:
        slug = str(claim_dict(body, CUSTOM_CLAIM).get(ITEM_PARAMETER) or "")
        link.item = course_item(context.offering, slug)
    lineitem = claim_dict(body, AGS_CLAIM).get("lineitem")
    if isinstance(lineitem, str) and lineitem:
        link.lineitem_url = lineitem[:800]
    link.save()
    return link


def course_item(offering: Offering, slug: str) -> Item | None:
    if not slug:
        return None
    return Item.objects.filter(course_id=offering.course_id, slug=slug, is_published=True).first()


class Enrolled(enum.Enum):
    NEW = "new"
    ALREADY = "already"
    OTHER_ROLE = "other_role"


def enrol(*, user: User, offering: Offering, role: Role) -> tuple[Enrolled, Enrolment]:
    """Enrol with the LMS's role. An existing enrolment keeps its role even when the LMS says
    another (an instructor trying the student view must not lose the course): it is reported."""
    enrolment, made = Enrolment.objects.get_or_create(
        user=user, offering=offering, defaults={"role": role}
    )
    if made:
        return Enrolled.NEW, enrolment
    if enrolment.role != role:
        logger.info(
            "LTI: %s is %s in %s but the LMS says %s; kept", user, enrolment.role, offering, role
        )
        return Enrolled.OTHER_ROLE, enrolment
    return Enrolled.ALREADY, enrolment


def context_link(*, context: LtiContext, offering: Offering, user: User) -> None:
    """Link an LMS course to an offering. Who may was checked by the caller (an instructor of
    the offering); a course already linked elsewhere is not moved silently."""
    with transaction.atomic():
        context = LtiContext.objects.select_for_update().get(pk=context.pk)
        if context.offering_id not in (None, offering.pk):
            raise Refused(
                _(
                    "This LMS course is already linked to another offering (%(offering)s). Its "
                    "instructors can unlink it first."
                )
                % {"offering": context.offering}
            )
        context.offering = offering
        context.linked_by = user
        context.linked_at = timezone.now()
        context.save(update_fields=["offering", "linked_by", "linked_at"])
