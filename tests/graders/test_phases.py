"""Phase plumbing that needs no sandbox: what a failure to pause the sandbox is blamed on."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from graders import GraderError, devices
from graders.grading import arena
from graders.grading.phases import CallTiming, Grader, Outcome, Run
from graders.spec.exercise import ExerciseSpec


class _Unstoppable:
    kind = "signals"

    def freeze(self) -> None:
        raise GraderError("the sandbox could not be frozen within 2.0 s: it kept forking")


def test_a_sandbox_that_cannot_be_paused_is_the_students_error(quick_spec: ExerciseSpec) -> None:
    # A grader failure costs the student nothing, so a fork storm that defeats the freezer
    # must end as the submission's error, or every failing attempt could be made free.
    inputs = arena.InputArena(4096)
    grader = Grader(quick_spec, "cpu", 0, inputs, devices.for_kind("cpu", 0, flush=False))
    session = SimpleNamespace(process=SimpleNamespace(containment=_Unstoppable()))
    run = Run(quick_spec, "cpu", cast(Any, session), cast(Any, None))
    with pytest.raises(Outcome) as ended:
        grader.pause(run, "after your file was imported")
    assert ended.value.verdict == "error"
    assert "could not be paused after your file was imported" in ended.value.message
    assert "kept forking" in ended.value.message


def _timing(**changes: int) -> CallTiming:
    figures = {"window_ns": 10_000_000, "net_ns": 9_000_000, "cpu_ns": 9_000_000}
    return CallTiming(**{"excess_idle_ns": 0, "claimed_ns": 8_800_000, **figures, **changes})


def test_a_call_is_measured_again_when_the_sandbox_or_the_grader_waited_for_a_core() -> None:
    assert not _timing().disturbed()
    # The sandbox sat idle (preempted) for 3 ms of a 10 ms window.
    assert _timing(excess_idle_ns=3_000_000).disturbed()
    # The grader itself waited 3 ms for its core before it could read `done` and freeze:
    # the window is stretched though the sandbox did nothing wrong.
    assert _timing(our_wait_ns=3_000_000).disturbed()
    # Waits within the slack are the machine's ordinary jitter.
    assert not _timing(excess_idle_ns=100_000, our_wait_ns=100_000).disturbed()
