"""Build the JSON report (schema in report.schema.json) and a tiny schema validator.

The validator covers the JSON Schema subset the schema uses (type, required,
properties, enum, items, minimum), so no dependency is needed to check reports.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from . import roofline
from .spec import ExerciseSpec

SCHEMA_PATH = Path(__file__).resolve().parent / "report.schema.json"
VERDICTS = ("correct", "wrong", "error", "timeout", "rejected")
_STDERR_TAIL = 4000


class ReportBuilder:
    def __init__(self, spec: ExerciseSpec, device: str) -> None:
        self.spec, self.device = spec, device
        self.peaks: dict[str, Any] | None = None
        self.performance: dict[str, Any] | None = None
        self.flags: list[str] = []
        self.correctness: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.profile: list[dict[str, Any]] | None = None
        self.device_name: str | None = None
        self.sandbox: dict[str, Any] | None = None
        self.stderr: str | None = None
        self.stdout: str | None = None
        self.traceback: str | None = None

    def set_peaks(self, peaks: dict[str, Any]) -> None:
        self.peaks = peaks

    def set_performance(self, timed: dict[str, Any], flags: list[str]) -> None:
        summary, sizes = timed["summary"], timed["sizes"]
        peaks = self.peaks or {}
        perf: dict[str, Any] = {
            "median_s": summary.median_s,
            "iqr_s": summary.iqr_s,
            "cv": summary.cv,
            "runs": summary.runs,
            "sizes": sizes,
            **roofline.figures(
                float(self.spec.cost_bytes(sizes)),
                float(self.spec.cost_flops(sizes)),
                summary.median_s,
                peaks.get("gbps"),
                peaks.get("flops_per_s"),
            ),
            "speedup_vs_naive": timed.get("speedup_vs_naive"),
            "relative_to_reference": timed.get("relative_to_reference"),
            "reference_median_s": timed.get("reference_median_s"),
            "naive_median_s": timed.get("naive_median_s"),
            "disturbed_runs": timed.get("disturbed_runs"),
            "claimed_s": timed.get("claimed_s"),
            "observed_s": timed.get("observed_s"),
        }
        self.flags = list(flags)
        if roofline.implausible(perf):
            self.flags.append("implausible_speed")
        self.performance = perf

    def _performance_points(self) -> tuple[float, str | None, float | None]:
        curve = self.spec.scoring.curves.get(self.device)
        if curve is None or self.performance is None:
            return 0.0, None, None
        key = {
            "fraction_of_peak_bandwidth": "fraction_of_peak",
            "fraction_of_peak_flops": "fraction_of_peak_flops",
        }.get(curve.measure, curve.measure)
        value = self.performance.get(key)
        if self.flags:  # an untrustworthy figure earns nothing
            return 0.0, curve.measure, value
        return curve.points(value, self.spec.scoring.performance_points), curve.measure, value

    def finish(self, verdict: str, message: str | None, *, total_s: float) -> dict[str, Any]:
        assert verdict in VERDICTS, verdict
        spec = self.spec
        score = 0.0
        correctness: dict[str, Any] | None = None
        if verdict in ("wrong", "correct"):  # for error/timeout/rejected it does not apply
            correctness = {
                "passed": verdict == "correct",
                "trials": 0,
                "max_abs_err": None,
                "max_rel_err": None,
                "mismatch_fraction": None,
                "first_mismatch": None,
                **self.correctness,
            }
            correctness["passed"] = verdict == "correct"
        performance = self.performance if verdict == "correct" else None
        if verdict == "correct":
            points, measure, value = self._performance_points()
            score = spec.scoring.correctness_points + points
            assert performance is not None
            performance = {
                **performance,
                "points": points,
                "measure": measure,
                "measure_value": value,
            }
            if self.flags:
                message = (
                    "Your result is correct, but the timing could not be trusted ("
                    + ", ".join(self.flags)
                    + "), so no performance points were given."
                )
        peak = None
        if self.peaks:
            peak = {
                "gbps": self.peaks.get("gbps"),
                "flops_per_s": self.peaks.get("flops_per_s"),
                "method": self.peaks.get("method"),
                "datasheet_gbps": self.peaks.get("datasheet_gbps"),
            }
        return _json_safe(
            {
                "exercise": spec.slug,
                "exercise_hash": spec.content_hash,
                "verdict": verdict,
                "message": message,
                "gradable": verdict != "rejected",
                "score": round(score, 3),
                "max_score": spec.max_score,
                "flags": self.flags if verdict == "correct" else [],
                "correctness": correctness,
                "performance": performance,
                "peak": peak,
                "profile": self.profile if verdict == "correct" else None,
                "device": {"kind": self.device, "name": self.device_name, "sandbox": self.sandbox},
                "timings": {
                    "sandbox_start_s": None,
                    "setup_s": None,
                    "check_s": None,
                    "timing_s": None,
                    **self.timings,
                    "total_s": total_s,
                },
                "stderr": (self.stderr or "")[-_STDERR_TAIL:] or None,
                "stdout": (self.stdout or "")[-2000:] or None,
                "traceback": self.traceback,
            }
        )


def _json_safe(value: Any) -> Any:
    """NaN/Infinity are not JSON (PostgreSQL's jsonb rejects them): write them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def grader_failure(slug: str, max_score: float, device: str, message: str) -> dict[str, Any]:
    """The report to store when the grader itself broke (not the student's fault)."""
    return {
        "exercise": slug,
        "exercise_hash": None,
        "verdict": "error",
        "message": f"The grader failed, not your code: {message}. This attempt is not counted.",
        "gradable": False,
        "score": 0.0,
        "max_score": max_score,
        "flags": ["grader_error"],
        "correctness": None,
        "performance": None,
        "peak": None,
        "profile": None,
        "device": {"kind": device, "name": None},
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


# ---------------------------------------------------------------------- validation


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


def validate(instance: Any, node: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """Errors (empty when valid) for the subset of JSON Schema our schema uses."""
    node = schema() if node is None else node
    errors: list[str] = []
    kinds = node.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        ok = any(
            isinstance(instance, _TYPES[k])
            and not (k in ("integer", "number") and isinstance(instance, bool))
            for k in kinds
        )
        if not ok:
            return [f"{path}: expected {kinds}, got {type(instance).__name__}"]
    if "enum" in node and instance not in node["enum"]:
        errors.append(f"{path}: {instance!r} not in {node['enum']}")
    if "minimum" in node and isinstance(instance, int | float) and instance < node["minimum"]:
        errors.append(f"{path}: {instance} < minimum {node['minimum']}")
    if isinstance(instance, dict):
        for key in node.get("required", []):
            if key not in instance:
                errors.append(f"{path}: missing required key {key!r}")
        for key, sub in node.get("properties", {}).items():
            if key in instance:
                errors += validate(instance[key], sub, f"{path}.{key}")
        if node.get("additionalProperties") is False:
            extra = set(instance) - set(node.get("properties", {}))
            errors += [f"{path}: unexpected key {k!r}" for k in sorted(extra)]
    if isinstance(instance, list) and "items" in node:
        for index, item in enumerate(instance):
            errors += validate(item, node["items"], f"{path}[{index}]")
    return errors
