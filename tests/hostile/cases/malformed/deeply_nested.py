"""
class = "malformed"
attack = "writes a done whose out is nested 200000 lists deep (a recursion bomb for a parser)"
verdict = "error"
points = 0
message = "private channel"
"""

import gc
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
    depth = 200_000
    channel._out.write('{"op": "done", "ns": 1, "outs": ' + "[" * depth + "]" * depth + "}\n")
    channel._out.flush()
    return a + b
