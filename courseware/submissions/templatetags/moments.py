"""`{{ when|relative }}`: "in 3 days, 4 hours" or "2 hours ago", in the active language."""

from __future__ import annotations

from datetime import datetime

from django import template

from courseware.accounts.timezone import relative_text

register = template.Library()


@register.filter
def relative(when: datetime | None) -> str:
    return relative_text(when) if when is not None else ""
