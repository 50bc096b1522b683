"""Is an answer right? Tolerances for numbers and exact sets for choices."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """Accept |x - a| <= max(abs_tol, rel_tol * |a|), or, with sig_figs, half a unit in the
    last significant figure of the answer."""

    rel_tol: float = 0.0
    abs_tol: float = 0.0
    sig_figs: int | None = None

    def width(self, answer: float) -> float:
        if self.sig_figs is not None:
            if answer == 0:
                return 0.5 * 10.0 ** (-self.sig_figs)
            exponent = math.floor(math.log10(abs(answer))) - self.sig_figs + 1
            return 0.5 * 10.0**exponent
        return max(self.abs_tol, self.rel_tol * abs(answer))

    def accepts(self, value: float, answer: float) -> bool:
        # The tiny relative slack absorbs float noise such as 0.1 + 0.2 != 0.3.
        return abs(value - answer) <= self.width(answer) * (1 + 1e-9) + 1e-12 * abs(answer)

    def describe(self) -> str:
        if self.sig_figs is not None:
            return f"{self.sig_figs} significant figures"
        parts = []
        if self.rel_tol:
            parts.append(f"±{self.rel_tol * 100:g}%")
        if self.abs_tol:
            parts.append(f"±{self.abs_tol:g}")
        return " or ".join(parts) or "exact"


def choices_correct(chosen: set[str], correct: set[str]) -> bool:
    """All or nothing: the chosen set must be exactly the correct set."""
    return chosen == correct
