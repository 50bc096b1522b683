"""`{{ score|points }}`: a score as a person reads it, e.g. 2.5, 3.333 or 10.

Scores are stored with three decimals. Django's `floatformat:"-3"` keeps all three as soon as
there is a fraction (2.5 shows as "2.500"), so this filter rounds to the thousandth (the
stored precision, so rows of a breakdown still add up to the total shown) and drops the
zeros that say nothing, in the current language's number format.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.utils import formats

register = template.Library()

THOUSANDTH = Decimal("0.001")


def points_text(value: Decimal | float | int | str | None) -> str:
    if value is None or value == "":
        return ""
    try:
        exact = Decimal(str(value)).quantize(THOUSANDTH, rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return str(value)  # not a number: show it as it is rather than hide it
    exponent = exact.normalize().as_tuple().exponent
    places = max(0, -exponent) if isinstance(exponent, int) else 0
    return formats.number_format(exact, decimal_pos=places, use_l10n=True)


@register.filter
def points(value: Decimal | float | int | str | None) -> str:
    return points_text(value)
