"""
class = "after_the_grade"
attack = "makes the timed phase stop on its 2nd call, then leaves the control pipe with no reader"
verdict = "correct"
points = 0
profile = true

How it would gain: once the timed phase stops, the grade is decided, and the trusted side
takes the informative profile: it thaws the sandbox and writes `profile` down the control
pipe. If the harness no longer reads that pipe, the write fails (EPIPE), and that failure
escaped as an error of the grader itself: no report, the CLI exits 1, and a worker stores a
grader failure (not gradable, no attempt used) in place of the grade. A student could so
turn any grading into one that costs nothing, and make the grader look broken.

The submission must break the pipe in the last timed call and no earlier (the next `go`
would fail, an error of its own). It chooses that call: the phase stops once the calls
so far plus twice the last reach 80 % of its budget, so one kept call of 2 s (spinning, not
asleep) after the warm-up stops a phase of 6 s at once. At the end of that call the
harness's control fd is made to read a pipe of the submission's own (os.dup2), which
never delivers a byte: the trusted side's pipe has no reader left, while the harness waits
quietly, alive, so the output of the call is read and verified as usual. Every call is
correct; the one timed call kept takes 2 s, so no performance points.

What the engine must do: keep the grade it decided (correct, 0 points), lose at most the
profile, with a note, and never raise a GraderError.
"""

import gc
import os
import sys
import time
from typing import Any

import torch

harness = sys.modules["harness.main"]
timed = {"calls": 0}
kept: list[int] = []  # our own pipe's write end, open so its read end never sees EOF


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = a + b
    if a.numel() < 100_000:
        return out  # a check call
    timed["calls"] += 1
    if timed["calls"] == 2:  # the first kept call: make it the last
        spin(2.0)
        channel: Any = next(o for o in gc.get_objects() if isinstance(o, harness.Channel))
        read, write = os.pipe()
        kept.append(write)
        os.dup2(read, channel._in.fileno())  # the grader's control pipe loses its reader
    return out
