"""API tokens: one per user, sent as `Authorization: Token <key>`."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def new_token_key() -> str:
    return secrets.token_hex(20)


class ApiToken(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token"
    )
    key = models.CharField(_("key"), max_length=64, unique=True, default=new_token_key)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("API token")

    def __str__(self) -> str:
        return f"token of {self.user}"
