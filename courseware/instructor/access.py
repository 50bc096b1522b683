"""Who may open the instructor pages: the staff of an offering, and for some pages only its
instructors. A page of an offering you do not teach does not exist for you (404); a TA who
opens an instructor-only page of their own offering is told so (403)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext as _

from courseware.courses.models import Enrolment, Offering, Role


@dataclass(frozen=True)
class StaffedOffering:
    offering: Offering
    role: str  # Role.TA or Role.INSTRUCTOR; a superuser counts as an instructor

    @property
    def can_manage(self) -> bool:
        return self.role == Role.INSTRUCTOR


def offerings_staffed(*, user: User) -> list[StaffedOffering]:
    """The offerings this user teaches or assists in, newest first."""
    if user.is_superuser:
        offerings = Offering.objects.select_related("course").order_by("-is_active", "-pk")
        return [StaffedOffering(o, Role.INSTRUCTOR) for o in offerings]
    enrolments = (
        Enrolment.objects.filter(user=user, role__in=[Role.TA, Role.INSTRUCTOR])
        .select_related("offering__course")
        .order_by("-offering__is_active", "-offering_id")
    )
    return [StaffedOffering(e.offering, e.role) for e in enrolments]


def offering_for_staff(*, user: User, offering_id: int, manage: bool) -> StaffedOffering:
    """The offering if this user is its staff; `manage`: only its instructors may."""
    for staffed in offerings_staffed(user=user):
        if staffed.offering.pk == offering_id:
            if manage and not staffed.can_manage:
                raise PermissionDenied(_("Only the offering's instructors may use this page."))
            return staffed
    raise Http404("No such offering")


def can_manage_content(*, user: User) -> bool:
    """Syncing content changes what every offering sees: instructors (of any offering) only."""
    return user.is_superuser or Enrolment.objects.filter(user=user, role=Role.INSTRUCTOR).exists()


def refuse_unless_staff(*, user: User) -> list[StaffedOffering]:
    staffed = offerings_staffed(user=user)
    if not staffed:
        raise PermissionDenied(_("These pages are for the staff of an offering."))
    return staffed
