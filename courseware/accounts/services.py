"""Writes for accounts: API tokens and the demo people."""

from __future__ import annotations

from django.contrib.auth.models import User

from courseware.accounts.models import ApiToken


def token_issue(*, user: User) -> ApiToken:
    """Return the user's token, making one the first time."""
    token, _created = ApiToken.objects.get_or_create(user=user)
    return token
