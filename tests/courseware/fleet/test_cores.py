"""Two workers on one machine never time on the same core: each slot has its own core, a
grading holds its slot across processes, and a worker whose core is taken does not start
(test_registry.py)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import os
import time
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from courseware.fleet.identity import this_worker
from graders.sandbox import slots
from graders.sandbox.launch import pick_core


def test_each_slot_of_a_machine_times_on_a_core_of_its_own() -> None:
    cores = sorted(os.sched_getaffinity(0))
    chosen = [pick_core(slot) for slot in range(len(cores))]
    assert sorted(c for c in chosen if c is not None) == cores  # one core each, all distinct
    assert pick_core(0) == cores[-1]  # slot 0 keeps off core 0, where interrupts land


def test_workers_with_different_slots_get_different_timing_cores(settings: Settings) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one usable core: a second worker on this machine must not start at all")
    seen = {}
    for slot in (0, 1):
        settings.GRADERS_SLOT = slot
        seen[slot] = this_worker(f"cpu-{slot}@here").core
    assert seen[0] != seen[1] and None not in seen.values()


def hold(
    slot: int | None,
    ready: multiprocessing.queues.Queue[int],
    go: multiprocessing.synchronize.Event,
    out: multiprocessing.queues.Queue[tuple[int, int | None, float, float]],
    cache: str,
) -> None:
    """In a child process: hold a grading slot as a grading does, report its core and when."""
    os.environ["GRADERS_CACHE_DIR"] = cache
    os.environ["GRADERS_SLOTS"] = "2"
    with slots.acquire(slot) as held:
        start = time.monotonic()
        ready.put(held)
        go.wait(30)
        time.sleep(0.3)
        out.put((held, pick_core(held), start, time.monotonic()))


def test_two_gradings_at_once_never_share_a_core(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    # Two gradings with their own slots hold them at the same moment (both are ready before
    # either lets go); two more ask for any free slot, and one for a slot already held.
    first = [context.Process(target=hold, args=(s, ready, go, out, str(tmp_path))) for s in (0, 1)]
    for process in first:
        process.start()
    assert {ready.get(timeout=60), ready.get(timeout=60)} == {0, 1}
    later = [
        context.Process(target=hold, args=(s, ready, go, out, str(tmp_path)))
        for s in (None, None, 0)
    ]
    for process in later:
        process.start()
    go.set()
    for process in first + later:
        process.join(timeout=120)
        assert process.exitcode == 0
    held = [out.get(timeout=5) for _ in range(5)]
    for i, (slot_a, core_a, start_a, end_a) in enumerate(held):
        for slot_b, core_b, start_b, end_b in held[i + 1 :]:
            overlap = start_a < end_b and start_b < end_a
            if overlap:
                assert slot_a != slot_b and core_a != core_b, held
    both = [h for h in held if h[0] in (0, 1)]
    assert len({h[1] for h in both}) == 2  # the two slots mean two cores
