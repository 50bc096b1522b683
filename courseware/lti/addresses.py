"""The tool's own addresses, as the LMS must be told them (and as the tool checks them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse


def tool_url(request: HttpRequest, name: str) -> str:
    """An absolute URL of this site. LTI_TOOL_BASE_URL, when set, wins over the request's host
    (behind a proxy that does not pass the original host and scheme on)."""
    base = str(getattr(settings, "LTI_TOOL_BASE_URL", "") or "").rstrip("/")
    path = reverse(name)
    return base + path if base else request.build_absolute_uri(path)


@dataclass(frozen=True)
class ToolAddresses:
    """What an LMS administrator types into the LMS when registering the tool."""

    login: str  # OIDC login initiation URL
    launch: str  # redirect URI / target link URI, also for deep linking requests
    jwks: str  # the tool's public keyset URL


def tool_addresses(request: HttpRequest) -> ToolAddresses:
    return ToolAddresses(
        login=tool_url(request, "lti-login"),
        launch=tool_url(request, "lti-launch"),
        jwks=tool_url(request, "lti-jwks"),
    )
