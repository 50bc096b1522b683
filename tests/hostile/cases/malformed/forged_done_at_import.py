"""
class = "malformed"
attack = "sends a done message while being imported, where loaded is expected"
verdict = "error"
points = 0
message = "malformed message"
"""

import gc
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel
channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
channel.send("done", ns=1, outs=[{"type": "Tensor"}])


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
