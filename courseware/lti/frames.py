"""Working inside the LMS's iframe.

Pages reached through an LTI launch are shown in a frame of the LMS's page. Django forbids
framing (X-Frame-Options: DENY) and sends its cookies SameSite=Lax, which a browser withholds
from a page framed by another site, so the session would be lost at the first click. For a
session begun by a launch, LtiFrameMiddleware therefore replaces X-Frame-Options with a
Content-Security-Policy `frame-ancestors` naming only the LMS that launched it, and (over HTTPS,
which SameSite=None requires) sends the session and CSRF cookies `SameSite=None; Secure`.
Everyone else keeps Django's defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase

from courseware.lti.models import Platform

logger = logging.getLogger(__name__)

SESSION_KEY = "lti_frame_origins"
R = TypeVar("R", bound=HttpResponseBase)
ANYWHERE = "*"  # only for pages that show nothing but a refusal


def origin_of(url: str) -> str | None:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def platform_frame_origins(platform: Platform) -> list[str]:
    """The LMS's own web addresses as registered, else those of its issuer and login URL."""
    listed = platform.frame_origins.split() or [platform.issuer, platform.auth_login_url]
    origins = [o for o in (origin_of(url) for url in listed) if o]
    return sorted(set(origins))


def frame_for(response: R, origins: list[str]) -> R:
    """Let these origins (only) frame this one response."""
    response.lti_frame_origins = origins  # type: ignore[attr-defined]
    return response


def session_frame_origins(request: HttpRequest) -> list[str] | None:
    session = getattr(request, "session", None)
    if session is None:
        return None
    try:
        origins = session.get(SESSION_KEY)
    except DatabaseError:  # the outage middleware answers for the database; not our concern
        return None
    return [str(o) for o in origins] if isinstance(origins, list) else None


def allow_framing(response: HttpResponseBase, origins: list[str]) -> None:
    if "X-Frame-Options" in response:
        del response["X-Frame-Options"]
    sources = ANYWHERE if ANYWHERE in origins else " ".join(["'self'", *origins])
    directive = f"frame-ancestors {sources}"
    existing = response.get("Content-Security-Policy")
    response["Content-Security-Policy"] = f"{existing}; {directive}" if existing else directive


def cross_site_cookies(response: HttpResponseBase) -> None:
    for name in (settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME):
        morsel = response.cookies.get(name)
        if morsel is not None:
            morsel["samesite"] = "None"
            morsel["secure"] = True


class LtiFrameMiddleware:
    """Listed before the session, CSRF and clickjacking middleware, so that on the way out it
    sees the cookies and the X-Frame-Options header they set."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        origins = getattr(response, "lti_frame_origins", None)
        if origins is None:
            origins = session_frame_origins(request)
        if origins is None:
            return response
        allow_framing(response, origins)
        if request.is_secure():
            cross_site_cookies(response)
        return response
