"""Question text and explanations are Markdown written by instructors; HTML in them is escaped."""

from django import template
from django.utils.safestring import SafeString

from courseware.markdown import render_markdown

register = template.Library()


@register.filter
def quiz_markdown(text: str | None) -> SafeString:
    return render_markdown(text)
