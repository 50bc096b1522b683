"""Warm runners (grading/warm.py) through the real sandbox: started ahead, used once, isolated.

Each test sets GRADERS_WARM=1 for itself and closes every warm sandbox afterwards.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from graders import ExerciseSpec, Report, grade, profile
from graders.grading import warm
from graders.grading.phases import Grader, TimedPhase
from graders.measure import calibrate, companion_times
from graders.measure import load as machine_load
from graders.sandbox import slots
from graders.spec.exercise import Curve, Scoring

# Slot 1, which no other test grades on: a grading elsewhere holding the slot would only
# delay these runners' baselines, never change what the tests see, but it would slow them.
SLOT = 1

# Leaves every trace a later submission could look for: a file in its home and in /tmp, an
# environment variable, a module attribute on torch, and a child process that keeps running.
LEAVES_TRACES = """
import os, subprocess, sys, torch
def vector_add(a, b):
    for path in (os.path.expanduser("~/trace"), "/tmp/trace", "/scratch/out/trace"):
        try:
            with open(path, "w") as handle:
                handle.write("left by the first submission")
        except OSError:
            pass
    os.environ["TRACE"] = "1"
    torch.trace_left = True
    if not hasattr(torch, "trace_child"):
        torch.trace_child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    return a + b
"""

# Correct only if it finds none of those traces; otherwise a wrong answer says which it saw.
LOOKS_FOR_TRACES = """
import os, torch
def _traces():
    found = [p for p in (os.path.expanduser("~/trace"), "/tmp/trace", "/scratch/out/trace")
             if os.path.exists(p)]
    if os.environ.get("TRACE"):
        found.append("env")
    if getattr(torch, "trace_left", False):
        found.append("torch attribute")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"time.sleep(600)" in handle.read():
                    found.append("process")
        except OSError:
            pass
    return found
SEEN = _traces()
def vector_add(a, b):
    return a + b if not SEEN else a - b
"""


@pytest.fixture
def warm_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRADERS_WARM", "1")
    monkeypatch.setenv("GRADERS_WARM_RUNNERS", "1")
    yield
    warm.close_all()


def _bench(spec: ExerciseSpec, compare: bool = False) -> warm.Bench:
    with slots.acquire(SLOT):
        peaks = calibrate.peaks("cpu", slot=SLOT)
    return warm.Bench(spec, "cpu", SLOT, peaks, compare)


def _alive(pid: int | None) -> bool:
    """Running or sleeping, not a zombie or gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _wait_until_ready(bench: warm.Bench, timeout: float = 120.0) -> warm.Runner:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with bench.lock:
            ready = [r for r in bench.runners if r.measured]
        if ready:
            return ready[0]
        time.sleep(0.1)
    raise AssertionError("no warm runner became ready")


def test_a_runner_is_ready_before_its_submission_and_used_once(warm_on, quick_spec) -> None:
    bench = _bench(quick_spec)
    try:
        bench.refill()
        waiting = _wait_until_ready(bench)
        # Frozen while idle: no CPU time passes in it, and its baseline is known.
        before = waiting.run.containment.cpu_ns()
        time.sleep(0.3)
        assert waiting.run.containment.cpu_ns() == before
        assert waiting.run.baseline_ns > 0
        assert not (waiting.scratch.inbox / "submission.py").exists()
        with slots.acquire(SLOT):
            taken = bench.take_runner()
        assert taken is waiting
        with bench.lock:
            assert waiting not in bench.runners  # nobody else can be handed it
        pid = taken.run.host_pid
        taken.close()
        assert not os.path.exists(f"/proc/{pid}"), "a used runner must not outlive its grading"
        assert not taken.scratch.root.exists()
    finally:
        bench.close()


