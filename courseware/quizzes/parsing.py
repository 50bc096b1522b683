"""Read a numeric answer as a student typed it.

Accepted: `1.25`, `-3`, `.5`, `1.3e-5`, `1.3 x 10^-5`, `1,024` (commas only between groups of
three digits), and, where the question declares a unit, a unit of the same dimension after the
number (`33 us`, `33 µs`, `2.039 TB/s`, `2039 GB/s`, `312 TFLOPS`). Anything else raises
AnswerInvalid with a message that says how to write it; the caller must not count it as an
attempt.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from django.utils.translation import gettext as _

from courseware.quizzes import units

MAX_ANSWER_LENGTH = 100

_NUMBER = re.compile(
    r"""^(?P<mantissa>[+-]?(?:[0-9][0-9,]*(?:\.[0-9]*)?|\.[0-9]+))
        (?:\s*(?:[eE](?P<exp>[+-]?[0-9]+)|(?:\*|x|X|×|·)\s*10\s*(?:\^|\*\*)\s*(?P<exp10>[+-]?[0-9]+)))?
        \s*(?P<unit>.*?)\s*$""",
    re.VERBOSE,
)
_THOUSANDS = re.compile(r"^[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?$")


class AnswerInvalid(ValueError):
    """The answer could not be read; `message` tells the student how to write it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ParsedNumber:
    value: float  # in the question's declared unit (or plain, when it declares none)
    unit_written: str


def _normalise(raw: str) -> str:
    # NFKC folds full-width digits and the micro sign (µ) into ASCII digits and Greek mu (μ).
    text = unicodedata.normalize("NFKC", raw).strip()
    return text.replace("−", "-").replace("，", ",").replace("。", ".")


def _unreadable(raw: str, example: str) -> AnswerInvalid:
    return AnswerInvalid(
        _("'%(answer)s' is not a number we can read. Type it like this: %(example)s.")
        % {"answer": raw.strip()[:40], "example": example}
    )


def _check_length(text: str, *, unit: str | None, example: str) -> None:
    if not text:
        raise AnswerInvalid(
            _("The answer is empty. Type a number, %(example)s.") % {"example": example}
        )
    if len(text) > MAX_ANSWER_LENGTH:
        raise AnswerInvalid(
            _("The answer is longer than %(n)d characters. Type just the number%(unit)s.")
            % {"n": MAX_ANSWER_LENGTH, "unit": _(" and its unit") if unit else ""}
        )


def _value(match: re.Match[str], raw: str, example: str) -> float:
    """The number before any unit: mantissa (with its thousands commas) times the exponent."""
    mantissa = match["mantissa"]
    if "," in mantissa:
        if not _THOUSANDS.match(mantissa):
            raise AnswerInvalid(
                _(
                    "'%(answer)s': use a decimal point, not a comma (write 1.5, not 1,5). "
                    "Commas may only separate groups of three digits, as in 1,024."
                )
                % {"answer": raw.strip()[:40]}
            )
        mantissa = mantissa.replace(",", "")
    exponent = int(match["exp"] or match["exp10"] or 0)
    if abs(exponent) > 300:
        raise AnswerInvalid(_("The exponent %(e)d is out of range.") % {"e": exponent})
    try:
        value = float(mantissa) * 10.0**exponent
    except (ValueError, OverflowError):
        raise _unreadable(raw, example) from None
    if not math.isfinite(value):
        raise AnswerInvalid(_("The answer must be a finite number."))
    return value


def _in_declared_unit(value: float, written: str, *, unit: str | None, example: str) -> float:
    """`value` `written` (a unit the student typed) converted to the question's `unit`."""
    if unit is None:
        raise AnswerInvalid(
            _("This question takes a plain number without a unit; remove '%(unit)s'.")
            % {"unit": written[:20]}
        )
    target = units.declared(unit)
    found = units.lookup(written, expected=target.dimension)
    if found is None:
        raise AnswerInvalid(
            _(
                "'%(unit)s' is not a unit we know. Write the number in %(declared)s, "
                "or with another unit of the same kind, %(example)s."
            )
            % {"unit": written[:20], "declared": unit, "example": example}
        )
    if found.dimension != target.dimension:
        raise AnswerInvalid(
            _("This answer is %(want)s, but '%(unit)s' is %(got)s. Give it in %(declared)s.")
            % {
                "want": units.DIMENSION_NAMES[target.dimension],
                "unit": written[:20],
                "got": units.DIMENSION_NAMES[found.dimension],
                "declared": unit,
            }
        )
    return value * found.factor / target.factor


def parse_number(raw: str, *, unit: str | None) -> ParsedNumber:
    """Read `raw` as a number in `unit` (the question's declared unit, or None)."""
    if not isinstance(raw, str):
        raise AnswerInvalid(_('Send the answer as text, e.g. "1.25" or "33 us".'))
    text = _normalise(raw)
    example = _("e.g. 33 us or 2.039 TB/s") if unit else _("e.g. 1.25 or 1.3e-5")
    _check_length(text, unit=unit, example=example)
    match = _NUMBER.match(text)
    if match is None:
        raise _unreadable(raw, example)
    value = _value(match, raw, example)
    written = match["unit"]
    if written and written[0] in "0123456789.,+-":  # "1.2.3", "1 2": not a unit, a bad number
        raise _unreadable(raw, example)
    if not written:
        return ParsedNumber(value, "")
    return ParsedNumber(_in_declared_unit(value, written, unit=unit, example=example), written)
