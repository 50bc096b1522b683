"""Figures as a person reads them ("20.4 ms", "16.8 GB/s", "61 %"), three significant digits
like the report page (courseware.submissions.readable_units, which needs Django; this does not).
Also how wide text is on a terminal, for tables with Chinese titles."""

from __future__ import annotations

import math
import unicodedata
from datetime import datetime

_SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
NONE = "—"


def number(value: object) -> float | None:
    """A report figure as a float, or None (reports write NaN and infinity as text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def significant(value: float, digits: int = 3) -> str:
    if value == 0:
        return "0"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    rounded = round(value, places)
    # 9.996 rounds up to 10.00: one digit fewer after the point keeps three significant ones.
    if rounded and math.floor(math.log10(abs(rounded))) > math.floor(math.log10(abs(value))):
        places = max(0, places - 1)
    return f"{rounded:.{places}f}"


def duration(seconds: object) -> str:
    value = number(seconds)
    if value is None:
        return NONE
    for scale, unit in _TIME_UNITS:
        if abs(value) >= scale:
            return f"{significant(value / scale)} {unit}"
    return f"{significant(value / 1e-9)} ns" if value else "0 s"


def si(value: object, unit: str) -> str:
    figure = number(value)
    if figure is None:
        return NONE
    for scale, prefix in _SI_PREFIXES:
        if abs(figure) >= scale:
            return f"{significant(figure / scale)} {prefix}{unit}"
    return f"{significant(figure)} {unit}"


def bandwidth(gbps: object) -> str:
    value = number(gbps)
    return NONE if value is None else f"{significant(value)} GB/s"


def percent(fraction: object) -> str:
    value = number(fraction)
    if value is None:
        return NONE
    value *= 100
    return f"{value:.0f} %" if abs(value) >= 10 else f"{value:.1f} %"


def ratio(value: object) -> str:
    figure = number(value)
    if figure is None:
        return NONE
    text = significant(figure)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}×"


def points(value: object) -> str:
    """A score: at most three decimals, trailing zeros dropped (8.705, 6, 4.5)."""
    figure = number(value)
    if figure is None:
        return NONE
    text = f"{figure:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def wait(seconds: object) -> str:
    """An estimated wait: "about 40 s", "about 3 min"."""
    value = number(seconds)
    if value is None or value < 0:
        return ""
    if value < 60:
        return f"about {max(1, round(value))} s"
    return f"about {round(value / 60)} min"


def clock(seconds: float) -> str:
    """Elapsed time as a stopwatch shows it: 0:07, 2:13, 1:02:03."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def local_time(iso: object) -> str:
    """An API timestamp (ISO 8601, UTC) in this machine's time zone: "2026-11-08 23:59 CET"."""
    if not isinstance(iso, str) or not iso:
        return NONE
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return moment.astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()


def width(text: str) -> int:
    """Columns the text takes on a terminal: CJK characters take two."""
    return sum(
        0
        if unicodedata.combining(ch)
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def clip(text: str, columns: int) -> str:
    """The text cut to fit in `columns` terminal columns."""
    if width(text) <= columns:
        return text
    kept, used = [], 0
    for ch in text:
        used += width(ch)
        if used > max(0, columns - 1):
            break
        kept.append(ch)
    return "".join(kept) + "…"


def pad(text: str, columns: int, *, right: bool = False) -> str:
    gap = " " * max(0, columns - width(text))
    return gap + text if right else text + gap


def table(header: list[str], rows: list[list[str]], *, right: set[int] | None = None) -> str:
    """Columns aligned by display width; `right` holds the indexes of right-aligned columns."""
    right = right or set()
    widths = [max(width(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [pad(cell, widths[i], right=i in right) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