def test_runners_started_by_the_refill_thread_outlive_it(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second runner of a pool is started by the refill thread, which then ends. Forked
    there, it was SIGKILLed with the thread (bwrap's --die-with-parent is per thread), and the
    submission it was given was graded "killed by SIGKILL" (graders/sandbox/forking_thread.py)."""
    import threading

    monkeypatch.setenv("GRADERS_WARM_RUNNERS", "2")
    bench = _bench(quick_spec)
    try:
        bench.refill()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with bench.lock:
                pool = list(bench.runners)
            refilling = any(t.name == f"graders-warm-{SLOT}" for t in threading.enumerate())
            if len(pool) == 2 and all(r.measured for r in pool) and not refilling:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the pool did not fill, or its refill thread did not end")
        for runner in pool:
            with slots.acquire(SLOT):
                taken = bench.take_runner()
            assert taken is runner
            # A frozen task keeps a SIGKILL pending until it is thawed, as a grading does.
            taken.run.containment.thaw()
            time.sleep(0.5)
            alive = _alive(taken.run.host_pid)
            taken.close()
            assert alive, "a pooled runner was killed when its refill thread ended"
    finally:
        bench.close()


def test_a_runner_that_ran_while_idle_is_not_used(warm_on, quick_spec) -> None:
    bench = _bench(quick_spec)
    try:
        bench.refill()
        suspect = _wait_until_ready(bench)
        suspect.run.cpu_mark -= 10**9  # as if a second of CPU time passed while it idled
        with slots.acquire(SLOT):
            taken = bench.take_runner()
        assert taken is not suspect
        assert suspect.run.session.process.poll() is not None, "the suspect runner is killed"
        assert taken.measured
        taken.close()
    finally:
        bench.close()


def test_a_baseline_is_measured_only_while_the_slot_is_free(warm_on, quick_spec) -> None:
    bench = _bench(quick_spec)
    try:
        with slots.acquire(SLOT):  # a grading holds the slot: its calls may be timed
            bench.refill()
            with bench.lock:
                runner = bench.runners[0]
            deadline = time.monotonic() + 120
            while not runner.greeted and time.monotonic() < deadline:
                time.sleep(0.1)
            assert runner.greeted
            time.sleep(1.0)
            assert not runner.measured, "empty calls were timed while the slot was held"
            with slots.attempt(SLOT) as held:
                assert held is False
        assert _wait_until_ready(bench) is runner
    finally:
        bench.close()


def test_a_runner_still_importing_is_frozen_while_calls_are_timed(warm_on, quick_spec) -> None:
    bench = _bench(quick_spec)
    try:
        bench.refill()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with bench.lock:
                starting = list(bench.runners)
            if starting:
                break
            time.sleep(0.01)
        assert starting, "no runner was started"
        runner = starting[0]
        if runner.greeted:
            pytest.skip("the runner finished importing before the hush began")
        with bench.hush():
            mark = runner.run.containment.cpu_ns()
            time.sleep(0.5)
            assert runner.run.containment.cpu_ns() == mark, "it ran during a timed phase"
        _wait_until_ready(bench)  # and it goes on once the timed phase is over
    finally:
        bench.close()


def test_nothing_of_one_submission_reaches_the_next(warm_on, quick_spec) -> None:
    first = grade(quick_spec, LEAVES_TRACES, device="cpu", slot=SLOT, compare=False, profile=False)
    assert first["verdict"] == "correct", first["message"]
    second = grade(
        quick_spec, LOOKS_FOR_TRACES, device="cpu", slot=SLOT, compare=False, profile=False
    )
    assert second["verdict"] == "correct", second["message"]


READS_ITS_INPUT_REGION = """
import gc

import torch

region = next(o for o in gc.get_objects() if type(o).__name__ == "InputRegion")
seen = region.memory[region.offset : region.offset + (8 << 20)]
if any(seen):
    raise RuntimeError("an earlier grading's inputs are still in the region")


def vector_add(a, b):
    return a + b
"""


def test_a_runner_sees_no_earlier_inputs_when_its_code_is_imported(warm_on, quick_spec) -> None:
    # The runner for the second student was started, and its empty calls were made, after
    # the first grading's calls: they copied that grading's inputs into its region.
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    first = grade(quick_spec, source, device="cpu", slot=SLOT, compare=False, profile=False)
    assert first["verdict"] == "correct", first["message"]
    second = grade(
        quick_spec, READS_ITS_INPUT_REGION, device="cpu", slot=SLOT, compare=False, profile=False
    )
    assert second["verdict"] == "correct", second["message"]


def test_companion_times_are_reused_when_the_checks_agree(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Any drift passes the check here, so the second grading must reuse both medians. No
    # bus canary: on a shared bus nothing is reused (the next test), and a busy test machine
    # must not decide this one.
    monkeypatch.setattr(companion_times, "DRIFT", 1e9)
    monkeypatch.setattr(machine_load, "yardstick", lambda *args: None)
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    first = grade(quick_spec, source, device="cpu", slot=SLOT, profile=False)
    second = grade(quick_spec, source, device="cpu", slot=SLOT, profile=False)
    assert first["verdict"] == second["verdict"] == "correct"
    before, after = first["performance"], second["performance"]
    assert before is not None and after is not None
    # A first grading timed twice (a busy test machine) may reuse what its first timing measured.
    assert "companions_reused" not in before or first["load"]["measured_twice"]
    assert set(after["companions_reused"]) == {"reference", "naive"}
    assert after["reference_median_s"] == before["reference_median_s"]


def test_a_relative_curve_never_reuses_the_median_it_divides_by(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference is what the ratio divides by: it is timed beside the submission in every
    # round of every grading, and the ratio scored is the rounds' median. The naive version
    # only places the submission on the ladder, so its remembered median still serves.
    monkeypatch.setattr(companion_times, "DRIFT", 1e9)
    monkeypatch.setattr(machine_load, "yardstick", lambda *args: None)
    curve = Curve("relative_to_reference", 0.85, 0.75)
    scoring = Scoring(
        quick_spec.scoring.correctness_points, quick_spec.scoring.performance_points, {"cpu": curve}
    )
    spec = dataclasses.replace(quick_spec, scoring=scoring, content_hash="relative-reuse")
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    first = grade(spec, source, device="cpu", slot=SLOT, profile=False)
    second = grade(spec, source, device="cpu", slot=SLOT, profile=False)
    assert first["verdict"] == second["verdict"] == "correct"
    after = second["performance"]
    assert after is not None
    assert "reference" not in (after.get("companions_reused") or {})
    assert after["relative_to_reference"] is not None and after["points"] is not None


def test_a_kept_companion_skips_the_warm_up_rounds_it_already_had(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the submission's sandbox is fresh in a second grading on a warm slot: the
    # reference kept from the first was called on the timed sizes there already.
    monkeypatch.setattr(machine_load, "yardstick", lambda *args: None)
    curve = Curve("relative_to_reference", 0.85, 0.75)
    scoring = Scoring(
        quick_spec.scoring.correctness_points, quick_spec.scoring.performance_points, {"cpu": curve}
    )
    spec = dataclasses.replace(quick_spec, scoring=scoring, content_hash="warm-up-once")
    calls: list[str] = []
    real_student, real_companion = TimedPhase.student_call, Grader.companion_call

    def student_call(phase: TimedPhase, seeds: list[int], warm_round: bool) -> bool:
        calls.append("student warm-up" if warm_round else "student")
        return real_student(phase, seeds, warm_round)

    def companion_call(grader: Grader, companions: dict, name: str, *args: Any) -> Any:
        calls.append(name)
        return real_companion(grader, companions, name, *args)

    monkeypatch.setattr(TimedPhase, "student_call", student_call)
    monkeypatch.setattr(Grader, "companion_call", companion_call)
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    gradings = []
    for _ in range(2):
        calls.clear()
        report = grade(spec, source, device="cpu", slot=SLOT, profile=False)
        assert report["verdict"] == "correct", report["message"]
        gradings.append(list(calls))
    first, second = gradings
    # The fresh reference of the first grading is called in its first warm-up rounds too
    # (a phase timed again finds it warm); the kept one of the second only in the rounds that
    # count, paired with each of the submission's.
    assert "student warm-up" in first and "student warm-up" in second
    assert first.count("reference") - first.count("student") == spec.timing.warmup > 0
    assert second.count("reference") == second.count("student")


def test_the_next_gradings_inputs_are_drawn_while_its_runner_is_still_starting(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A student who resubmits within seconds must find the inputs drawn: the runner's
    # import takes longer, and here it never finishes until the inputs are there.
    staged: list[bool] = []
    inputs_drawn = threading.Event()
    real_stage, real_prepare = warm.Bench._stage_pool, warm.Bench._prepare

    def stage(bench: warm.Bench) -> None:
        real_stage(bench)
        staged.append(bench.arena.pool_staged())
        inputs_drawn.set()

    def prepare(bench: warm.Bench, runner: warm.Runner) -> bool:
        inputs_drawn.wait(timeout=90)  # longer than the test waits for the inputs
        return real_prepare(bench, runner)

    monkeypatch.setattr(warm.Bench, "_stage_pool", stage)
    monkeypatch.setattr(warm.Bench, "_prepare", prepare)
    spec = dataclasses.replace(quick_spec, content_hash="inputs-ahead")
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    report = grade(spec, source, device="cpu", slot=SLOT, profile=False)
    assert report["verdict"] == "correct", report["message"]
    assert inputs_drawn.wait(timeout=60), "no inputs drawn while the runner waited"
    assert staged == [True]


def test_companion_times_are_neither_reused_nor_kept_on_a_shared_bus(
    warm_on, quick_spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every canary reads a shared bus (a calibration 100x this machine's), and any drift would
    # pass the check: still, a median from another moment is no yardstick for a busy one.
    monkeypatch.setattr(companion_times, "DRIFT", 1e9)
    real = machine_load.yardstick

    def inflated(device: str, peaks: dict, n: int, memory_mb: int) -> machine_load.Yardstick:
        stick = real(device, {**peaks, "flush_bytes": 8 << 20}, 1 << 20, memory_mb)
        assert stick is not None
        return dataclasses.replace(stick, calibrated_gbps=stick.calibrated_gbps * 100)

    monkeypatch.setattr(machine_load, "yardstick", inflated)
    monkeypatch.setattr(machine_load, "PATIENCE_S", 0.2)
    spec = dataclasses.replace(quick_spec, content_hash="shared-bus-reuse")
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    first = grade(spec, source, device="cpu", slot=SLOT, profile=False)
    second = grade(spec, source, device="cpu", slot=SLOT, profile=False)
    for report in (first, second):
        assert report["verdict"] == "correct", report["message"]
        assert report["performance"] is not None and report["load"]["bus_canary"]
        assert "companions_reused" not in report["performance"]


def test_profile_comes_after_the_grade(warm_on, quick_spec) -> None:
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    early: list[Report] = []
    final = grade(
        quick_spec, source, device="cpu", slot=SLOT, compare=False, on_graded=early.append
    )
    assert len(early) == 1
    assert early[0]["profile"] is None
    assert final["profile"], "the returned report carries the profile"
    assert early[0]["score"] == final["score"]
    assert early[0]["verdict"] == final["verdict"] == "correct"


def test_a_profile_left_for_later_is_taken_in_a_fresh_runner(warm_on, quick_spec) -> None:
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    early: list[Report] = []

    def later(report: Report) -> bool:
        early.append(report)
        return False  # others wait: no profile now

    final = grade(quick_spec, source, device="cpu", slot=SLOT, compare=False, on_graded=later)
    assert early[0]["verdict"] == final["verdict"] == "correct"
    assert final["profile"] is None, "left for later, not taken"
    rows = profile(quick_spec, source, device="cpu", slot=SLOT)
    assert rows and all(row["calls"] >= 1 and row["self_time_s"] >= 0 for row in rows)
    assert any("add" in row["name"] for row in rows), rows
    # A file that no longer loads gets no profile, and no exception.
    assert profile(quick_spec, "def vector_add(a, b):\n    return a +\n", slot=SLOT) is None
    broken = "raise RuntimeError('gone')\ndef vector_add(a, b):\n    return a + b\n"
    assert profile(quick_spec, broken, device="cpu", slot=SLOT) is None


class TestCompanionTimes:
    def test_nothing_known_is_measured(self) -> None:
        assert companion_times.CompanionTimes().reusable("reference") is None

    def test_expiry_by_age_and_by_reuses(self) -> None:
        times = companion_times.CompanionTimes()
        times.remember("reference", 0.01, rel_iqr=0.02, now=100.0)
        assert times.reusable("reference", now=100.0 + companion_times.MAX_AGE_S - 1)
        assert times.reusable("reference", now=100.0 + companion_times.MAX_AGE_S + 1) is None
        for _ in range(companion_times.MAX_REUSES):
            times.reused("reference")
        assert times.reusable("reference", now=101.0) is None

    def test_drift(self) -> None:
        known = companion_times.Remembered(median_s=0.010, measured_at=0.0, rel_iqr=0.02)
        assert not companion_times.CompanionTimes.drifted(known, [0.0101, 0.0099, 0.0104])
        assert companion_times.CompanionTimes.drifted(known, [0.0112, 0.0111, 0.0109])
        assert companion_times.CompanionTimes.drifted(known, [])

    def test_a_noisier_measurement_tolerates_more(self) -> None:
        # Measured with a 30% spread, three calls 8% off are within the noise: reused.
        noisy = companion_times.Remembered(median_s=0.010, measured_at=0.0, rel_iqr=0.3)
        assert not companion_times.CompanionTimes.drifted(noisy, [0.0108, 0.0109, 0.0107])
        assert companion_times.CompanionTimes.drifted(noisy, [0.0150, 0.0149, 0.0151])
