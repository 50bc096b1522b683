"""
class = "after_the_grade"
attack = "correct in every graded call; kills its own process when called by the profiler"
verdict = "correct"
points = 0
profile = true

How it would gain: as close_fds_while_profiled.py, a failure in the informative profile,
taken after the grade is decided, must not undo the grade. Here the harness's process ends
at once (os._exit, no exception to catch, no message sent) inside the profiled call, so
the trusted side finds the sandbox gone while it waits for the profile, and then again
when it ends the sandbox and reads its output. If any of those steps raised, a finished
grading would become a grader failure (no report; nothing counted against the student).

What the engine must do: keep the grade it decided (correct here), and at most lose the
profile, with a note; never a GraderError.
"""

import os
import sys
import time
from types import FrameType

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
        os._exit(3)
    time.sleep(0.05)
    return a + b
