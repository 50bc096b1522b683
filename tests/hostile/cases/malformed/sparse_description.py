"""
class = "malformed"
attack = "describes its output as a sparse COO tensor (indices, values, layout) in a forged done"
verdict = "error"
points = 0
message = "malformed message"
"""

import gc
import sys
from typing import Any

import torch

channel_class = sys.modules["harness.main"].Channel


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    channel: Any = next(o for o in gc.get_objects() if isinstance(o, channel_class))
    c = a + b
    channel.send(
        "done",
        ns=1,
        out={
            "type": "Tensor",
            "layout": "sparse_coo",
            "shape": list(c.shape),
            "strides": [1],
            "dtype": "float32",
            "device": "cpu",
            "address": c.data_ptr(),
            "indices": [[0]],
            "values": [1.0],
        },
    )
    return c
