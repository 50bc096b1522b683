"""The timed phase, measured again when the machine disturbed it (graders/measure/load.py).

Kept apart from the engine so the decision's flow can be tried with injected figures: a
disturbed phase is timed again after a bounded wait for quiet, and one disturbed twice is
scored as provisional.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from graders.measure import load as machine_load
from graders.measure.companion_times import CompanionTimes
from graders.report.build import TimedFigures
from graders.spec.exercise import ExerciseSpec

if TYPE_CHECKING:
    from graders.grading.phases import Run


class Timer(Protocol):
    """What of graders.grading.phases.Grader this needs."""

    def time_calls(
        self, run: Run, companions: dict[str, Run], remembered: CompanionTimes | None = None
    ) -> TimedFigures: ...

    def wait_for_quiet_bus(self, companions: dict[str, Run]) -> None: ...


def time_fairly(
    timer: Timer,
    spec: ExerciseSpec,
    device: str,
    run: Run,
    companions: dict[str, Run],
    remembered: CompanionTimes | None,
) -> tuple[TimedFigures, machine_load.LoadDecision]:
    """The timed figures to score, and what was seen of the machine and done about it."""
    curve = spec.scoring.curves.get(device)
    measure = curve.measure if curve else None
    timed = timer.time_calls(run, companions, remembered)
    decision = machine_load.decide(timed.load, measure, remeasured=False)
    if decision.action == "remeasure" and spec.scoring.performance_points > 0:
        timer.wait_for_quiet_bus(companions)
        # After a shared bus nothing remembered is reused (graders/grading/phases.py keeps
        # none then either); stalls leave the drift check to judge the remembered medians.
        again = None if decision.signals.bus_busy else remembered
        first_s = run.timings.get("timing_s", 0.0)
        timed = timer.time_calls(run, companions, again)
        # The report's timed phase is both timings.
        run.timings["timing_s"] = run.timings.get("timing_s", 0.0) + first_s
        decision = machine_load.decide(timed.load, measure, remeasured=True)
    return timed, decision
