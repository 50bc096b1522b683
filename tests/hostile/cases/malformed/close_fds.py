"""
class = "malformed"
attack = "closes the results and control fds from inside a call"
verdict = "error"
points = 0
message = "exited with status"
"""

import gc
import os
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
    os.close(channel._out.fileno())
    os.close(channel._in.fileno())
    return a + b
