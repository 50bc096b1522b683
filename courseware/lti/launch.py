"""Checking an LTI 1.3 launch (the id_token the LMS posts to the tool), one step at a time.

pylti1p3 does the checks (state, nonce issued at login, registration, RS256 signature against
the platform's JWKS, deployment, the message's required claims); they run here step by step so
that a refusal can say which check failed. Two checks are added: the LTI claims the JWT library
does not require (exp, iat; azp when aud names several clients), and a nonce may be used only
once (pylti1p3 only checks that the login issued it, so the same post would be accepted again).
"""

from __future__ import annotations

import base64
import enum
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import jwt
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from pylti1p3.contrib.django import DjangoMessageLaunch, DjangoOIDCLogin
from pylti1p3.exception import LtiException, OIDCException

from courseware.lti.frames import origin_of
from courseware.lti.keys import NoToolKey
from courseware.lti.lms_session import LmsSession
from courseware.lti.models import Platform, UsedNonce
from courseware.lti.storage import DatabaseLaunchStorage
from courseware.lti.tool_config import DatabaseToolConf, platform_find

logger = logging.getLogger(__name__)


class Refusal(enum.Enum):
    """Why a launch (or a login) is refused: the HTTP status and what to tell the person."""

    MALFORMED = (400, _("The LMS sent an incomplete launch. Open the link in the LMS again."))
    COOKIES_BLOCKED = (
        400,
        _(
            "Your browser did not send back the cookie this site set a moment ago (it may block "
            "cookies inside the LMS page). Open the link in a new window, or allow this site's "
            "cookies, and try again."
        ),
    )
    BAD_STATE = (
        403,
        _(
            "This launch does not belong to the sign-in your browser started (or it took too "
            "long). Open the link in the LMS again."
        ),
    )
    UNKNOWN_NONCE = (
        403,
        _("This launch was not started from this browser. Open the link in the LMS again."),
    )
    REPLAYED = (
        403,
        _("This launch was already used once. Open the link in the LMS again for a new one."),
    )
    UNKNOWN_PLATFORM = (
        403,
        _(
            "This LMS is not registered with the site. An instructor registers it on the "
            "site's LTI page (Teaching → LMS platforms)."
        ),
    )
    UNKNOWN_DEPLOYMENT = (
        403,
        _(
            "This installation of the tool in the LMS (its deployment ID) is not registered "
            "with the site. An instructor adds the deployment ID on the site's LTI page."
        ),
    )
    BAD_SIGNATURE = (
        403,
        _(
            "The launch's signature does not match the LMS's keys, so it was refused. If this "
            "keeps happening, the LMS's keyset URL registered on the site may be wrong."
        ),
    )
    EXPIRED = (
        403,
        _(
            "The launch has expired (or is not valid yet). Open the link in the LMS again; if "
            "it keeps happening, a server's clock may be wrong."
        ),
    )
    KEYS_UNREACHABLE = (
        403,
        _(
            "The site could not fetch the LMS's public keys to check the launch. Try again in "
            "a minute; if it keeps happening, check the keyset URL registered on the site."
        ),
    )
    BAD_MESSAGE = (400, _("The launch is missing information LTI 1.3 requires, so it was refused."))
    UNSUPPORTED = (400, _("This kind of LTI launch is not supported by the site."))
    NO_ROLE = (
        403,
        _(
            "Your role in this LMS course has no counterpart on the site (students, teaching "
            "assistants and instructors only)."
        ),
    )
    INSTRUCTORS_ONLY = (403, _("Only the course's instructors may add content from the site."))
    ACCOUNT_DISABLED = (
        403,
        _("Your account on the site is disabled. Ask the course's instructors."),
    )
    WRONG_TARGET = (400, _("The LMS asked for an address that is not this site's launch address."))
    NO_TOOL_KEY = (
        503,
        _(
            "The site has no LTI key yet. Its administrator runs "
            "`python manage.py lti_generate_key`."
        ),
    )

    @property
    def status(self) -> int:
        return int(self.value[0])

    @property
    def message(self) -> Promise:
        return self.value[1]


