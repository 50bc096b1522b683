"""Build a code exercise's report (types in report_types.py, schema in report.schema.json)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from graders.measure.load import LoadDecision, LoadSignals
from graders.measure.stats import Summary
from graders.report import roofline
from graders.report.ladder import build as build_ladder
from graders.report.types import (
    VERDICTS,
    Correctness,
    Device,
    ForbiddenUse,
    HardwareBytes,
    Peak,
    Performance,
    ProfileRow,
    Report,
    SandboxInfo,
    Timings,
    Verdict,
)
from graders.spec.exercise import ExerciseSpec

__all__ = ["VERDICTS", "ReportBuilder", "TimedFigures", "grader_failure"]

_STDERR_TAIL = 4000
_STDOUT_TAIL = 2000


@dataclass(frozen=True)
class TimedFigures:
    """What the timed phase measured: the submission's calls, and its companions' if any."""

    summary: Summary
    sizes: dict[str, int]
    claimed_s: float
    observed_s: float
    disturbed_runs: int
    reference_median_s: float | None = None
    naive_median_s: float | None = None
    relative_to_reference: float | None = None
    speedup_vs_naive: float | None = None
    companions_reused: dict[str, float] | None = None  # name -> age of the reused median (s)
    calls_per_window: int = 1
    empty_window_s: float | None = None
    empty_window_spread_s: float | None = None
    load: LoadSignals = field(default_factory=LoadSignals)  # what it saw of a busy machine

    def measure(self, name: str) -> float | None:
        """The relative figure a scoring curve names, or None when it was not measured."""
        if name == "relative_to_reference":
            return self.relative_to_reference
        if name == "speedup_vs_naive":
            return self.speedup_vs_naive
        return None


class ReportBuilder:
    def __init__(self, spec: ExerciseSpec, device: str) -> None:
        self.spec, self.device = spec, device
        self.peaks: dict[str, Any] | None = None
        self.performance: Performance | None = None
        self.flags: list[str] = []
        self.correctness: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.companion_errors: dict[str, str] = {}
        self.profile: list[ProfileRow] | None = None
        # What the reader must know beyond the verdict (e.g. a profile that could not be
        # taken after the grade was decided); see Report.notes.
        self.notes: list[str] = []
        self.device_name: str | None = None
        self.sandbox: SandboxInfo | None = None
        self.stderr: str | None = None
        self.stdout: str | None = None
        self.traceback: str | None = None
        # DRAM bytes counted by Nsight Compute in a separate call (CUDA only; informative).
        self.hardware_bytes: HardwareBytes | None = None
        # How busy the machine was while timing, and what was done (graders/measure/load.py).
        self.load: LoadDecision | None = None
        # Set when the submission ran an operator its exercise forbids, with the message
        # that says which and why (graders/grading/forbidden_ops.py): no performance points.
        self.forbidden: ForbiddenUse | None = None
        self.forbidden_message: str | None = None
        # The submission's language (graders/grading/precheck.py: "python", "triton",
        # "cuda_cpp"), set by the engine once the precheck has passed.
        self.language = "python"

    @property
    def interpreted(self) -> bool:
        """A Triton kernel on a CPU worker: run by Triton's interpreter, so its timing says
        nothing about the kernel (TRITON_INTERPRET=1, graders/sandbox/launch.py)."""
        return self.language == "triton" and self.device == "cpu"

    def set_peaks(self, peaks: dict[str, Any]) -> None:
        self.peaks = peaks

    def set_performance(self, timed: TimedFigures, flags: list[str]) -> None:
        summary, sizes = timed.summary, timed.sizes
        peaks = self.peaks or {}
        figures = roofline.figures(
            float(self.spec.cost_bytes(sizes)),
            float(self.spec.cost_flops(sizes)),
            summary.median_s,
            peaks.get("gbps"),
            peaks.get("flops_per_s"),
        )
        perf: Performance = {
            "median_s": summary.median_s,
            "iqr_s": summary.iqr_s,
            "cv": summary.cv,
            "runs": summary.runs,
            "sizes": dict(sizes),
            **figures,
            "speedup_vs_naive": timed.speedup_vs_naive,
            "relative_to_reference": timed.relative_to_reference,
            "reference_median_s": timed.reference_median_s,
            "naive_median_s": timed.naive_median_s,
            "disturbed_runs": timed.disturbed_runs,
            "claimed_s": timed.claimed_s,
            "observed_s": timed.observed_s,
        }
        if timed.companions_reused:
            perf["companions_reused"] = dict(timed.companions_reused)
        perf["calls_per_window"] = timed.calls_per_window
        if timed.empty_window_s is not None:
            perf["empty_window_s"] = timed.empty_window_s
        if timed.empty_window_spread_s is not None:
            perf["empty_window_spread_s"] = timed.empty_window_spread_s
        self.flags = list(flags)
        if roofline.implausible(perf["fraction_of_roofline"]) and "implausible_speed" not in flags:
            self.flags.append("implausible_speed")
        self.performance = perf

    def set_forbidden(self, rules: list[str], operators: list[str], message: str) -> None:
        """The submission ran operators its exercise forbids: it keeps its correctness points
        only, and ``message`` (which names them) is what the student reads."""
        self.forbidden = {"rules": list(rules), "operators": list(operators)}
        self.forbidden_message = message

    def _add_forbidden(self, report: Report, verdict: Verdict) -> None:
        """A correct grading that ran a forbidden operator keeps its figures, which earned no
        performance points (_performance_points); it says which operator, and why."""
        if self.forbidden is not None and verdict == "correct":
            report["forbidden"] = self.forbidden
            report["message"] = self.forbidden_message

    def _performance_points(self) -> tuple[float, str | None, float | None]:
        curve = self.spec.scoring.curves.get(self.device)
        if curve is None or self.performance is None:
            return 0.0, None, None
        value = _measured(self.performance, curve.measure)
        # An untrustworthy or meaningless figure, or a forbidden operator's: nothing.
        if self.flags or self.interpreted or self.forbidden is not None:
            return 0.0, curve.measure, value
        return curve.points(value, self.spec.scoring.performance_points), curve.measure, value

    def _correctness(self, verdict: Verdict) -> Correctness | None:
        if verdict not in ("wrong", "correct"):  # for error/timeout/rejected it does not apply
            return None
        merged: dict[str, Any] = {
            "trials": 0,
            "max_abs_err": None,
            "max_rel_err": None,
            "mismatch_fraction": None,
            "first_mismatch": None,
            **self.correctness,
            "passed": verdict == "correct",
        }
        return cast(Correctness, merged)

    def _peak(self) -> Peak | None:
        if not self.peaks:
            return None
        return {
            "gbps": self.peaks.get("gbps"),
            "flops_per_s": self.peaks.get("flops_per_s"),
            "method": self.peaks.get("method"),
            "datasheet_gbps": self.peaks.get("datasheet_gbps"),
        }

    def finish(self, verdict: Verdict, message: str | None, *, total_s: float) -> Report:
        assert verdict in VERDICTS, verdict
        spec = self.spec
        score = 0.0
        performance = self.performance if verdict == "correct" else None
        if performance is not None:
            points, measure, value = self._performance_points()
            score = spec.scoring.correctness_points + points
            performance = {
                **performance,
                "points": points,
                "measure": measure,
                "measure_value": value,
            }
            if self.flags:
                message = (
                    "Your result is correct, but the timing could not be trusted, so no "
                    "performance points were given: "
                    + "; ".join(f"{flag}: {FLAG_REASONS.get(flag, flag)}" for flag in self.flags)
                    + "."
                )
            elif self.interpreted:
                message = INTERPRETED_CORRECT
        elif verdict == "correct":
            score = spec.scoring.correctness_points
            if self.interpreted:  # not timed at all (graders/engine.py)
                message = INTERPRETED_CORRECT
        device: Device = {
            "kind": _device_kind(self.device),
            "name": self.device_name,
            "sandbox": self.sandbox,
        }
        timings: Timings = {
            "sandbox_start_s": self.timings.get("sandbox_start_s"),
            "setup_s": self.timings.get("setup_s"),
            "check_s": self.timings.get("check_s"),
            "timing_s": self.timings.get("timing_s"),
            "total_s": total_s,
        }
        report: Report = {
            "exercise": spec.slug,
            "exercise_hash": spec.content_hash,
            "kind": "code",
            "verdict": verdict,
            "message": message,
            "gradable": verdict != "rejected",
            "score": round(score, 3),
            "max_score": spec.max_score,
            "flags": self.flags if verdict == "correct" else [],
            "correctness": self._correctness(verdict),
            "performance": performance,
            "peak": self._peak(),
            "profile": self.profile if verdict == "correct" else None,
            "device": device,
            "timings": timings,
            "stderr": (self.stderr or "")[-_STDERR_TAIL:] or None,
            "stdout": (self.stdout or "")[-_STDOUT_TAIL:] or None,
            "traceback": self.traceback,
        }
        if self.companion_errors:
            report["companion_errors"] = dict(self.companion_errors)
        self._add_forbidden(report, verdict)
        ladder = build_ladder(
            performance, spec.scoring.curves.get(self.device), spec.scoring.performance_points
        )
        if ladder is not None:
            report["ladder"] = ladder
        if self.hardware_bytes is not None and verdict == "correct":
            report["hardware_bytes"] = self.hardware_bytes
        notes = [INTERPRETED_NOTE] if self.interpreted and verdict != "rejected" else []
        if self.load is not None and performance is not None:
            report["load"] = self.load.report()
        notes += self.notes
        if notes:
            report["notes"] = notes
        return json_safe(report)


# Said of a Triton kernel graded on a CPU: as a note, and in the message of a correct grading.
INTERPRETED_NOTE = (
    "Your Triton kernel ran on a CPU worker, under Triton's interpreter (TRITON_INTERPRET=1), "
    "which runs each program instance with NumPy: its results are checked as they would be on "
    "a GPU (a float32 tl.dot rounds its operands to TF32, as an NVIDIA GPU does unless it is "
    'given input_precision="ieee"), but its timing says nothing about your kernel\'s speed and '
    "earns no performance points. Performance needs a GPU: a GPU worker compiles and times the "
    "same file."
)
INTERPRETED_CORRECT = "Your result is correct, so the correctness points count. " + INTERPRETED_NOTE


# What each flag means, in the words the student reads next to it.
FLAG_REASONS = {
    "implausible_speed": "the measured time is faster than the hardware allows",
    "second_core": "your code used more CPU time than wall time, so more than one core",
    "cpu_outside_calls": "your code ran while it should have been stopped between calls",
    "timing_inconsistent": (
        "the time the harness measured inside your process was far below what the grader's "
        "outside clock saw (a patched harness, or threads of yours running beside each call)"
    ),
}


def _measured(performance: Performance, measure: str) -> float | None:
    """The figure a scoring curve's ``measure`` names."""
    figures: dict[str, float | None] = {
        "fraction_of_peak_bandwidth": performance["fraction_of_peak"],
        "fraction_of_peak_flops": performance["fraction_of_peak_flops"],
        "fraction_of_roofline": performance["fraction_of_roofline"],
        "relative_to_reference": performance["relative_to_reference"],
        "speedup_vs_naive": performance["speedup_vs_naive"],
    }
    return figures[measure]


