"""graders.sandbox.pin_thread: the calling thread moves to a core for a block, then back."""

from __future__ import annotations

import os

from graders.sandbox.pin_thread import on_core


def test_the_thread_runs_on_the_core_then_where_it_ran_before() -> None:
    before = os.sched_getaffinity(0)
    core = max(before)
    with on_core(core) as previous:
        assert previous == before
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before


def test_no_core_or_a_core_it_may_not_use_leaves_the_thread_where_it_is() -> None:
    before = os.sched_getaffinity(0)
    with on_core(None) as previous:
        assert previous is None
        assert os.sched_getaffinity(0) == before
    with on_core(4095) as previous:  # past any machine of this kind: the kernel refuses it
        assert previous is None
        assert os.sched_getaffinity(0) == before
    assert os.sched_getaffinity(0) == before
