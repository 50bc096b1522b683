"""
class = "output_lies"
attack = "patches the harness so the output description points at an unmapped address"
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
    if described.get("address"):
        described["address"] = 0x10
    return described, kept


harness._describe_output = lying


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
