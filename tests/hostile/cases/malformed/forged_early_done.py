"""
class = "malformed"
attack = "sends a correct done early, then the harness sends its own: later calls read stale ones"
verdict = "wrong"
points = 0
"""

import gc
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel
kept: list[torch.Tensor] = []


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    c = a + b
    kept.append(c)  # every output stays alive, so a stale description still points at data
    if a.numel() > 100_000:
        channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
        out = {"type": "Tensor", "shape": [c.numel()], "strides": [1], "dtype": "float32",
               "device": "cpu", "address": c.data_ptr()}  # fmt: skip
        channel.send("done", ns=1, outs=[out])
    return c
