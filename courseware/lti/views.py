"""The LTI endpoints the LMS and the launched person reach: OIDC login, launch, JWKS, the
account-linking page and deep linking. Views translate HTTP; launch.py checks, flow.py decides.
"""

from __future__ import annotations

import logging
from typing import cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pylti1p3.contrib.django import DjangoMessageLaunch
from pylti1p3.exception import LtiException

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import ItemKind, Offering, Role
from courseware.lti import flow
from courseware.lti.accounts import account_link, identity_user_or_create
from courseware.lti.addresses import tool_url
from courseware.lti.deep_linking import PickerSettings, content_item, items_to_offer, response_jwt
from courseware.lti.frames import ANYWHERE, frame_for, platform_frame_origins
from courseware.lti.keys import tool_jwks
from courseware.lti.launch import (
    LaunchRefused,
    Refusal,
    launch_validate,
    log_refusal,
    login_platform,
    login_redirect,
)
from courseware.lti.lms_session import LmsSession
from courseware.lti.models import LtiContext, Platform
from courseware.lti.provisioning import context_link
from courseware.lti.storage import DatabaseLaunchStorage
from courseware.lti.tool_config import DatabaseToolConf
from courseware.refusals import Refused

logger = logging.getLogger(__name__)
MAX_PASSWORD_TRIES = 5


def refusal_page(request: HttpRequest, refused: LaunchRefused) -> HttpResponse:
    log_refusal(request, refused)
    response = render(
        request, "lti/refused.html", {"message": refused.kind.message}, status=refused.kind.status
    )
    return frame_for(response, [ANYWHERE])  # it shows nothing but the refusal


@csrf_exempt  # a cross-site request from the LMS; the state and nonce protect what follows
@require_http_methods(["GET", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    launch_url = tool_url(request, "lti-launch")
    try:
        platform = login_platform(request, launch_url=launch_url)
        response = login_redirect(request, launch_url=launch_url)
    except LaunchRefused as refused:
        return refusal_page(request, refused)
    return frame_for(response, platform_frame_origins(platform))


@csrf_exempt  # the LMS's form post of the id_token; the signed token and the state protect it
@require_POST
def launch(request: HttpRequest) -> HttpResponse:
    try:
        resolved = flow.resolve(launch_validate(request))
        return flow.after_launch(request, resolved)
    except LaunchRefused as refused:
        return refusal_page(request, refused)


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    return JsonResponse(tool_jwks())


@require_http_methods(["GET", "POST"])
def link_account(request: HttpRequest) -> HttpResponse:
    """An LMS user whose email an existing password account uses: link it (with its
    password) or make a new account."""
    pending = flow.pending_read(request)
    if pending is None:
        refused = LaunchRefused(Refusal.MALFORMED, "no launch waiting to be linked")
        return refusal_page(request, refused)
    resolved = flow.Resolved.from_json(pending["resolved"])
    platform = Platform.objects.get(pk=resolved.platform_id)
    account = User.objects.get(pk=pending["account"])
    error = ""
    if request.method == "POST":
        if request.POST.get("action") == "new":
            user = identity_user_or_create(platform=platform, person=resolved.person)
            return flow.sign_in_and_land(request, user, resolved)
        if pending["tries"] >= MAX_PASSWORD_TRIES:
            error = _("Too many wrong passwords. Continue with a new account, or launch again.")
        elif account_link(
            platform=platform,
            person=resolved.person,
            user=account,
            password=str(request.POST.get("password") or ""),
        ):
            logger.info("LTI user %s on %s linked to %s", resolved.person.sub, platform, account)
            return flow.sign_in_and_land(request, account, resolved)
        else:
            pending["tries"] += 1
            request.session[flow.PENDING_KEY] = pending
            error = _("That is not the password of that account. Try again.")
    context = {
        "email": resolved.person.email,
        "error": error,
        "locked": pending["tries"] >= MAX_PASSWORD_TRIES,
    }
    return render(request, "lti/link_account.html", context, status=400 if error else 200)


def restored_launch(request: HttpRequest, launch_id: str) -> DjangoMessageLaunch:
    restored = DjangoMessageLaunch.from_cache(
        launch_id,
        request,
        DatabaseToolConf(),
        launch_data_storage=DatabaseLaunchStorage(),
        requests_session=LmsSession(),
    )
    return cast(DjangoMessageLaunch, restored)


@login_required
@require_http_methods(["GET", "POST"])
def deep_link(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The deep linking picker (GET), and the signed answer to the LMS (POST)."""
    state = request.session.get(flow.DEEP_LINK_KEY)
    if not isinstance(state, dict):
        return render(request, "lti/deep_link.html", {"idle": True})
    try:
        launch = restored_launch(request, str(state["launch_id"]))
    except LtiException:
        return render(request, "lti/deep_link.html", {"idle": True})
    body = dict(launch.get_launch_data())
    settings = PickerSettings.from_claims(body)
    context_pk = state.get("context")
    context = (
        LtiContext.objects.filter(pk=int(context_pk)).select_related("offering").first()
        if isinstance(context_pk, int)
        else None
    )
    offering = picked_offering(request, context)
    error = ""
    if request.method == "POST" and offering is not None:
        try:
            return deep_link_answer(request, launch, settings, context, offering)
        except Refused as refused:
            error = refused.message
    page = {
        "settings": settings,
        "context": context,
        "offering": offering,
        "offerings": [] if context and context.offering else instructor_offerings(request.user),
        "items": [
            (c, c.title(get_language()), ItemKind(c.kind).label)
            for c in (items_to_offer(offering) if offering else [])
        ],
        "error": error,
        "language": get_language(),
    }
    return render(request, "lti/deep_link.html", page, status=400 if error else 200)


def instructor_offerings(user: User) -> list[Offering]:
    return list(
        Offering.objects.filter(
            enrolments__user=user, enrolments__role=Role.INSTRUCTOR, is_active=True
        ).select_related("course")
    )


def picked_offering(
    request: AuthenticatedHttpRequest, context: LtiContext | None
) -> Offering | None:
    """The linked offering; for a course not linked yet, the one the instructor picked among
    those they teach (from the form)."""
    if context is not None and context.offering is not None:
        return context.offering
    wanted = request.POST.get("offering") or request.GET.get("offering")
    return next((o for o in instructor_offerings(request.user) if str(o.pk) == wanted), None)


def deep_link_answer(
    request: AuthenticatedHttpRequest,
    launch: DjangoMessageLaunch,
    settings: PickerSettings,
    context: LtiContext | None,
    offering: Offering,
) -> HttpResponse:
    chosen = request.POST.getlist("items")
    columns = [c for c in items_to_offer(offering) if c.slug in chosen]
    if not columns:
        raise Refused(_("Choose at least one item."))
    if len(columns) > 1 and not settings.accept_multiple:
        raise Refused(_("The LMS takes one item at a time here: choose one."))
    if context is not None and context.offering is None:
        context_link(context=context, offering=offering, user=request.user)
    launch_url = tool_url(request, "lti-launch")
    resources = [
        content_item(
            c,
            launch_url=launch_url,
            language=get_language(),
            with_lineitem=settings.accept_lineitem,
        )
        for c in columns
    ]
    token = response_jwt(launch.get_deep_link(), resources)
    request.session.pop(flow.DEEP_LINK_KEY, None)
    logger.info("LTI deep linking: %s added %s to %s", request.user, chosen, context)
    return render(
        request, "lti/deep_link_return.html", {"return_url": settings.return_url, "jwt": token}
    )
