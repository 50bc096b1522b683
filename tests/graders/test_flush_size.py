"""The flush size: knee-finding over synthetic tables (never real timings), bounds, reuse."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from graders.measure import calibrate, flush_size
from graders.measure.flush_size import CAP_BYTES, MIB, MIN_BYTES, flush_bytes_from_table, knee_bytes

SIZES = [mib * MIB for mib in flush_size.PROBE_SIZES_MIB]


def table(per_byte: dict[int, float], default: float = 1.0) -> list[tuple[int, float]]:
    """(bytes, seconds) rows whose per-byte time is ``per_byte[MiB]`` (else ``default``)."""
    return [(size, size * per_byte.get(size // MIB, default)) for size in SIZES]


def test_a_clear_knee_gives_twice_the_last_fast_size() -> None:
    rows = table({4: 0.4, 8: 0.4, 16: 0.4, 32: 0.5})  # 64 MiB and up at the plateau (1.0)
    assert knee_bytes(rows) == 32 * MIB
    assert flush_bytes_from_table(rows) == 64 * MIB


def test_rows_in_any_order() -> None:
    rows = table({4: 0.4, 8: 0.4, 16: 0.4, 32: 0.5})
    assert flush_bytes_from_table(list(reversed(rows))) == 64 * MIB


def test_no_knee_at_all_gives_the_minimum() -> None:
    assert knee_bytes(table({})) == 0
    assert flush_bytes_from_table(table({})) == MIN_BYTES


def test_everything_cache_fast_gives_the_cap() -> None:
    # Every size below the largest is fast: the cache is at least half the largest probe.
    rows = table({mib: 0.3 for mib in flush_size.PROBE_SIZES_MIB[:-1]})
    assert knee_bytes(rows) == 128 * MIB
    assert flush_bytes_from_table(rows) == CAP_BYTES


def test_only_clearly_faster_sizes_count() -> None:
    # 10% faster than the plateau is noise, not a cache level (margin 15%).
    assert flush_bytes_from_table(table({4: 0.9, 8: 0.9, 16: 0.9})) == MIN_BYTES
    assert flush_bytes_from_table(table({4: 0.8, 8: 0.8, 16: 0.8})) == 32 * MIB


def test_the_largest_fast_size_wins_over_a_noisy_slower_one() -> None:
    rows = table({4: 0.4, 8: 0.4, 16: 1.0, 32: 0.5})
    assert knee_bytes(rows) == 32 * MIB


def test_a_small_cache_is_raised_to_the_minimum() -> None:
    assert flush_bytes_from_table(table({4: 0.3})) == MIN_BYTES  # 2 x 4 MiB = the minimum
    rows = [(1 * MIB, 0.1 * MIB), (2 * MIB, 0.1 * 2 * MIB), (64 * MIB, 64 * MIB)]
    assert flush_bytes_from_table(rows) == MIN_BYTES


def test_the_cap_bounds_the_flush() -> None:
    rows = table({mib: 0.3 for mib in flush_size.PROBE_SIZES_MIB[:-1]})
    assert flush_bytes_from_table(rows, cap=100 * MIB) == 100 * MIB


def test_degenerate_tables() -> None:
    assert knee_bytes([]) == 0
    assert knee_bytes([(64 * MIB, 1.0)]) == 0
    assert knee_bytes([(0, 1.0), (8 * MIB, 0.0), (64 * MIB, 1.0)]) == 0


def test_probe_sizes_stop_at_the_cap() -> None:
    assert flush_size.probe_sizes(32 * MIB) == [4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB]
    assert flush_size.probe_sizes(2 * MIB) == []


def test_measurement_applies_the_knee_and_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = table({4: 0.4, 8: 0.4, 16: 0.4, 32: 0.5, 64: 0.5})
    monkeypatch.setattr(flush_size, "knee_table", lambda cap: rows)
    assert flush_size.measure_flush_bytes("cpu") == 128 * MIB
    assert flush_size.measure_flush_bytes("cpu", cap=96 * MIB) == 96 * MIB


def test_knee_table_shape_and_thread_setting_restored() -> None:
    """Runs the real loop on small sizes with a fake clock: structure, not speed."""
    ticks = itertools.count(0, 1000)
    before = torch.get_num_threads()
    rows = flush_size.knee_table(cap=8 * MIB, reps=2, clock=lambda: next(ticks))
    assert [size for size, _ in rows] == [4 * MIB, 8 * MIB]
    assert all(seconds > 0 for _, seconds in rows)
    assert torch.get_num_threads() == before


def test_flusher_reuses_one_buffer_and_writes_a_new_value_each_time() -> None:
    flusher = flush_size.CacheFlusher(4 * MIB, "cpu")
    buffer = flusher.buffer
    assert flusher.nbytes == 4 * MIB and buffer.numel() * 4 == 4 * MIB
    first = int(buffer[0])
    flusher.flush()
    flusher.flush()
    assert flusher.buffer is buffer
    assert int(buffer[0]) == int(buffer[-1]) == first + 2


def test_the_cached_flush_size_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    calls: list[str] = []

    def measure(device: str, slot: int) -> calibrate.Measurement:
        calls.append(device)
        return {"gbps": 15.0, "flops_per_s": 1e11, "flush_bytes": 96 * MIB, "method": "fake"}

    assert calibrate.flush_bytes("cpu", slot=0, measure=measure) == 96 * MIB
    measured = len(calls)
    assert measured >= 1
    assert calibrate.flush_bytes("cpu", slot=0, measure=measure) == 96 * MIB
    assert len(calls) == measured  # read from the store, not measured again
