"""Writes for accounts: API tokens, and an instructor's access to the admin."""

from __future__ import annotations

import logging

from django.contrib.auth.models import Group, User

from courseware.accounts.models import ApiToken
from courseware.courses.models import Enrolment, Role

logger = logging.getLogger(__name__)


def token_issue(*, user: User) -> ApiToken:
    """Return the user's token, making one the first time."""
    token, _created = ApiToken.objects.get_or_create(user=user)
    return token


# Made by courses migration 0004 with the model permissions an instructor needs in the admin.
INSTRUCTORS_GROUP = "Course instructors"


def instructor_access_grant(*, user: User) -> None:
    """Let an instructor into the admin (is_staff) with the instructors' permissions.

    Called for every instructor enrolment: without it an instructor is staff with no
    permissions, and the admin says there is nothing they may view or edit.
    """
    group = Group.objects.filter(name=INSTRUCTORS_GROUP).first()
    if group is None:
        # Deleted by hand: the migration's grants are the reference; say so loudly in the log
        # rather than invent a group with other permissions.
        logger.error("The group %r is missing; run the courses migrations", INSTRUCTORS_GROUP)
    else:
        user.groups.add(group)
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])


def instructor_access_revoke_if_unused(*, user: User) -> None:
    """Take the instructors' group away from someone who no longer teaches any offering.

    is_staff stays: it may have been given for other reasons, and alone it grants nothing.
    """
    if not Enrolment.objects.filter(user=user, role=Role.INSTRUCTOR).exists():
        user.groups.remove(*Group.objects.filter(name=INSTRUCTORS_GROUP))
