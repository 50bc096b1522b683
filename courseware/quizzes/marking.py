"""Is an answer right? Tolerances for numbers and exact sets for choices.

One rule holds for every numeric question, whatever its tolerance: an answer equal to the exact
value rounded to `digits` significant figures (2 unless the question asks for more, and says so
in its text) is right. The chapter rounds to two figures, so a student who does the same must
never be refused because a relative tolerance happens to be narrower than half a unit in the
second figure (1.25 FLOP/B typed as 1.3 is 4 % off, outside a 3 % tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

DEFAULT_DIGITS = 2


def round_significant(value: float, digits: int) -> float:
    """`value` rounded to `digits` significant figures, halves away from zero, as taught in
    school (1.25 -> 1.3, 2.5 -> 3), not the binary round-half-even of format(): format(1.25,
    ".2g") gives "1.2". The value is first cut to 12 figures so that float noise such as
    1.2499999999999998 for an exact 1.25 rounds the way the exact value does."""
    if value == 0 or not math.isfinite(value):
        return value
    exact = Decimal(format(value, ".12g"))
    exponent = exact.adjusted() - digits + 1
    return float(exact.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class Tolerance:
    """Accept |x - a| <= max(abs_tol, rel_tol * |a|), or, with sig_figs, half a unit in the
    last significant figure of the answer; and always the answer rounded to `digits`
    significant figures."""

    rel_tol: float = 0.0
    abs_tol: float = 0.0
    sig_figs: int | None = None
    digits: int = DEFAULT_DIGITS

    def width(self, answer: float) -> float:
        if self.sig_figs is not None:
            if answer == 0:
                return 0.5 * 10.0 ** (-self.sig_figs)
            exponent = math.floor(math.log10(abs(answer))) - self.sig_figs + 1
            return 0.5 * 10.0**exponent
        return max(self.abs_tol, self.rel_tol * abs(answer))

    def within(self, value: float, answer: float) -> bool:
        """Inside the question's own tolerance band."""
        # The tiny relative slack absorbs float noise such as 0.1 + 0.2 != 0.3.
        return abs(value - answer) <= self.width(answer) * (1 + 1e-9) + 1e-12 * abs(answer)

    def rounded(self, value: float, answer: float) -> bool:
        """`value` is the answer rounded to `digits` significant figures (up to float noise
        from reading the student's decimal text and converting its unit)."""
        target = round_significant(answer, self.digits)
        return abs(value - target) <= 1e-9 * max(abs(target), abs(answer))

    def accepts(self, value: float, answer: float) -> bool:
        return self.within(value, answer) or self.rounded(value, answer)

    def describe(self) -> str:
        rounding = f"or {self.digits} significant figures"
        if self.sig_figs is not None:
            return f"{self.sig_figs} significant figures"
        parts = []
        if self.rel_tol:
            parts.append(f"±{self.rel_tol * 100:g}%")
        if self.abs_tol:
            parts.append(f"±{self.abs_tol:g}")
        return " or ".join(parts) + f" {rounding}" if parts else f"exact {rounding}"


def choices_correct(chosen: set[str], correct: set[str]) -> bool:
    """All or nothing: the chosen set must be exactly the correct set."""
    return chosen == correct
