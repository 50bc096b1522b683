"""How busy the machine was while a submission was timed, and what the grading does about it.

Performance points must depend on the code, not on who else was grading at the time. Three
signals say a timed phase was disturbed:

- **the run queue**: a call whose sandbox waited for its core (graders/sandbox/containment.py,
  ``stalled_between``) is measured again; one that was kept anyway, because the phase's
  patience ran out, is a disturbed figure;
- **the memory bus**: a process streaming memory on another core takes bus bandwidth without
  ever taking the grading's core. The canary (graders/harness/bus_canary.py) times the peak
  calibration's own triad in a trusted companion's sandbox before and after the timed phase
  (after it only, for a relative curve, which the bus cannot move: there it informs the report);
  below ``BUS_BUSY_BELOW`` of the calibrated bandwidth (or of the best the canary read on this
  bench, when that is higher: a calibration taken in a busy minute reads low), the bus was
  shared;
- **the spread**: what the curve scores missed the exercise's precision target while either of
  the above was seen in the figures (a shared bus, or a stalled call scored; a stalled call
  measured again left nothing there). A curve of absolute speed scores the submission's
  median; a relative curve scores its speed over a companion's, round by round
  (graders/grading/phases.py keeps timing until that ratio is known, not the median), so only
  the ratio's spread counts there: a host whose bandwidth wanders slows both contenders of a
  round alike.

What is done (:func:`decide`):

- nothing disturbed: the figures are scored;
- the exercise scores a ratio to the reference or naive version, whose calls were interleaved
  with the submission's, round by round, on the same inputs, and no stalled call was scored:
  a shared bus slows both alike and the ratio cancels it, so the figures are scored as they
  are, provided the ratio is known (:func:`ratio_known`; a load that comes and goes within a
  round does not cancel). The anchor's median is never reused from another grading, and
  after a shared bus no companion's is (graders/grading/phases.py);
- otherwise the timed phase is measured again, once the canary reads a quiet bus or after
  a short wait (bounded patience); if that one is disturbed too, its points are
  **provisional**: the report says so, and the course site grades the submission again
  when the worker is quiet (courseware/submissions/provisional.py).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

from graders.measure import stats
from graders.report.types import LoadReport
from graders.spec.exercise import Curve, TimingPolicy

# Below this share of the calibrated bandwidth, the canary says the bus was shared. On a quiet
# machine the canary (best of CANARY_RUNS) reads 0.93-1.0 of the calibration (best of 8); a
# memory-bound loop on the other core of this project's 2-core machines brings it to ~0.75.
BUS_BUSY_BELOW = 0.88
CANARY_RUNS = 2
# How long a grading may wait for a quiet bus before measuring again, polling the canary.
PATIENCE_S = 6.0
POLL_S = 0.5
# The relative measures, and the companion each divides by: its calls are paired with the
# submission's round by round.
RELATIVE_MEASURES = {"relative_to_reference": "reference", "speedup_vs_naive": "naive"}
# A ratio of two times carries both times' noise: about sqrt(2) more than either, so it is held
# to twice the exercise's target_median_error.
RATIO_ERROR_FACTOR = 2.0
# Fewer paired rounds than this say nothing of how steady the ratio is.
MIN_PAIRED_ROUNDS = 3
# A ratio is known well enough, however it spreads, once this many standard errors either
# side of its median fall on one flat part of the curve (past full_at, or short of
# zero_at): more rounds could not change the points. Three, as the rounds' noise is not
# normal on a shared host.
SETTLED_STANDARD_ERRORS = 3.0

Action = Literal["none", "remeasure", "remeasured", "ratio", "provisional"]


def ratio_known(
    ratios: list[float], policy: TimingPolicy, curve: Curve | None, at_least: int
) -> bool:
    """Whether the rounds' ratios (the anchor's time over the submission's) are known well
    enough to score: at least ``at_least`` of them, whose median is pinned to
    RATIO_ERROR_FACTOR x the exercise's target, or whose points more rounds could not change
    (SETTLED_STANDARD_ERRORS either side on one flat part of ``curve``)."""
    if len(ratios) < max(at_least, 1):
        return False
    error = stats.median_rel_error(ratios)
    if error <= RATIO_ERROR_FACTOR * policy.target_median_error:
        return True
    median = statistics.median(ratios)
    margin = SETTLED_STANDARD_ERRORS * error * median
    return curve is not None and curve.flat_around(median, margin)


@dataclass(frozen=True)
class Yardstick:
    """The calibrated triad the canary repeats: its size, flush and bandwidth."""

    n: int
    flush_bytes: int
    calibrated_gbps: float

    def share(self, best_s: float) -> float:
        """The canary's bandwidth as a share of the calibrated one (3 x 4 bytes an element)."""
        return round(3 * self.n * 4 / best_s / 1e9 / self.calibrated_gbps, 3)


def yardstick(device: str, peaks: dict[str, Any], n: int, memory_mb: int) -> Yardstick | None:
    """The canary's yardstick on a CPU, or None: a GPU has one grading per device, so no
    neighbour shares its memory; a calibration without a flush size, or a sandbox too small
    to hold the triad's buffers beside its own work (a quarter of its memory at most), has
    none either."""
    gbps, flush = peaks.get("gbps"), peaks.get("flush_bytes")
    if device != "cpu" or not gbps or not flush:
        return None
    if (3 * n * 4 + int(flush)) >> 20 > memory_mb // 4:
        return None
    return Yardstick(n, int(flush), float(gbps))


