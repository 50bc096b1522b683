"""Phase plumbing that needs no sandbox: what a failure to pause the sandbox is blamed on."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, cast

import pytest

from graders import GraderError, devices, grade
from graders.grading import arena
from graders.grading.phases import CallTiming, Grader, Outcome, Run
from graders.sandbox import kernel_threads
from graders.sandbox import launch as sandbox
from graders.sandbox.containment import StallMark, stalled_between, waited_between
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
    return CallTiming(**{"stalled_ns": 0, "claimed_ns": 8_800_000, **figures, **changes})


def test_a_call_is_measured_again_when_the_sandbox_or_the_grader_waited_for_a_core() -> None:
    assert not _timing().disturbed()
    # The sandbox wanted its core and something else had it for 3 ms of a 10 ms window.
    assert _timing(stalled_ns=3_000_000).disturbed()
    # The grader itself waited 3 ms for its core before it could read `done` and freeze:
    # the window is stretched though the sandbox did nothing wrong.
    assert _timing(our_wait_ns=3_000_000).disturbed()
    # Waits within the slack are the machine's ordinary jitter.
    assert not _timing(stalled_ns=100_000, our_wait_ns=100_000).disturbed()
    # A call that slept of its own accord is idle, not stalled: its time is its own.
    assert not _timing(cpu_ns=2_000_000).disturbed()


def test_only_a_stall_the_submission_cannot_cause_is_excused() -> None:
    """Issue 29, class 3: pressure figures (cgroup v2) are taken as they are; from per-task
    counters a task's wait counts only beyond the CPU time its siblings had, since the
    sandbox's own tasks taking turns on its core would otherwise read as a disturbance."""
    assert waited_between(1_000, 4_000_000, 0) == 3_999_000
    assert waited_between(5, 3, 0) == 0
    one = {7: (100, 50)}
    assert waited_between(one, {7: (9_000_100, 2_000_050)}, 9_000_000) == 2_000_000
    # It slept: no CPU and no wait in the window, nothing to excuse.
    assert waited_between(one, {7: (100, 50)}, 0) == 0
    # Two tasks of its own ran and both waited (for each other, as far as anyone can tell).
    two = {7: (0, 0), 8: (0, 0)}
    ran = {7: (5_000_000, 4_000_000), 8: (4_000_000, 5_000_000)}
    assert waited_between(two, ran, 9_000_000) == 0
    # A task born in the window could have taken the core for as long as it ran, no more.
    assert waited_between(one, {7: (200, 3_000_050), 9: (10, 10)}, 110) == 2_999_990
    # One that ran and is gone too: the group's CPU time is more than the tasks left show.
    assert waited_between(one, {7: (1_000_100, 3_000_050)}, 5_000_000) == 0
    # Its siblings ran a little (woken by the thaw's SIGCONT): only that much is theirs.
    ran = {7: (9_000_100, 2_000_050), 8: (20_000, 0)}
    assert waited_between({7: (100, 50), 8: (0, 0)}, ran, 9_020_000) == 1_980_000
    assert waited_between(3, one, 0) == 0
    # The wait less the kernel's threads' time on the core, which the sandbox can summon.
    bound, unbound = {30: (1_000, True)}, {40: (0, False)}
    kernel_after = {30: (2_501_000, True), 40: (700_000, False), 50: (300_000, True)}
    before = StallMark(1_000, {**bound, **unbound})
    # 3_999_000 waited; the bound thread ran 2_500_000 and one born in between 300_000.
    assert stalled_between(before, StallMark(4_000_000, kernel_after), 0) == 1_199_000
    # An unbound thread last seen elsewhere at both readings ran elsewhere, as far as /proc says.
    assert kernel_threads.CoreKernelTime.between(unbound, {40: (700_000, False)}) == 0
    assert kernel_threads.CoreKernelTime.between(unbound, {40: (700_000, True)}) == 700_000
    assert stalled_between(before, StallMark(2_000_000, kernel_after), 0) == 0
    assert kernel_threads.parse_cpu_list("0-2,5") == {0, 1, 2, 5}


@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs a core apart from the grading one"
)
def test_between_calls_the_grader_works_on_the_idle_grading_core_and_leaves_it_for_each_call(
    quick_spec: ExerciseSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between calls every sandbox on the grading core is frozen: the inputs' copies and the
    # checks run there, off the cores that serve the site; a call's window needs it free.
    core = sandbox.pick_core(0)
    seen: list[tuple[str, set[int]]] = []
    real_place, real_thaw = Grader.place_inputs, Grader.thaw
    real_time_calls = Grader.time_calls
    timing = False

    def place_inputs(grader: Grader, *args: Any, **kwargs: Any) -> None:
        if timing:
            seen.append(("place", os.sched_getaffinity(0)))
        real_place(grader, *args, **kwargs)

    def thaw(grader: Grader, run: Run, where: str) -> None:
        if timing:
            seen.append(("thaw", os.sched_getaffinity(0)))
        real_thaw(grader, run, where)

    def time_calls(grader: Grader, *args: Any, **kwargs: Any) -> Any:
        nonlocal timing
        timing = True
        try:
            return real_time_calls(grader, *args, **kwargs)
        finally:
            timing = False

    monkeypatch.setattr(Grader, "place_inputs", place_inputs)
    monkeypatch.setattr(Grader, "thaw", thaw)
    monkeypatch.setattr(Grader, "time_calls", time_calls)
    before = os.sched_getaffinity(0)
    source = (quick_spec.path / "samples" / "fast.py").read_text()
    report = grade(quick_spec, source, device="cpu", slot=0, profile=False)
    assert report["verdict"] == "correct", report["message"]
    places = [cores for what, cores in seen if what == "place"]
    thaws = [cores for what, cores in seen if what == "thaw"]
    assert places and all(cores == {core} for cores in places)
    assert thaws and all(core not in cores for cores in thaws)
    assert os.sched_getaffinity(0) == before  # given back once the phase is over
