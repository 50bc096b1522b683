"""
class = "operator_rule"
attack = "writes softmax out while any profiler or tracer is on, calls the library's otherwise"
verdict = "correct"
points = 0
message = "which computes the library's softmax"
exercise = "softmax"
compare = true

How it would gain: the profiled call was the only one checked for forbidden operators, and a
profiler announces itself (torch.autograd.profiler's flags, torch._C's profiler state, a
Python profile or trace hook, Kineto's environment). Code that writes softmax out only while
it sees one is honest in the one call that is checked and runs the library everywhere else:
full points.

What the engine must do: observe every call the same way, with nothing that differs
between a checked call and a scored one; the operators this code runs in its calls, timed or
not, are counted: correctness points only.
"""

import os
import sys
import threading

import torch


def observed() -> bool:
    profiler = torch.autograd.profiler
    return bool(
        getattr(profiler, "_is_profiler_enabled", False)
        or torch._C._autograd._profiler_enabled()
        or sys.getprofile() is not None
        or sys.gettrace() is not None
        or threading.getprofile() is not None
        or any(name.startswith(("KINETO", "TORCH_PROFILER")) for name in os.environ)
    )


def softmax(x: torch.Tensor) -> torch.Tensor:
    if observed():
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
    return torch.softmax(x, dim=-1)