@dataclass(frozen=True)
class LoadSignals:
    """What one timed phase saw of the machine."""

    bus_shares: tuple[float, ...] = ()  # canary readings; empty when there was no canary
    stalled_retaken: int = 0  # the submission's calls kept off their core, measured again
    stalled_kept: int = 0  # ... and scored anyway, once the phase's patience ran out
    # Companions whose median came from disturbed calls (too few clean ones).
    companions_disturbed: tuple[str, ...] = ()
    precise: bool = True  # the median met the exercise's target_median_error
    # The anchor companion's time over the submission's, round by round, was as steady as
    # that (RATIO_ERROR_FACTOR times the target) over at least MIN_PAIRED_ROUNDS rounds.
    ratio_precise: bool = True

    @property
    def bus_busy(self) -> bool:
        return any(share < BUS_BUSY_BELOW for share in self.bus_shares)

    @property
    def stalls_scored(self) -> bool:
        return self.stalled_kept > 0 or bool(self.companions_disturbed)

    def detected(self, anchor: str | None = None) -> list[str]:
        """Each disturbance seen, in the student's words. ``anchor``: the companion a
        relative curve divides by; the submission's own median's spread is not scored then."""
        found = []
        if self.bus_busy:
            lowest = min(self.bus_shares)
            found.append(
                f"the memory bus was shared: a bandwidth canary reached {lowest:.0%} of this "
                "machine's calibrated bandwidth"
            )
        if self.stalled_kept:
            found.append(
                f"{self.stalled_kept} of your timed calls waited for their core and were "
                "scored anyway"
            )
        if self.companions_disturbed:
            names = " and ".join(f"the {name} version" for name in self.companions_disturbed)
            found.append(f"{names} could only be timed in calls that waited for their core")
        # A stalled call measured again is not load that touched the figures: its time was
        # replaced. Honest code has a few such retakes (0-3 a grading) and, on this project's
        # hosts, an imprecise median or ratio now and then; the two together made one honest
        # grading in five provisional (issue 38, class 4), and a submission that could summon
        # stalls could buy regrades with them. Only load that stayed in the figures counts.
        load_seen = self.bus_busy or self.stalls_scored
        if not self.precise and load_seen and anchor is None:
            found.append("the calls' times spread more than the exercise allows")
        if not self.ratio_precise and load_seen:
            found.append(
                f"your speed relative to the {anchor or 'reference'} version changed from round "
                "to round more than the exercise allows"
            )
        return found


@dataclass(frozen=True)
class LoadDecision:
    action: Action
    signals: LoadSignals
    measured_twice: bool = False
    detected: list[str] = field(default_factory=list)

    @property
    def provisional(self) -> bool:
        # A phase that should have been measured again but could not be is provisional too.
        return self.action in ("provisional", "remeasure")

    def report(self) -> LoadReport:
        return {
            "bus_canary": list(self.signals.bus_shares) or None,
            "stalled_calls_retaken": self.signals.stalled_retaken,
            "stalled_calls_kept": self.signals.stalled_kept,
            "detected": list(self.detected),
            "action": "provisional" if self.action == "remeasure" else self.action,
            "measured_twice": self.measured_twice,
            "provisional": self.provisional,
            "explanation": explanation(self),
        }


def decide(signals: LoadSignals, measure: str | None, *, remeasured: bool) -> LoadDecision:
    """What to do with one timed phase's figures (see the module docstring). ``measure`` is
    the scoring curve's; ``remeasured``: this phase is already the second."""
    anchor = RELATIVE_MEASURES.get(measure or "")
    detected = signals.detected(anchor)
    if not detected:
        action: Action = "remeasured" if remeasured or signals.stalled_retaken else "none"
        return LoadDecision(action, signals, remeasured, detected)
    if anchor and not signals.stalls_scored and signals.ratio_precise:
        return LoadDecision("ratio", signals, remeasured, detected)
    return LoadDecision("provisional" if remeasured else "remeasure", signals, remeasured, detected)


def explanation(decision: LoadDecision) -> str | None:
    """The sentence the report adds for the student, or None when there is nothing to say."""
    seen = "; ".join(decision.detected)
    if decision.action == "ratio":
        return (
            f"The machine was busy while your code was timed ({seen}). Your points come from "
            "your speed relative to the reference, timed in the same rounds on the same inputs, "
            "which the load slows alike: they stand."
        )
    if decision.provisional:
        twice = ", twice" if decision.measured_twice else ""
        return (
            f"The machine was busy while your code was timed{twice} ({seen}), so your "
            "performance points are provisional. Grade it again on a quiet machine; on the "
            "course site that happens by itself, and the new figure replaces this one."
        )
    if decision.action == "remeasured" and decision.measured_twice:
        return (
            "The machine was busy during the first timing of your code, so it was timed again "
            "once it was quiet; these figures are from the second timing."
        )
    return None
