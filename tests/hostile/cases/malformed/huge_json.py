"""
class = "malformed"
attack = "writes a 64 MiB JSON line on the results fd during a call"
verdict = "error"
points = 0
message = "oversized"
"""

import gc
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
    padding = "x" * (64 << 20)
    channel._out.write('{"op": "done", "ns": 1, "pad": "' + padding + '"}\n')
    channel._out.flush()
    return a + b
