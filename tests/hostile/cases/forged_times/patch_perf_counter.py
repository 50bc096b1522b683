"""
class = "forged_times"
attack = "replaces time.perf_counter_ns, perf_counter, monotonic and time with frozen clocks"
verdict = "correct"
points = 0
"""

import time

import torch

_sleep = time.sleep
time.perf_counter_ns = lambda: 1_000
time.perf_counter = lambda: 1e-6
time.monotonic = lambda: 1.0
time.monotonic_ns = lambda: 1_000
time.time = lambda: 1.0


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _sleep(0.05)
    return a + b
