"""Show times in the student's own time zone.

The browser knows its zone (`Intl.DateTimeFormat().resolvedOptions().timeZone`); a small script
(courseware/static/courseware/timezone.js) stores it in the `tz` cookie, and this middleware
activates it for the request, so templates, `localtime` and the refusal messages show deadlines
as the student's clock reads them. A missing or unknown name falls back to settings.TIME_ZONE.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from urllib.parse import unquote

from django.http import HttpRequest, HttpResponse
from django.utils import formats, timezone
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext as _

TIME_ZONE_COOKIE = "tz"
# IANA names are short ("America/Argentina/ComodRivadavia" is among the longest).
MAX_NAME_LENGTH = 64


@lru_cache(maxsize=256)
def zone_named(name: str) -> zoneinfo.ZoneInfo | None:
    """The zone an IANA name stands for, or None when it is not one (the cookie is the
    browser's to write, so it may hold anything: a path, an empty string, a stale name)."""
    if not name or len(name) > MAX_NAME_LENGTH:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def local_datetime_text(when: datetime) -> str:
    """`when` as the student reads it in a message: the active language's date format, in the
    active time zone, with the zone's name (an API client without the cookie reads UTC)."""
    local = timezone.localtime(when)
    text = formats.date_format(local, "DATETIME_FORMAT")
    return f"{text} ({timezone.get_current_timezone_name()})"


def relative_text(when: datetime, now: datetime | None = None) -> str:
    """ "in 3 days, 4 hours" or "2 hours ago", in the active language."""
    now = now or timezone.now()
    if when >= now:
        return _("in %(time)s") % {"time": timeuntil(when, now, depth=2)}
    return _("%(time)s ago") % {"time": timesince(when, now, depth=2)}


class TimeZoneMiddleware:
    """Activate the time zone named by the `tz` cookie for this request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # unquote: a script that URL-encodes the cookie writes "Asia%2FShanghai".
        zone = zone_named(unquote(request.COOKIES.get(TIME_ZONE_COOKIE, "")))
        if zone is not None:
            timezone.activate(zone)
        else:
            timezone.deactivate()  # settings.TIME_ZONE
        try:
            return self.get_response(request)
        finally:
            # The thread serves other requests next; none of them may inherit this zone.
            timezone.deactivate()
