"""The report page's line for a submission that ran an operator its exercise forbids.

The engine writes its message in English (graders/grading/forbidden_ops.py); the page says
the same from the report's ``forbidden`` field in the reader's language.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _


def forbidden_message(report: dict[str, Any] | None) -> str | None:
    """Which operator ran, which rule it breaks and what it cost; None when none did."""
    found = (report or {}).get("forbidden")
    if not isinstance(found, dict) or not found.get("operators") or not found.get("rules"):
        return None
    return _(
        "Your result is correct, so the correctness points count, but your code ran "
        "%(operators)s, the library's own %(rule)s, which this exercise asks you to write "
        "yourself. It earns no performance points: write %(rule)s from simpler operations "
        "and resubmit."
    ) % {
        "operators": ", ".join(str(name) for name in found["operators"]),
        "rule": ", ".join(str(rule) for rule in found["rules"]),
    }
