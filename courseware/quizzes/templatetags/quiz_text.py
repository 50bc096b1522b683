"""Question text and explanations are Markdown written by instructors; HTML in them is escaped."""

import re

from django import template
from django.utils.safestring import SafeString, mark_safe

from courseware.markdown import render_markdown
from courseware.quizzes.units import unit_label

register = template.Library()

# One paragraph and nothing else: an option's text, shown inside a label or a table cell.
_ONE_PARAGRAPH = re.compile(r"^<p>(?P<inner>(?:(?!</?p>).)*)</p>\s*$", re.DOTALL)


@register.filter
def quiz_markdown(text: str | None) -> SafeString:
    return render_markdown(text)


@register.filter
def quiz_markdown_inline(text: str | None) -> SafeString:
    """Markdown for a short text inside a line (an option): without the paragraph around it,
    which would break the line inside a label."""
    html = str(render_markdown(text))
    match = _ONE_PARAGRAPH.match(html)
    # The inner part comes from render_markdown, which already escaped the instructor's HTML.
    return mark_safe(match["inner"]) if match else render_markdown(text)


@register.filter
def quiz_unit(unit: str | None) -> str:
    """A question's unit as the page names it in the current language."""
    return unit_label(unit) if unit else ""


@register.filter
def choice_letter(index: int) -> str:
    """A, B, C… for the options in the order the student sees them (0-based index)."""
    return chr(ord("A") + int(index))
