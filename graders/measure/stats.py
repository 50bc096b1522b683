"""Statistics over per-call times and the adaptive stopping rule."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from graders.spec.exercise import TimingPolicy


@dataclass(frozen=True)
class Summary:
    median_s: float
    iqr_s: float
    cv: float
    runs: int

    @property
    def rel_iqr(self) -> float:
        return self.iqr_s / self.median_s if self.median_s > 0 else float("inf")


def summarize(times_s: list[float]) -> Summary:
    if not times_s:
        raise ValueError("no runs")
    ordered = sorted(times_s)
    median = statistics.median(ordered)
    if len(ordered) >= 4:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1, q3 = ordered[0], ordered[-1]
    mean = statistics.fmean(ordered)
    cv = statistics.pstdev(ordered) / mean if mean > 0 and len(ordered) > 1 else 0.0
    return Summary(median, q3 - q1, cv, len(ordered))


def should_stop(
    times_s: list[float], policy: TimingPolicy, spent_s: float, budget_s: float
) -> bool:
    """Stop once the median is known well enough, at max_runs, or when the budget is nearly spent.

    ``budget_s`` is the phase's hard limit; we stop early at 80% of it (keeping the
    runs so far) so that a slow-but-finishing submission is measured, not timed out.
    """
    return at_cap(times_s, policy, spent_s, budget_s) or pinned(times_s, policy)


def at_cap(times_s: list[float], policy: TimingPolicy, spent_s: float, budget_s: float) -> bool:
    """No more runs: max_runs reached, or another two would pass 80% of the budget."""
    runs = len(times_s)
    if runs >= policy.max_runs:
        return True
    return bool(runs) and spent_s + 2 * max(times_s[-1], 1e-3) >= 0.8 * budget_s


def pinned(values: list[float], policy: TimingPolicy) -> bool:
    """At least min_runs values, whose median is known to the policy's target error."""
    return len(values) >= policy.min_runs and median_rel_error(values) <= policy.target_median_error


def median_rel_error(times_s: list[float]) -> float:
    """Relative standard error of the median, estimated robustly from the IQR.

    For near-normal data sigma ~ IQR / 1.349 and se(median) ~ 1.2533 sigma / sqrt(n).
    Stopping on this (rather than on the IQR itself) means a noisier machine takes
    more runs to pin the median down instead of never meeting a fixed spread target.
    """
    summary = summarize(times_s)
    return 1.2533 * summary.rel_iqr / 1.349 / math.sqrt(summary.runs)
