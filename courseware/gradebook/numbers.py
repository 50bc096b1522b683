"""Scores written for people and for other gradebooks.

Scores are stored with three decimals (a late penalty of 10% on 5.7 gives 5.130), but nobody
grades to a thousandth: both the page and the export round to two decimals, half up, and drop
the zeros that carry no information (5.700 → 5.7, 9.375 → 9.38, 10.000 → 10).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.utils import formats

HUNDREDTH = Decimal("0.01")


def rounded(value: Decimal) -> tuple[Decimal, int]:
    """The value to the hundredth, and how many of its two decimals are worth showing."""
    exact = value.quantize(HUNDREDTH, rounding=ROUND_HALF_UP)
    if exact == exact.to_integral_value():
        return exact, 0
    if exact * 10 == (exact * 10).to_integral_value():
        return exact, 1
    return exact, 2


def score_for_people(value: Decimal | None, *, empty: str = "—") -> str:
    """In the current language's number format (its decimal separator), for the page."""
    if value is None:
        return empty
    exact, places = rounded(value)
    return formats.number_format(exact, decimal_pos=places, use_l10n=True)


def score_for_export(value: Decimal | None) -> str:
    """Always with a dot and no thousands separator, whatever the language: a CSV field that
    every importer reads as a number. Empty for no score (not a 0: nothing was handed in)."""
    if value is None:
        return ""
    exact, places = rounded(value)
    return f"{exact:.{places}f}"
