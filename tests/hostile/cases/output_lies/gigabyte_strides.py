"""
class = "output_lies"
attack = "describes the right shape with a stride that makes the output span terabytes"
verdict = "error"
points = 0
message = "could not be read"
"""

import sys
from typing import Any

import torch

harness: Any = sys.modules["harness.main"]
original = harness._describe_output


def lying(value: Any) -> tuple[dict[str, Any], Any]:
    described, kept = original(value)
    if described.get("shape") and described["shape"][0] > 1:
        described["strides"] = [1 << 40]
    return described, kept


harness._describe_output = lying


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
