"""
class = "malformed"
attack = "writes a done message whose out is a string, where a dict belongs, on the results fd"
verdict = "error"
points = 0
message = "malformed message"
"""

import gc
import json
import sys

import torch

channel_class = sys.modules["harness.main"].Channel


def results() -> object:
    return next(o for o in gc.get_objects() if isinstance(o, channel_class))._out


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = results()
    out.write(json.dumps({"op": "done", "ns": 5, "outs": "Tensor"}) + "\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]
    return a + b
