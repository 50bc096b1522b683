"""The CPU's matmul peak (issue 38, class 6): taken at the matmul exercise's timed size, by each
call's time on the core, the highest recent one used; no grading of the library's own matmul
reads above it."""

from __future__ import annotations

import dataclasses
import time

import pytest

from graders import grade, load_exercise
from graders.measure import calibrate, matmul_peak
from graders.measure.calibrate import Measurement
from graders.spec.exercise import Curve, TimingPolicy

NOW = 1_800_000_000.0


def test_the_peak_is_measured_at_the_matmul_exercises_timed_size() -> None:
    sizes = load_exercise(matmul_peak.MATMUL_EXERCISE).sizes["cpu"].timed
    assert matmul_peak.timed_shape() == (sizes["m"], sizes["k"], sizes["n"])


def test_a_wait_for_the_core_is_not_counted_as_the_calls_time() -> None:
    # A call that spends 0.2 s off the core (here asleep; in a busy machine, waiting behind
    # another process) took far less time on it.
    assert matmul_peak.time_on_core_s(lambda: time.sleep(0.2)) < 0.1


def _entry(flops: float, *, on_core: bool) -> Measurement:
    entry: Measurement = {
        "gbps": 30.0,
        "flops_per_s": flops,
        "flush_bytes": 64 << 20,
        "timestamp": NOW,
        "memory": calibrate.MEMORY,
        "method": "test",
    }
    if on_core:
        entry["flops_timer"] = matmul_peak.TIMER
    return entry


def test_the_peak_is_the_highest_recent_measurement_timed_on_the_core() -> None:
    # Timed on the core, a figure reads low when the machine is busy, never high.
    history = [_entry(f, on_core=True) for f in (99e9, 80e9, 91e9, 78e9, 85e9, 82e9)]
    assert calibrate.summary("cpu", "cpu", history)["flops_per_s"] == 91e9  # of the last 5
    # Wall-time figures from before count only while there is no other.
    old = [_entry(f, on_core=False) for f in (45e9, 44e9, 92e9)]
    assert calibrate.summary("cpu", "cpu", old)["flops_per_s"] == 45e9  # their median
    assert calibrate.summary("cpu", "cpu", [*old, _entry(88e9, on_core=True)])[
        "flops_per_s"
    ] == pytest.approx(88e9)


def test_the_reference_matmul_reads_at_most_the_peak_in_a_real_grading() -> None:
    """The library's own matmul, graded in the sandbox at the timed size, reads no more than
    100 % of the peak the same grading used (a ratio of two figures of one report)."""
    calibrate.peaks("cpu", refresh=True)  # one more measurement on this run's own cache
    spec = load_exercise(matmul_peak.MATMUL_EXERCISE)
    # Scored on the absolute figure, so no companions are needed; fewer calls.
    curves = {"cpu": Curve("fraction_of_peak_flops", 0.6, 0.1)}
    spec = dataclasses.replace(
        spec,
        scoring=dataclasses.replace(spec.scoring, curves=curves),
        timing=TimingPolicy(warmup=1, min_runs=5, max_runs=8, target_median_error=0.02),
    )
    report = grade(spec, spec.reference_path.read_text(), compare=False, profile=False)
    assert report["verdict"] == "correct", report["message"]
    performance = report["performance"]
    assert performance is not None
    fraction = performance["fraction_of_peak_flops"]
    assert fraction is not None and 0 < fraction <= 1.0, (
        fraction,
        performance["achieved_flops_per_s"],
        report["peak"],
    )
