"""Who is calling the API: a token (`Authorization: Token <key>`) or the browser session."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest

from courseware.accounts.models import ApiToken


class AuthenticatedHttpRequest(HttpRequest):
    """The request a view behind ``login_required`` gets: for type checkers, ``user`` is a
    signed-in User, never AnonymousUser. Annotate such views' ``request`` with it."""

    user: User


class BadCredentials(Exception):
    """An Authorization header was sent but names no valid token."""


def token_from_header(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token" or not key.strip():
        raise BadCredentials("Send the header as 'Authorization: Token <key>'.")
    return key.strip()


def user_for_token(key: str) -> User:
    token = ApiToken.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        raise BadCredentials(
            "This API token is not valid. Get a new one with "
            "`python manage.py issue_token <username>` or from your instructor."
        )
    return token.user


def api_user(request: HttpRequest) -> User | AnonymousUser:
    """The token's user when a token is sent, else the session's (maybe anonymous)."""
    key = token_from_header(request)
    if key is not None:
        return user_for_token(key)
    return request.user
