"""From a checked launch to a signed-in person on the right page.

resolve: the role, the LMS course and placement, who the person is (before anyone signs in,
so a launch with no usable role is refused without signing in). Then the person's account:
known, new, or (email of a password account) the link-account page first. Then sign in,
enrol in the linked offering, and land: on the item, the deep linking picker, or a page
saying what is missing.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from courseware.courses.models import Offering, Role
from courseware.gradebook.table import item_url
from courseware.lti.accounts import (
    LmsPerson,
    account_create,
    account_to_offer,
    identity_user,
    person_from_claims,
)
from courseware.lti.frames import SESSION_KEY, platform_frame_origins
from courseware.lti.launch import LaunchRefused, Refusal, ValidLaunch
from courseware.lti.models import LtiContext, Platform, ResourceLink
from courseware.lti.provisioning import CLAIM, Enrolled, context_record, enrol, link_record
from courseware.lti.roles import course_role

MESSAGE_TYPE_CLAIM = CLAIM + "message_type"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
PENDING_KEY = "lti_pending"
DEEP_LINK_KEY = "lti_deep_link"
PENDING_LIFETIME_S = 30 * 60
BACKEND = "django.contrib.auth.backends.ModelBackend"


@dataclass(frozen=True)
class Resolved:
    """What a launch asks for, in a form the session can keep across the link-account page."""

    platform_id: int
    person: LmsPerson
    role: str
    message_type: str
    context_id: int | None
    link_id: int | None
    launch_id: str  # pylti1p3's key of the stored claims (deep linking reads them back)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["person"] = self.person.as_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Resolved:
        return cls(**{**data, "person": LmsPerson.from_json(data["person"])})


def resolve(valid: ValidLaunch) -> Resolved:
    body = valid.body
    message_type = str(body.get(MESSAGE_TYPE_CLAIM))
    if message_type not in (RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST):
        raise LaunchRefused(Refusal.UNSUPPORTED, message_type)
    role = course_role(body.get(CLAIM + "roles") or [])
    if role is None:
        raise LaunchRefused(Refusal.NO_ROLE, str(body.get(CLAIM + "roles")))
    if message_type == DEEP_LINKING_REQUEST and role != Role.INSTRUCTOR:
        raise LaunchRefused(Refusal.INSTRUCTORS_ONLY, f"deep linking as {role}")
    context = context_record(platform=valid.platform, body=body)
    link = link_record(context=context, body=body) if context is not None else None
    return Resolved(
        platform_id=valid.platform.pk,
        person=person_from_claims(body),
        role=str(role),
        message_type=message_type,
        context_id=context.pk if context else None,
        link_id=link.pk if link else None,
        launch_id=valid.launch.get_launch_id(),
    )


def after_launch(request: HttpRequest, resolved: Resolved) -> HttpResponse:
    platform = Platform.objects.get(pk=resolved.platform_id)
    user = identity_user(platform=platform, sub=resolved.person.sub)
    if user is not None and not user.is_active:
        raise LaunchRefused(Refusal.ACCOUNT_DISABLED, f"{user} is inactive")
    if user is None:
        offered = account_to_offer(platform=platform, person=resolved.person)
        if offered is not None:
            pending_keep(request, resolved, offered, platform)
            return redirect("lti-link-account")
        user = account_create(platform=platform, person=resolved.person)
    return sign_in_and_land(request, user, resolved)


def pending_keep(
    request: HttpRequest, resolved: Resolved, account: User, platform: Platform
) -> None:
    request.session[PENDING_KEY] = {
        "resolved": resolved.as_json(),
        "account": account.pk,
        "tries": 0,
        "at": time.time(),
    }
    request.session[SESSION_KEY] = platform_frame_origins(platform)


def pending_read(request: HttpRequest) -> dict[str, Any] | None:
    pending = request.session.get(PENDING_KEY)
    if not isinstance(pending, dict) or time.time() - pending.get("at", 0) > PENDING_LIFETIME_S:
        return None
    return pending


def sign_in_and_land(request: HttpRequest, user: User, resolved: Resolved) -> HttpResponse:
    platform = Platform.objects.get(pk=resolved.platform_id)
    login(request, user, backend=BACKEND)  # a new session key; LTI marks go on after it
    request.session.pop(PENDING_KEY, None)
    request.session[SESSION_KEY] = platform_frame_origins(platform)
    context = (
        LtiContext.objects.filter(pk=resolved.context_id).select_related("offering").first()
        if resolved.context_id is not None
        else None
    )
    if context is not None and context.offering is not None:
        enrol_and_tell(request, user, context.offering, Role(resolved.role))
    if resolved.message_type == DEEP_LINKING_REQUEST:
        request.session[DEEP_LINK_KEY] = {
            "launch_id": resolved.launch_id,
            "context": resolved.context_id,
            "platform": platform.pk,
        }
        return redirect("lti-deep-link")
    return land(request, user, resolved, context)


def enrol_and_tell(request: HttpRequest, user: User, offering: Offering, role: Role) -> None:
    outcome, enrolment = enrol(user=user, offering=offering, role=role)
    if outcome == Enrolled.OTHER_ROLE:
        messages.info(
            request,
            _(
                "You are enrolled here as %(here)s, while the LMS says %(lms)s; the site keeps "
                "%(here)s. An instructor can change it in the course admin."
            )
            % {"here": enrolment.get_role_display(), "lms": role.label},
        )


def land(
    request: HttpRequest, user: User, resolved: Resolved, context: LtiContext | None
) -> HttpResponse:
    if context is None or context.offering is None:
        return not_linked_page(request, user, context)
    link = (
        ResourceLink.objects.filter(pk=resolved.link_id).select_related("item").first()
        if resolved.link_id is not None
        else None
    )
    if link is not None and link.item is not None:
        return redirect(item_url(link.item.slug, link.item.kind))
    if resolved.role == Role.INSTRUCTOR:
        messages.info(request, _("Choose which item this LMS link opens."))
        return redirect(reverse("lti-offering", args=[context.offering.pk]) + "#links")
    return render(request, "lti/waiting.html", {"reason": "no_item", "context": context})


def not_linked_page(request: HttpRequest, user: User, context: LtiContext | None) -> HttpResponse:
    """The LMS course is not (yet) linked to an offering: say who can link it, and let an
    instructor of offerings here do it at once."""
    offerings: list[Offering] = []
    if context is not None:
        offerings = list(
            Offering.objects.filter(
                enrolments__user=user, enrolments__role=Role.INSTRUCTOR, is_active=True
            ).select_related("course")
        )
    return render(
        request,
        "lti/waiting.html",
        {
            "reason": "not_linked" if context else "no_context",
            "context": context,
            "offerings": offerings,
        },
    )
