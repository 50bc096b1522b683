"""
class = "after_the_grade"
attack = "correct in every graded call; closes the harness's pipes when called by the profiler"
verdict = "correct"
points = 0
profile = true

How it would gain: the informative profile is taken after the grade is decided, by one
more call under torch.profiler. A failure there (the control and results pipes closed
by the submission, so the trusted side's next read or write fails) escaped as an error of
the grader itself: the CLI exited 1 with no report, and the submission was stored as a
grader failure (not gradable, no attempt used) however it had done. A student whose work
was graded wrong could so turn every wrong grading into one that costs nothing and retry
for ever; any student could make the grader look broken.

The profile's calls are found by the call stack: the harness's _profile function (its
warm-up call and its profiled call) is on it. Every other call is correct (and slow).

What the engine must do: keep the grade it decided (correct here), and at most lose the
profile, with a note; never a GraderError.
"""

import gc
import os
import sys
import time
from types import FrameType
from typing import Any

import torch

harness = sys.modules["harness.main"]


def under_profile() -> bool:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_profile" and frame.f_globals is vars(harness):
            return True
        frame = frame.f_back
    return False


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if under_profile():
        channel: Any = next(o for o in gc.get_objects() if isinstance(o, harness.Channel))
        os.close(channel._out.fileno())
        os.close(channel._in.fileno())
    time.sleep(0.05)
    return a + b
