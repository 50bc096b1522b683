"""A user's own API token: read it, or replace it from the token page."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from courseware.accounts.models import ApiToken


def token_of(*, user: User) -> ApiToken | None:
    """The user's token, or None when they never made one (nothing is created on a read)."""
    return ApiToken.objects.filter(user=user).first()


@transaction.atomic
def token_replace(*, user: User) -> ApiToken:
    """Give the user a new token. The old key stops working at once: a token that leaked
    (pasted in a chat, committed to a repository) is dead the moment the student resets it."""
    ApiToken.objects.filter(user=user).delete()
    return ApiToken.objects.create(user=user)