def _device_kind(device: str) -> Literal["cpu", "cuda"]:
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device kind {device!r}")
    return "cuda" if device == "cuda" else "cpu"


JsonT = TypeVar("JsonT")


def json_safe(value: JsonT) -> JsonT:
    """NaN/Infinity are not JSON (PostgreSQL's jsonb rejects them): write them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return cast(JsonT, str(value))
    if isinstance(value, dict):
        return cast(JsonT, {key: json_safe(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return cast(JsonT, [json_safe(item) for item in value])
    return value


def grader_failure(
    *, exercise: str, max_score: float, device: str, message: str, internal_error: str = ""
) -> Report:
    """The report stored when the grader itself broke: gradable False, costs the student nothing.

    ``message`` is for the student; ``internal_error`` (a traceback) is shown to staff only.
    """
    report: Report = {
        "exercise": exercise,
        "exercise_hash": None,
        "verdict": None,
        "message": message,
        "gradable": False,
        "score": 0.0,
        "max_score": max_score,
        "flags": ["grader_error"],
        "correctness": None,
        "performance": None,
        "peak": None,
        "profile": None,
        "device": {"kind": _device_kind(device), "name": None},
        "timings": {
            "sandbox_start_s": None,
            "setup_s": None,
            "check_s": None,
            "timing_s": None,
            "total_s": None,
        },
        "stderr": None,
        "stdout": None,
        "traceback": None,
    }
    if internal_error:
        report["internal_error"] = internal_error
    return report
