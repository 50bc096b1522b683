"""Figures in the units a person reads: "20.4 ms", "16.8 GB/s", "61 %", "3.2×", "8.39 MB".

Three significant digits everywhere: a timing's noise is larger than the fourth digit, and a
student compares figures by their first two. Numbers go through Django's number_format, so the
decimal separator follows the active language.
"""

from __future__ import annotations

import math

from django.utils.formats import number_format
from django.utils.translation import gettext as _

_SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def significant(value: float, digits: int = 3) -> str:
    """``value`` rounded to ``digits`` significant digits, written without an exponent."""
    if value == 0 or not math.isfinite(value):
        return number_format(value, 0) if value == 0 else str(value)
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    rounded = round(value, places)
    # 9.996 rounds up to 10.00: one digit fewer after the point keeps three significant ones.
    if rounded and math.floor(math.log10(abs(rounded))) > math.floor(math.log10(abs(value))):
        places = max(0, places - 1)
    return number_format(rounded, places)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for scale, unit in _TIME_UNITS:
        if abs(seconds) >= scale:
            return f"{significant(seconds / scale)} {unit}"
    return f"{significant(seconds / 1e-9)} ns" if seconds else "0 s"


def si(value: float | None, unit: str) -> str:
    """562031167.9, "FLOP/s" → "562 MFLOP/s"."""
    if value is None:
        return "—"
    for scale, prefix in _SI_PREFIXES:
        if abs(value) >= scale:
            return f"{significant(value / scale)} {prefix}{unit}"
    return f"{significant(value)} {unit}"


def data_size(nbytes: float | None) -> str:
    """Bytes with a decimal prefix, like the GB/s beside them (8388608 → "8.39 MB")."""
    return si(nbytes, "B")


def bandwidth(gbps: float | None) -> str:
    if gbps is None:
        return "—"
    return f"{significant(gbps)} GB/s"


def percent(fraction: float | None) -> str:
    """0.605 → "61 %"; small fractions keep a digit after the point (0.0102 → "1.0 %")."""
    if fraction is None:
        return "—"
    value = fraction * 100
    places = 0 if abs(value) >= 10 else 1
    # Translators: a percentage; Chinese writes it without the space ("61%").
    return _("%(value)s %%") % {"value": number_format(round(value, places), places)}


def ratio(value: float | None) -> str:
    """A speed-up: 3.2034 → "3.2×", 1.71 → "1.71×"."""
    if value is None:
        return "—"
    text = significant(value)
    # A trailing zero after the point says nothing in a ratio ("3.20×" reads as "3.2×").
    if "." in text or "," in text:
        text = text.rstrip("0").rstrip(".,")
    return f"{text}×"


def intensity(flop_per_byte: float | None) -> str:
    if flop_per_byte is None:
        return "—"
    return f"{significant(flop_per_byte)} FLOP/B"


def points(value: float | None) -> str:
    """A score: at most three decimals, trailing zeros dropped (8.705, 6, 4.5)."""
    if value is None:
        return "—"
    text = number_format(round(value, 3), 3)
    if "." in text or "," in text:
        text = text.rstrip("0").rstrip(".,")
    return text