class LaunchRefused(Exception):
    """The launch (or login) is refused: `kind` for the person, `detail` for the log."""

    def __init__(self, kind: Refusal, detail: str = "") -> None:
        super().__init__(f"{kind.name}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass
class ValidLaunch:
    launch: DjangoMessageLaunch
    platform: Platform
    body: dict[str, Any]


def unverified_claims(id_token: str) -> dict[str, Any]:
    """The token's claims, unchecked: only to say in the log what was refused."""
    try:
        payload = id_token.split(".")[1]
        decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def log_refusal(request: HttpRequest, refused: LaunchRefused) -> None:
    claims = unverified_claims(str(request.POST.get("id_token") or ""))
    logger.warning(
        "LTI %s refused (%s): %s; iss=%r aud=%r deployment=%r sub=%r from %s",
        "launch" if request.path.rstrip("/").endswith("launch") else "login",
        refused.kind.name,
        refused.detail,
        claims.get("iss") or request.GET.get("iss") or request.POST.get("iss"),
        claims.get("aud") or request.GET.get("client_id") or request.POST.get("client_id"),
        claims.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id"),
        claims.get("sub"),
        request.META.get("REMOTE_ADDR"),
    )


def message_launch(request: HttpRequest) -> DjangoMessageLaunch:
    try:
        launch = DjangoMessageLaunch(
            request,
            DatabaseToolConf(),
            launch_data_storage=DatabaseLaunchStorage(),
            requests_session=LmsSession(),
        )
    except LtiException as exc:  # its session-id cookie is missing: blocked inside the iframe
        raise LaunchRefused(Refusal.COOKIES_BLOCKED, str(exc)) from exc
    return launch.set_auto_validation(enable=False)  # type: ignore[return-value]


def launch_validate(request: HttpRequest) -> ValidLaunch:
    """The checked launch, or LaunchRefused saying which check failed."""
    for field in ("id_token", "state"):
        if not request.POST.get(field):
            raise LaunchRefused(Refusal.MALFORMED, f"no {field} in the POST")
    launch = message_launch(request)
    steps: tuple[tuple[Callable[[], object], Refusal], ...] = (
        (launch.validate_state, Refusal.BAD_STATE),
        (launch.validate_jwt_format, Refusal.MALFORMED),
        (launch.validate_nonce, Refusal.UNKNOWN_NONCE),
        (launch.validate_registration, Refusal.UNKNOWN_PLATFORM),
        (lambda: signature_check(launch), Refusal.BAD_SIGNATURE),
        (launch.validate_deployment, Refusal.UNKNOWN_DEPLOYMENT),
        (launch.validate_message, Refusal.BAD_MESSAGE),
    )
    for step, refusal in steps:
        try:
            step()
        except NoToolKey as exc:
            raise LaunchRefused(Refusal.NO_TOOL_KEY, str(exc)) from exc
        except LtiException as exc:
            raise LaunchRefused(refusal, str(exc)) from exc
    body: dict[str, Any] = dict(launch.get_launch_data())
    platform = platform_find(issuer=str(body["iss"]), client_id=launch.get_client_id())
    if platform is None:  # validate_registration found it a moment ago
        raise LaunchRefused(Refusal.UNKNOWN_PLATFORM, "registration gone")
    claims_check(body, client_id=platform.client_id)
    nonce_use_once(platform, str(body["nonce"]))
    launch.save_launch_data()
    return ValidLaunch(launch=launch, platform=platform, body=body)


def signature_check(launch: DjangoMessageLaunch) -> None:
    """pylti1p3's signature step, telling an expired token and unreachable keys apart."""
    try:
        launch.validate_jwt_signature()
    except LtiException as exc:
        cause = exc.__cause__
        if isinstance(cause, jwt.ExpiredSignatureError | jwt.ImmatureSignatureError):
            raise LaunchRefused(Refusal.EXPIRED, str(exc)) from exc
        if str(exc).startswith(("Error during fetch URL", "Invalid response from")):
            raise LaunchRefused(Refusal.KEYS_UNREACHABLE, str(exc)) from exc
        raise


def claims_check(body: dict[str, Any], *, client_id: str) -> None:
    """What LTI 1.3 Core (5.1.2) requires of an id_token beyond what the library checks."""
    for claim in ("exp", "iat"):
        if not isinstance(body.get(claim), int | float):
            raise LaunchRefused(Refusal.BAD_MESSAGE, f"no numeric {claim}")
    aud = body.get("aud")
    if isinstance(aud, list) and len(aud) > 1 and body.get("azp") != client_id:
        raise LaunchRefused(Refusal.BAD_MESSAGE, "aud names several clients and azp is not ours")


# id_tokens live minutes; a nonce older than this cannot come back inside a valid token.
NONCE_MEMORY = timedelta(days=2)


def nonce_use_once(platform: Platform, nonce: str) -> None:
    UsedNonce.objects.filter(used_at__lt=timezone.now() - NONCE_MEMORY).delete()
    try:
        with transaction.atomic():
            UsedNonce.objects.create(platform=platform, nonce=nonce[:255])
    except IntegrityError:
        raise LaunchRefused(Refusal.REPLAYED, f"nonce {nonce[:40]} already used") from None


def login_params(request: HttpRequest) -> Any:
    # Platforms start the login with a GET or a form POST (LTI Core 5.1.1).
    return request.POST if request.method == "POST" else request.GET


def login_platform(request: HttpRequest, *, launch_url: str) -> Platform:
    """The registration a third-party initiated login names, checked before anything is
    stored or a cookie set: its issuer, client id, deployment and target."""
    params = login_params(request)
    issuer, hint = params.get("iss"), params.get("login_hint")
    if not issuer or not hint:
        raise LaunchRefused(Refusal.MALFORMED, "login without iss or login_hint")
    platform = platform_find(issuer=issuer, client_id=params.get("client_id"))
    if platform is None:
        raise LaunchRefused(Refusal.UNKNOWN_PLATFORM, "no registration for this login")
    deployment = params.get("lti_deployment_id")
    if deployment and not platform.deployments.filter(deployment_id=deployment).exists():
        raise LaunchRefused(Refusal.UNKNOWN_DEPLOYMENT, f"login for deployment {deployment!r}")
    target = str(params.get("target_link_uri") or "")
    if origin_of(target) != origin_of(launch_url):
        raise LaunchRefused(Refusal.WRONG_TARGET, f"target_link_uri {target!r}")
    return platform


def login_redirect(request: HttpRequest, *, launch_url: str) -> HttpResponse:
    """The OIDC authentication request to the platform (a redirect), or first pylti1p3's page
    that checks whether the browser keeps cookies inside the LMS's frame."""
    oidc = DjangoOIDCLogin(request, DatabaseToolConf(), launch_data_storage=DatabaseLaunchStorage())
    oidc.enable_check_cookies(
        main_msg=str(_("Your browser blocks this site's cookies inside the LMS page.")),
        click_msg=str(_("Open it in a new window instead.")),
        loading_msg=str(_("Loading…")),
    )
    try:
        return oidc.redirect(launch_url)
    except OIDCException as exc:
        raise LaunchRefused(Refusal.UNKNOWN_PLATFORM, str(exc)) from exc
    except NoToolKey as exc:
        raise LaunchRefused(Refusal.NO_TOOL_KEY, str(exc)) from exc
