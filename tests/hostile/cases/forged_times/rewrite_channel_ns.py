"""
class = "forged_times"
attack = "wraps the harness Channel's send so every done message carries ns = 1"
verdict = "correct"
points = 0
flags = ["timing_inconsistent"]
"""

import sys
import time
from typing import Any

import torch

channel_class: Any = sys.modules["harness.main"].Channel
original = channel_class.send


def forged_send(self: Any, op: str, **fields: Any) -> None:
    if op == "done":
        fields["ns"] = 1
    original(self, op, **fields)


channel_class.send = forged_send


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
