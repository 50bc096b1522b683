"""Names and Role Provisioning Services: bring an LMS course's roster into its offering.

Every active member with a role here is enrolled (an account is made for a new LMS user, as a
launch would). Nothing is ever removed: people enrolled here who are no longer members (or
whom the LMS marks inactive) are reported for the instructor to decide. As at a launch, a
member whose email belongs to an existing password account is not linked to it (only the
person can do that, with the password, at their first launch), and an enrolment's role is not
changed when the LMS says another.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

import requests
from django.contrib.auth.models import User
from django.utils.translation import gettext as _
from pylti1p3.exception import LtiException
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from courseware.courses.models import Enrolment
from courseware.lti.accounts import (
    LmsPerson,
    account_to_offer,
    identity_user,
    identity_user_or_create,
    person_from_claims,
)
from courseware.lti.keys import NoToolKey
from courseware.lti.lms_session import LmsSession
from courseware.lti.models import LtiContext, LtiIdentity, RosterSync
from courseware.lti.provisioning import Enrolled, enrol
from courseware.lti.roles import course_role
from courseware.lti.tool_config import registration_for
from courseware.refusals import Refused

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemberLine:
    name: str
    email: str
    role: str  # the role's code here ("student", "ta", "instructor"), or the LMS's roles
    note: str = ""


@dataclass
class RosterReport:
    enrolled: list[MemberLine] = field(default_factory=list)  # newly enrolled
    unchanged: list[MemberLine] = field(default_factory=list)  # already enrolled as the LMS says
    other_role: list[MemberLine] = field(default_factory=list)  # enrolled here with another role
    to_link: list[MemberLine] = field(default_factory=list)  # email of a password account
    no_role: list[MemberLine] = field(default_factory=list)  # mentors, observers...
    gone: list[MemberLine] = field(default_factory=list)  # enrolled here, not an active member

    def as_json(self) -> dict[str, list[dict[str, str]]]:
        return {name: [asdict(m) for m in getattr(self, name)] for name in REPORT_LISTS}


REPORT_LISTS = ("enrolled", "unchanged", "other_role", "to_link", "no_role", "gone")


def members_fetch(context: LtiContext) -> list[dict[str, Any]]:
    connector = ServiceConnector(registration_for(context.platform), requests_session=LmsSession())
    service = NamesRolesProvisioningService(
        connector, {"context_memberships_url": context.memberships_url}
    )
    return [dict(m) for m in service.get_members()]


def roster_sync(*, context: LtiContext, requested_by: User) -> RosterSync:
    """Fetch the LMS course's members (every page) and enrol them; the outcome is recorded."""
    if context.offering is None:
        raise Refused(_("Link this LMS course to an offering before syncing its roster."))
    if not context.memberships_url:
        raise Refused(
            _(
                "The LMS has not offered its roster for this course: enable the Names and Role "
                "Provisioning service for the tool in the LMS, then launch it once from the course."
            )
        )
    try:
        members = members_fetch(context)
    except (requests.RequestException, LtiException, NoToolKey) as exc:
        logger.warning("Roster sync of %s failed: %s", context, exc)
        return RosterSync.objects.create(
            context=context, requested_by=requested_by, error=str(exc)[:2000]
        )
    report = roster_apply(context=context, members=members)
    return RosterSync.objects.create(
        context=context, requested_by=requested_by, report=report.as_json()
    )


def roster_apply(*, context: LtiContext, members: list[dict[str, Any]]) -> RosterReport:
    assert context.offering is not None
    report = RosterReport()
    present: set[int] = set()
    for member in members:
        person = person_from_claims(member)
        if not person.sub or str(member.get("status") or "Active") != "Active":
            continue  # inactive and deleted members count as gone, below
        role = course_role(member.get("roles") or [])
        if role is None:
            report.no_role.append(line(person, ", ".join(map(str, member.get("roles") or []))))
            continue
        user = identity_user(platform=context.platform, sub=person.sub)
        if user is None and account_to_offer(platform=context.platform, person=person):
            report.to_link.append(line(person, str(role)))
            continue
        user = user or identity_user_or_create(platform=context.platform, person=person)
        present.add(user.pk)
        outcome, enrolment = enrol(user=user, offering=context.offering, role=role)
        shown = line(person, str(enrolment.role))
        if outcome == Enrolled.NEW:
            report.enrolled.append(shown)
        elif outcome == Enrolled.OTHER_ROLE:
            report.other_role.append(MemberLine(shown.name, shown.email, shown.role, str(role)))
        else:
            report.unchanged.append(shown)
    report.gone = gone_members(context, present)
    return report


def line(person: LmsPerson, role: str) -> MemberLine:
    name = person.name or " ".join(p for p in (person.given_name, person.family_name) if p)
    return MemberLine(name=name or person.sub, email=person.email, role=role)


def gone_members(context: LtiContext, present: set[int]) -> list[MemberLine]:
    """People of this LMS enrolled in the offering who are not active members any more."""
    from_lms = LtiIdentity.objects.filter(platform=context.platform).values("user_id")
    enrolments = (
        Enrolment.objects.filter(offering=context.offering, user_id__in=from_lms)
        .exclude(user_id__in=present)
        .select_related("user")
        .order_by("user__username")
    )
    return [
        MemberLine(
            name=e.user.get_full_name() or e.user.get_username(),
            email=e.user.email,
            role=str(e.role),
            note=e.user.get_username(),
        )
        for e in enrolments
    ]
