"""pylti1p3's launch data storage in the database.

Between the OIDC login and the launch, pylti1p3 keeps the nonce (and the launch's claims, for
deep linking) keyed by a random id in its `lti1p3-session-id` cookie, which it sets
`SameSite=None; Secure` over HTTPS so that the browser sends it inside the LMS's iframe. The
values live here rather than in one process's memory, so any web process can serve the launch.
Over plain HTTP (local development) pylti1p3 keys them without the cookie.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from pylti1p3.launch_data_storage.base import LaunchDataStorage

from courseware.lti.models import LaunchValue


class DatabaseLaunchStorage(LaunchDataStorage[Any]):
    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        row = LaunchValue.objects.filter(key=self._prepare_key(key)).first()
        if row is None or (row.expires_at is not None and row.expires_at < timezone.now()):
            return None
        return row.value

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        now = timezone.now()
        expires = now + timedelta(seconds=exp) if exp else None
        LaunchValue.objects.update_or_create(
            key=self._prepare_key(key), defaults={"value": value, "expires_at": expires}
        )
        # Keep the table small: what expired is of no use to anyone.
        LaunchValue.objects.filter(expires_at__lt=now).delete()

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None
