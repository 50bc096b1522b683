"""Keep an instructor's admin access in step with their enrolments, however they are made:
the admin, the roster upload, seed_demo, a shell or a test all save an Enrolment."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from courseware.accounts.services import instructor_access_grant, instructor_access_revoke_if_unused
from courseware.courses.models import Enrolment, Role


def enrolment_saved(sender: type[Enrolment], instance: Enrolment, **kwargs: Any) -> None:
    if instance.role == Role.INSTRUCTOR:
        instructor_access_grant(user=instance.user)
    else:
        instructor_access_revoke_if_unused(user=instance.user)


def enrolment_deleted(sender: type[Enrolment], instance: Enrolment, **kwargs: Any) -> None:
    # Read the user afresh: when the user themself is being deleted they may be gone already.
    user = User.objects.filter(pk=instance.user_id).first()
    if user is not None:
        instructor_access_revoke_if_unused(user=user)
