"""Question text and explanations are Markdown written by instructors; HTML in them is escaped."""

import mistune
from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()
_markdown = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])


@register.filter
def quiz_markdown(text: str | None) -> SafeString:
    return mark_safe(_markdown(text or ""))  # mistune escapes raw HTML in the source
