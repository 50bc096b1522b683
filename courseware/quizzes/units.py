"""Units a numeric answer may carry, and how they convert.

Each unit belongs to one dimension and has a factor to that dimension's base unit (seconds,
bytes, bytes per second, FLOPs, FLOP/s, FLOP per byte, clock cycles, plain ratio). A question
declares the unit its answer is expressed in; a student may write any unit of the same dimension.
Byte prefixes are decimal (1 GB = 1e9 B), as on GPU datasheets; KiB/MiB/GiB are binary.
Chinese spellings are accepted wherever the zh texts use them ("年", "倍", "FLOP/字节"), since a
student copies the unit the question and its explanation show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


@dataclass(frozen=True)
class Unit:
    dimension: str
    factor: float  # multiply a value in this unit by it to get the dimension's base unit


# Names students will understand in a message ("a size", "a time"), in their language.
DIMENSION_NAMES = {
    "time": _("a time (s, ms, us, ns, days, years)"),
    "bytes": _("a size (B, KB, MB, GB, TB)"),
    "bandwidth": _("a bandwidth (GB/s, TB/s)"),
    "flop": _("a count of operations (FLOP, MFLOP, GFLOP)"),
    "flop_rate": _("a compute rate (TFLOP/s, TFLOPS)"),
    "intensity": _("an arithmetic intensity (FLOP/B)"),
    "cycles": _("a number of clock cycles (cycles)"),
    "ratio": _("a ratio (%, x)"),
}

# How the page names a question's declared unit in the student's language. The Chinese labels
# use spellings an answer may carry ("年", "倍", "周期", "FLOP/字节"), so a student may copy
# them; a unit not listed is shown as the quiz file writes it (GB, TFLOP/s read the same).
UNIT_LABELS = {
    "us": _("µs"),
    "s": _("s"),
    "ms": _("ms"),
    "ns": _("ns"),
    "days": _("days"),
    "years": _("years"),
    "cycles": _("cycles"),
    "x": _("× (times)"),
    "FLOP/B": _("FLOP/B"),
    "B": pgettext_lazy("unit", "B"),
}


def unit_label(unit: str) -> str:
    """The declared unit as the page shows it in the student's language."""
    label = UNIT_LABELS.get(unit)
    return str(label) if label is not None else unit


# The unit after a number in an answer ("Answer: 33 微秒"), per language: Chinese where Chinese
# has a word for it, a symbol otherwise. Every spelling here is one `lookup` reads back, so a
# student who copies a shown answer is marked right.
ANSWER_UNITS = {
    "en": {"us": "µs", "x": "×"},
    "zh": {
        "s": "秒",
        "ms": "毫秒",
        "us": "微秒",
        "ns": "纳秒",
        "days": "天",
        "years": "年",
        "B": "字节",
        "cycles": "个周期",
        "x": "倍",
        "FLOP/B": "FLOP/字节",
    },
}


def answer_unit(unit: str, lang: str) -> str:
    """How an answer's unit is written after the number in `lang`."""
    return ANSWER_UNITS.get(lang, {}).get(unit, unit)


# The quiz's year is the Julian one its questions state (365.25 days).
_DAY_S = 24 * 3600.0
_YEAR_S = 365.25 * _DAY_S

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_SMALL = {"": 1.0, "m": 1e-3, "u": 1e-6, "μ": 1e-6, "n": 1e-9}


def _table() -> dict[str, Unit]:
    units: dict[str, Unit] = {}
    for prefix, factor in _SMALL.items():
        units[prefix + "s"] = Unit("time", factor)
    units.update(
        {
            "sec": Unit("time", 1.0),
            "秒": Unit("time", 1.0),
            "毫秒": Unit("time", 1e-3),
            "微秒": Unit("time", 1e-6),
            "纳秒": Unit("time", 1e-9),
            "h": Unit("time", 3600.0),
            "hour": Unit("time", 3600.0),
            "hours": Unit("time", 3600.0),
            "小时": Unit("time", 3600.0),
            "day": Unit("time", _DAY_S),
            "days": Unit("time", _DAY_S),
            "天": Unit("time", _DAY_S),
            "year": Unit("time", _YEAR_S),
            "years": Unit("time", _YEAR_S),
            "yr": Unit("time", _YEAR_S),
            "yrs": Unit("time", _YEAR_S),
            "年": Unit("time", _YEAR_S),
        }
    )
    for word in ("cycle", "cycles", "clk", "周期", "个周期"):
        units[word] = Unit("cycles", 1.0)
    for prefix, factor in {**_DECIMAL, **_BINARY}.items():
        units[prefix + "B"] = Unit("bytes", factor)
        units[prefix + "B/s"] = Unit("bandwidth", factor)
    for word in ("byte", "bytes", "Byte", "Bytes", "字节"):
        units[word] = Unit("bytes", 1.0)
        units[word + "/s"] = Unit("bandwidth", 1.0)
    # "GBps" as network and storage datasheets write it; decimal prefixes only (no "GiBps").
    for prefix, factor in _DECIMAL.items():
        units[prefix + "Bps"] = Unit("bandwidth", factor)
    units["%"] = Unit("ratio", 0.01)
    units["x"] = Unit("ratio", 1.0)
    units["×"] = Unit("ratio", 1.0)
    # "16 倍" (times) is how the zh explanations print a ratio; "13 次" answers "多少次".
    units["倍"] = Unit("ratio", 1.0)
    units["次"] = Unit("ratio", 1.0)
    return units


_UNITS = _table()
# FLOP spellings are matched case-insensitively: "TFLOPS", "tflop/s", "MFLOPs", "flop/byte",
# and "FLOP/字节" as the zh prompts write the intensity.
_FLOP = re.compile(r"^(?P<prefix>[kmgtp]?)flop(?P<s>s?)(?P<per>/s|/b|/byte|/字节)?$", re.IGNORECASE)


def lookup(text: str, *, expected: str | None = None) -> Unit | None:
    """The unit spelled `text`, or None. "FLOPS" is both a count and a rate in common use,
    so the question's own dimension decides between the two."""
    unit = _UNITS.get(text)
    if unit is not None:
        return unit
    match = _FLOP.match(text)
    if match is None:
        return None
    prefix = match["prefix"]
    # "m" in a FLOP count means mega (MFLOP), never milli.
    factor = _DECIMAL[prefix.upper() if prefix not in ("k",) else "k"]
    per = (match["per"] or "").lower()
    if per == "/s":
        return Unit("flop_rate", factor)
    if per in ("/b", "/byte", "/字节"):
        return Unit("intensity", factor)
    if match["s"] and expected == "flop_rate":
        return Unit("flop_rate", factor)
    return Unit("flop", factor)


def declared(text: str) -> Unit:
    """The unit a question declares; KeyError when it is not one we know."""
    unit = lookup(text)
    if unit is None:
        raise KeyError(text)
    return unit
