"""Calibration history: bounds, median, re-measure rules, schedule, old files (no timing)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest
import torch

from graders.measure import calibrate
from graders.measure.calibrate import Measurement

DAY = 86400.0
NOW = 1_800_000_000.0


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRADERS_RECALIBRATE_DAYS", raising=False)
    return tmp_path


class FakeProbe:
    """Stands for the child-process measurement: returns the given GB/s in turn."""

    def __init__(self, values: Iterable[float]) -> None:
        self.values = iter(values)
        self.calls = 0

    def __call__(self, device: str, slot: int) -> Measurement:
        self.calls += 1
        gbps = next(self.values)
        return {"gbps": gbps, "flops_per_s": gbps * 1e10, "flush_bytes": 64 << 20, "method": "fake"}


def entry(gbps: float, timestamp: float = NOW) -> Measurement:
    return {
        "gbps": gbps,
        "flops_per_s": gbps * 1e10,
        "flush_bytes": 64 << 20,
        "timestamp": timestamp,
        "memory": calibrate.MEMORY,
    }


def store_path(cache: Path) -> Path:
    return cache / "peaks.json"


def stored_history(cache: Path) -> list[Measurement]:
    (value,) = json.loads(store_path(cache).read_text()).values()
    return value["history"]


def write_history(cache: Path, history: list[Measurement]) -> None:
    key = f"cpu|{calibrate.device_name('cpu')}|threads=1|torch={torch.__version__}"
    store_path(cache).write_text(json.dumps({key: {"format": 2, "history": history}}))


def peaks(probe: FakeProbe, now: float = NOW, refresh: bool = False) -> dict:
    return calibrate.peaks("cpu", refresh, slot=0, measure=probe, now=lambda: now)


def test_history_is_bounded() -> None:
    history: list[Measurement] = []
    for i in range(30):
        value = 15.0 + (i % 2) * 0.01
        history = calibrate.remeasure(history, lambda: entry(value))  # noqa: B023
    assert len(history) == calibrate.HISTORY_LIMIT


def test_history_is_bounded_in_the_store(private_cache: Path) -> None:
    probe = FakeProbe([15.0] * 100)
    for day in range(30):
        peaks(probe, now=NOW + day * 8 * DAY)  # each call past the schedule
    assert len(stored_history(private_cache)) == calibrate.HISTORY_LIMIT


def test_the_peak_is_the_median_of_recent_measurements(private_cache: Path) -> None:
    old = [entry(30.0)] * 10  # beyond the recent window: no longer counts
    write_history(
        private_cache, [*old, entry(14.9), entry(15.0), entry(15.4), entry(14.8), entry(15.1)]
    )
    probe = FakeProbe([])
    result = peaks(probe)
    assert probe.calls == 0
    assert result["gbps"] == 15.0
    assert result["flops_per_s"] == 15.0e10
    assert result["flush_bytes"] == 64 << 20
    assert result["history_gbps"] == [14.9, 15.0, 15.4, 14.8, 15.1]


def test_the_flush_size_is_the_largest_recent_one(private_cache: Path) -> None:
    history = [dict(entry(15.0), flush_bytes=mib << 20) for mib in (512, 64, 128, 32, 64, 64)]
    write_history(private_cache, history)
    assert peaks(FakeProbe([]))["flush_bytes"] == 128 << 20  # 512 MiB is no longer recent


def test_first_use_measures_until_two_agree(private_cache: Path) -> None:
    probe = FakeProbe([16.3, 14.9, 15.0])
    result = peaks(probe)
    assert probe.calls == 3
    assert [m["gbps"] for m in stored_history(private_cache)] == [14.9, 15.0]
    assert result["gbps"] == pytest.approx(14.95)
    assert all("load_average_1m" in m and "measured_at" in m for m in stored_history(private_cache))


def test_a_latest_measurement_more_than_3_percent_off_is_measured_again(
    private_cache: Path,
) -> None:
    write_history(private_cache, [entry(14.9), entry(14.9), entry(15.0), entry(16.3)])
    assert calibrate.due(stored_history(private_cache), NOW, 7 * DAY)
    probe = FakeProbe([14.95])
    result = peaks(probe)
    assert probe.calls == 1
    assert result["gbps"] == pytest.approx(14.95)


def test_within_3_percent_is_not_measured_again(private_cache: Path) -> None:
    write_history(private_cache, [entry(14.9), entry(14.9), entry(15.0), entry(15.3)])
    assert calibrate.due(stored_history(private_cache), NOW, 7 * DAY) is None
    probe = FakeProbe([])
    peaks(probe)
    assert probe.calls == 0


def test_a_disagreeing_measurement_is_repeated_and_dropped(private_cache: Path) -> None:
    write_history(private_cache, [entry(14.9), entry(15.0), entry(14.9)])
    probe = FakeProbe([16.3, 14.95])  # one taken while the machine was busy, then a quiet one
    result = peaks(probe, refresh=True)
    assert probe.calls == 2
    assert [m["gbps"] for m in stored_history(private_cache)] == [14.9, 15.0, 14.9, 14.95]
    assert result["gbps"] == pytest.approx(14.925)


def test_attempts_are_bounded_and_a_real_change_wins(private_cache: Path) -> None:
    write_history(private_cache, [entry(15.0)] * 5)
    probe = FakeProbe([20.0, 20.1, 20.0, 20.05, 20.0])
    result = peaks(probe, refresh=True)
    assert probe.calls == 3  # the third makes the new speed the median of the recent five
    assert result["gbps"] == 20.0
    probe = FakeProbe([21.0, 9.0, 30.0, 5.0, 40.0])
    write_history(private_cache, [entry(15.0)] * 5)
    peaks(probe, refresh=True)
    assert probe.calls == calibrate.MAX_ATTEMPTS


def test_the_schedule(private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_history(private_cache, [entry(15.0, NOW), entry(15.0, NOW)])
    probe = FakeProbe([15.0] * 10)
    peaks(probe, now=NOW + 6.9 * DAY)
    assert probe.calls == 0
    peaks(probe, now=NOW + 7.1 * DAY)
    assert probe.calls == 1
    stamp = stored_history(private_cache)[-1]["timestamp"]
    assert stamp == NOW + 7.1 * DAY
    monkeypatch.setenv("GRADERS_RECALIBRATE_DAYS", "1")
    peaks(probe, now=stamp + 0.9 * DAY)
    assert probe.calls == 1
    peaks(probe, now=stamp + 1.1 * DAY)
    assert probe.calls == 2


def test_an_old_single_value_file_is_upgraded(private_cache: Path) -> None:
    key = f"cpu|{calibrate.device_name('cpu')}|threads=1|torch={torch.__version__}"
    old = {
        "gbps": 16.3,
        "flops_per_s": 1e11,
        "method": "triad a=b+s*c over 3x64 MiB, best of runs",
        "datasheet_gbps": None,
        "datasheet_flops_per_s": None,
        "device_name": "cpu",
        "measured_at": "2026-11-01T10:00:00Z",
    }
    other = {"cuda|H200|threads=1|torch=x": dict(old, gbps=4000.0)}
    store_path(private_cache).write_text(json.dumps({key: old, **other}))
    upgraded = calibrate.upgrade(old)
    (legacy,) = upgraded["history"]
    assert legacy["legacy"] and legacy["gbps"] == 16.3
    assert legacy["timestamp"] == 1793527200.0  # 2026-11-01T10:00:00Z
    assert calibrate.upgrade(upgraded) is upgraded

    probe = FakeProbe([14.9, 15.0])
    result = peaks(probe)
    assert probe.calls == 2  # taken differently, the old figure cannot stand for the peak
    assert result["gbps"] == pytest.approx(14.95)
    stored = json.loads(store_path(private_cache).read_text())
    assert stored[key]["format"] == calibrate.FORMAT
    assert [m["gbps"] for m in stored[key]["history"]] == [16.3, 14.9, 15.0]
    assert stored["cuda|H200|threads=1|torch=x"] == other["cuda|H200|threads=1|torch=x"]


def test_unreadable_store_measures_afresh(private_cache: Path) -> None:
    store_path(private_cache).write_text("{not json")
    probe = FakeProbe([15.0, 15.0])
    assert peaks(probe)["gbps"] == 15.0


def test_the_public_fields_stay(private_cache: Path) -> None:
    result = peaks(FakeProbe([15.0, 15.0]))
    for field in ("gbps", "flops_per_s", "method", "datasheet_gbps", "device_name", "measured_at"):
        assert field in result


def test_the_working_set_is_vector_adds_timed_size() -> None:
    assert calibrate.timed_elements("cpu") == 16777216
    assert calibrate.timed_elements("cuda:0") == 268435456


def test_a_peak_measured_on_another_kind_of_memory_no_longer_counts(private_cache: Path) -> None:
    # Gradings read their inputs from private memory now; a peak taken on shared memory
    # (about 3% slower here) would make every fraction of peak read high.
    shared = [{**entry(14.0, NOW - DAY), "memory": "memfd"}, {**entry(14.1, NOW - DAY)}]
    del shared[1]["memory"]
    write_history(private_cache, shared)
    probe = FakeProbe([15.0, 15.0])
    assert peaks(probe)["gbps"] == 15.0
    assert probe.calls == 2
    assert [m["gbps"] for m in stored_history(private_cache)] == [14.0, 14.1, 15.0, 15.0]
