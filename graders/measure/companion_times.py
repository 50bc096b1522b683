"""Reusing the reference's and the naive version's times between gradings, honestly.

Timing both companions alongside every grading tripled the timed calls. On one slot, for one
exercise version and one calibration (a warm bench, graders/grading/warm.py), their medians change
only when the machine does, so a grading may reuse them under three rules:

- **interleaved re-measurement**: every grading still times each companion ``CHECK_CALLS``
  times, interleaved with the submission's calls on the same inputs as before;
- **drift check**: when the median of those calls is further from the remembered median than
  ``DRIFT`` (5%) or than twice the standard error of a median of that many calls (estimated
  from the spread of the full measurement), the grading measures that companion in full,
  as if nothing were remembered, and remembers the new median;
- **expiry**: a median older than ``MAX_AGE_S`` or reused ``MAX_REUSES`` times is measured in
  full again.

The reused median is the remembered one, which was measured in full; the report says which
companions were reused and how old their figures were. ``bench/companion_reuse.py`` measures
what this costs in accuracy against timing them in full every time.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

CHECK_CALLS = 3
DRIFT = 0.05
MAX_AGE_S = 600.0
MAX_REUSES = 20


@dataclass
class Remembered:
    median_s: float
    measured_at: float
    rel_iqr: float = 0.0  # the spread of the calls it was measured from (IQR / median)
    reuses: int = 0


class CompanionTimes:
    """The companions' remembered medians on one bench."""

    def __init__(self) -> None:
        self.known: dict[str, Remembered] = {}

    def reusable(self, name: str, now: float | None = None) -> Remembered | None:
        """The remembered median, if it may still be reused (checks come on top)."""
        known = self.known.get(name)
        now = time.monotonic() if now is None else now
        if known is None or now - known.measured_at > MAX_AGE_S or known.reuses >= MAX_REUSES:
            return None
        return known

    @staticmethod
    def drifted(known: Remembered, checks: list[float]) -> bool:
        """Whether this grading's check calls disagree with the remembered median."""
        if not checks:
            return True
        fresh = statistics.median(checks)
        # sigma ~ IQR / 1.349 and se(median) ~ 1.2533 sigma / sqrt(n), as in measure.py: on a
        # noisier machine three calls say less, and a 5% bar alone would measure every time.
        noise = 2 * 1.2533 * known.rel_iqr / 1.349 / math.sqrt(len(checks))
        return abs(fresh - known.median_s) > max(DRIFT, noise) * known.median_s

    def reused(self, name: str) -> None:
        self.known[name].reuses += 1

    def remember(
        self, name: str, median_s: float, rel_iqr: float = 0.0, now: float | None = None
    ) -> None:
        self.known[name] = Remembered(median_s, time.monotonic() if now is None else now, rel_iqr)
