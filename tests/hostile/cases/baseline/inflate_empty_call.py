"""
class = "baseline"
attack = "patches the harness's empty call and go handling to sleep, hoping the baseline grows"
verdict = "correct"
points = 0
"""

import sys
import time
from typing import Any

import torch

harness: Any = sys.modules["harness.main"]


def slow_empty(*tensors: Any) -> Any:
    time.sleep(0.01)
    return tensors[0] if tensors else None


harness._empty = slow_empty
original_call = harness._call


def slow_call(function: Any, *args: Any) -> Any:
    if function is not vector_add:
        time.sleep(0.01)
    return original_call(function, *args)


harness._call = slow_call


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
