"""A GPU's peaks, measured the way a grading measures a submission.

A figure read in-process with CUDA events is not what a grading sees: a grading times from
outside the sandbox, through thaw, ``go``, ``done``, the driver's settle and the freeze,
less an empty window. So the peaks a CUDA grading's fraction of peak is read against are
measured through that same path: trusted kernels (``calibration/``: a device-to-device copy
and fp32, TF32 and bf16 matmuls) are graded like submissions, on a bench of the slot (its
sandbox, its IPC-shared inputs, its flush), and their medians become the peaks.

The copy is measured twice: first one call per window, which gives the window's fixed cost
(the median empty window, recorded as ``window_s``); then with as many calls per window as
that cost calls for, which gives the bandwidth. Each result carries the datasheet figure
for comparison (graders/measure/calibrate.py keeps the history).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graders.devices import cuda_lock
from graders.grading import runners, warm
from graders.grading.phases import Outcome
from graders.spec.exercise import ExerciseSpec, load_exercise

CALIBRATION_ROOT = Path(__file__).resolve().parent / "calibration"
MATMULS = {"fp32": "matmul-fp32", "tf32": "matmul-tf32", "bf16": "matmul-bf16"}


class CalibrationFailed(Exception):
    """A trusted calibration kernel did not grade as correct: the machine or the engine."""


def _graded_median(
    spec: ExerciseSpec, slot: int, peaks: dict[str, Any], device: str
) -> tuple[float, int, int]:
    """(median seconds per call, the empty window in ns, calls per window) of the exercise's
    own starter code, graded on ``slot`` through a fresh bench."""
    bench = warm.Bench(spec, device, slot, peaks, compare=False)
    try:
        runner = bench.take_runner()
        try:
            runners.deliver(runner.scratch, (spec.path / "starter.py").read_text())
            grader, run = bench.grader, runner.run
            grader.load(run)
            grader.check(run)
            timed = grader.time_calls(run, {})
            return timed.summary.median_s, run.baseline_ns, bench.arena.sets
        except Outcome as failed:
            raise CalibrationFailed(f"{spec.slug}: {failed.verdict}: {failed.message}") from None
        finally:
            runner.close()
    finally:
        bench.close()


def measure(slot: int, name: str, device: str = "cuda") -> dict[str, Any]:
    """One calibration of the slot's GPU through the grading path (see the module docs).
    ``device="cpu"`` runs the same path on the kernels' CPU sizes (the tests do)."""
    copy = load_exercise(CALIBRATION_ROOT / "copy")
    n = int(copy.sizes[device].timed["n"])
    moved = float(copy.cost_bytes(copy.sizes[device].timed))
    first_s, empty_ns, _ = _graded_median(copy, slot, {}, device)
    window_s = empty_ns / 1e9
    rough = {"gbps": moved / first_s / 1e9, "flops_per_s": 1.0, "window_s": window_s}
    copy_s, _, sets = _graded_median(copy, slot, rough, device)
    figures: dict[str, Any] = {"gbps": moved / copy_s / 1e9, "window_s": window_s}
    peaks = {**rough, "gbps": figures["gbps"]}
    for kind, folder in MATMULS.items():
        spec = load_exercise(CALIBRATION_ROOT / folder)
        sizes = spec.sizes[device].timed
        seconds, _, _ = _graded_median(spec, slot, peaks, device)
        key = "flops_per_s" if kind == "fp32" else f"flops_per_s_{kind}"
        figures[key] = float(spec.cost_flops(sizes)) / seconds
    m = int(load_exercise(CALIBRATION_ROOT / MATMULS["fp32"]).sizes[device].timed["m"])
    # The empty window holds the settle: its cost depends on which witness closed it.
    closed_by = cuda_lock.completion_witness().kind if device == "cuda" else "synchronous"
    return {
        **figures,
        "device_name": name,
        "flush_bytes": None,  # the device flushes twice its L2 (graders/devices/cuda.py)
        "method": (
            f"graded through the sandbox like a submission: device copy of {n * 4 >> 20} MiB "
            f"({sets} per window), fp32/TF32/bf16 matmul {m}x{m}; outside clock less an "
            f"empty window of {window_s * 1e6:.0f} us ({closed_by}), L2 flushed before each "
            "window"
        ),
    }
