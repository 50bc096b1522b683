"""One calibration at a time, once on a GPU with no history, and a failure that stands.

The measurement is replaced by a fake (no timing is asserted); the lock and a killed
calibration are real: other processes hold the lock or die holding it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graders.errors import GraderError
from graders.measure import calibrate
from graders.measure.calibrate import CalibrationFailed, Measurement

REPO = Path(__file__).resolve().parents[2]
NOW = 1_800_000_000.0
GPU = "NVIDIA H100 80GB HBM3"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRADERS_RECALIBRATE_DAYS", raising=False)
    monkeypatch.delenv("GRADERS_CALIBRATION_RETRY_S", raising=False)
    return tmp_path


@pytest.fixture
def a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """device_name("cuda") without a GPU: the history's key is all it is used for here."""
    real = calibrate.device_name
    monkeypatch.setattr(calibrate, "device_name", lambda d: GPU if d != "cpu" else real(d))


class Probe:
    """The measurement: the given GB/s in turn, or an exception where one is given."""

    def __init__(self, *values: float | Exception) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self, device: str, slot: int) -> Measurement:
        self.calls += 1
        value = self.values.pop(0)
        if isinstance(value, Exception):
            raise value
        return {"gbps": value, "flops_per_s": 1e12, "flush_bytes": None, "method": "fake"}


def peaks(device: str, probe: Probe, now: float = NOW, **options: object) -> dict[str, object]:
    return calibrate.peaks(device, slot=0, measure=probe, now=lambda: now, **options)  # type: ignore[arg-type]


def stored(cache: Path) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads((cache / "peaks.json").read_text())
    return data


@pytest.mark.usefixtures("a_gpu")
def test_a_gpu_with_no_history_is_measured_once() -> None:
    probe = Probe(3000.0, 2000.0)  # two readings 33% apart: the CPU's rule would take more
    assert peaks("cuda", probe)["gbps"] == 3000.0
    assert probe.calls == 1


def test_a_cpu_with_no_history_still_confirms_its_first_measurement() -> None:
    probe = Probe(16.3, 14.9, 15.0)
    peaks("cpu", probe)
    assert probe.calls == 3  # a CPU shares its bus: a busy first reading is not kept


@pytest.mark.usefixtures("a_gpu")
def test_a_failed_calibration_is_recorded_and_not_repeated(private_cache: Path) -> None:
    probe = Probe(GraderError("the copy kernel graded wrong"), 3000.0)
    with pytest.raises(GraderError, match="copy kernel graded wrong"):
        peaks("cuda", probe)
    (state,) = stored(private_cache).values()
    assert "copy kernel graded wrong" in str(state["failed"]) and "running" not in state
    for _ in range(3):  # later gradings: the recorded failure, at once, no measurement
        with pytest.raises(CalibrationFailed, match="calibrate --device cuda --refresh"):
            peaks("cuda", probe, now=NOW + 60)
    assert probe.calls == 1
    assert peaks("cuda", probe, now=NOW + 60, refresh=True)["gbps"] == 3000.0  # the retry
    assert probe.calls == 2
    (state,) = stored(private_cache).values()
    assert "failed" not in state
    assert peaks("cuda", probe, now=NOW + 120)["gbps"] == 3000.0  # no measurement needed
    assert probe.calls == 2


def test_a_failure_stands_until_the_retry_period_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRADERS_CALIBRATION_RETRY_S", "600")
    probe = Probe(RuntimeError("no bandwidth"), 15.0, 15.0)
    with pytest.raises(RuntimeError):
        peaks("cpu", probe)
    with pytest.raises(CalibrationFailed, match="no bandwidth"):
        peaks("cpu", probe, now=NOW + 599)
    assert peaks("cpu", probe, now=NOW + 601)["gbps"] == 15.0
    assert probe.calls == 3


_DIES_CALIBRATING = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from graders.measure import calibrate
def dies(device, slot):
    os.kill(os.getpid(), signal.SIGKILL)  # as gpu-check kills a step at its budget
calibrate.peaks("cpu", slot=0, measure=dies)
"""


def test_a_calibration_whose_process_was_killed_counts_as_failed(private_cache: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _DIES_CALIBRATING.format(repo=str(REPO))],
        env={**os.environ, "GRADERS_CACHE_DIR": str(private_cache)},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    (state,) = stored(private_cache).values()
    assert "running" in state  # the mark it could not take back
    probe = Probe(15.0, 15.0)
    with pytest.raises(CalibrationFailed, match="never finished"):
        peaks("cpu", probe, now=time.time())
    assert probe.calls == 0
    assert peaks("cpu", probe, now=time.time(), refresh=True)["gbps"] == 15.0


_HOLDS_THE_LOCK = """
import sys, time
sys.path.insert(0, {repo!r})
from graders.measure import calibrate
with calibrate.calibration_lock("cuda"):
    open({ready!r}, "w").close()
    time.sleep(300)
"""


@pytest.fixture
def lock_held_elsewhere(private_cache: Path) -> Iterator[None]:
    ready = private_cache / "ready"
    code = _HOLDS_THE_LOCK.format(repo=str(REPO), ready=str(ready))
    child = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "GRADERS_CACHE_DIR": str(private_cache)}
    )
    try:
        while not ready.exists():  # waits for the child, however slow the machine
            assert child.poll() is None, "the child holding the lock exited"
            time.sleep(0.05)
        yield
    finally:
        child.kill()
        child.wait()


@pytest.mark.usefixtures("a_gpu", "lock_held_elsewhere")
def test_a_calibration_waits_for_the_one_another_process_runs() -> None:
    probe = Probe(3000.0)
    with pytest.raises(GraderError, match=r"another process's cuda calibration held .* past 0 s"):
        peaks("cuda", probe, lock_wait_s=0.0)
    assert probe.calls == 0


@pytest.mark.usefixtures("a_gpu")
def test_a_grading_that_waited_uses_what_the_other_calibration_measured() -> None:
    measuring, release = threading.Event(), threading.Event()

    def slow(device: str, slot: int) -> Measurement:
        measuring.set()  # inside the calibration, holding the lock
        release.wait(60)
        return {"gbps": 3000.0, "flops_per_s": 1e12, "flush_bytes": None, "method": "slow"}

    first: list[dict[str, object]] = []
    thread = threading.Thread(
        target=lambda: first.append(calibrate.peaks("cuda", slot=0, measure=slow))
    )
    thread.start()
    assert measuring.wait(60)
    second = Probe(1000.0)
    waiting = threading.Thread(target=lambda: first.append(peaks("cuda", second, now=time.time())))
    waiting.start()
    release.set()
    thread.join(60)
    waiting.join(60)
    # The second found the lock held, waited, and read what the first measured.
    assert second.calls == 0
    assert [result["gbps"] for result in first] == [3000.0, 3000.0]
