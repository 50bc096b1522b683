"""Markdown written by instructors (prompts, questions, explanations), rendered safely.

HTML in the source is escaped. Chinese text wrapped over several source lines is joined
first: a browser shows a line break inside a paragraph as a space, and a space between two
Chinese characters is a stray one.
"""

from __future__ import annotations

import re

import mistune
from django.utils.safestring import SafeString, mark_safe

_render = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])

# CJK ideographs, kana, hangul and full-width punctuation: text that is written without spaces.
_WIDE = r"\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_ENDS_WIDE = re.compile(f"[{_WIDE}]$")
_STARTS_WIDE = re.compile(f"^[{_WIDE}]")
# A line that opens a block of its own is never joined to the line before it.
_BLOCK_START = re.compile(r"^(#|>|[-*+] |\d+[.)] |\||```|~~~|    |\t)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def join_wide_lines(source: str) -> str:
    """Join a paragraph's wrapped lines where both sides of the break are wide characters,
    leaving code fences, lists, tables and headings as they are."""
    out: list[str] = []
    in_fence = False
    for line in source.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        stripped = line.lstrip()
        previous = out[-1] if out else ""
        if (
            not in_fence
            and out
            and previous.strip()
            and not previous.endswith("  ")  # a Markdown hard break stays
            and _ENDS_WIDE.search(previous.rstrip())
            and _STARTS_WIDE.match(stripped)
            and not _BLOCK_START.match(line)
        ):
            out[-1] = previous.rstrip() + stripped
        else:
            out.append(line)
    return "\n".join(out)


def render_markdown(source: str | None) -> SafeString:
    # mistune escapes raw HTML in the source, so its output is safe to mark as such.
    return mark_safe(str(_render(join_wide_lines(source or ""))))


def without_title(source: str) -> str:
    """Drop a leading level-one heading: the page already shows the title."""
    first, _, rest = source.lstrip().partition("\n")
    return rest if first.startswith("# ") else source
