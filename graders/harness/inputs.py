"""Deterministic input generation from a seed, shared by harness and trusted side.

The trusted side picks a fresh secret seed per call and sends it just before the
call; the harness fills the input buffers in place from it. The trusted side later
regenerates the very same tensors from the same seed to compute the expected output,
so no input or expected output ever needs to travel through student-writable files.
"""

from __future__ import annotations

from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


def allocate(layout: list[dict[str, Any]], device: str) -> list[torch.Tensor]:
    """One empty buffer per input; ``layout`` items carry name, shape, dtype, dist, scale."""
    return [
        torch.empty(item["shape"], dtype=DTYPES[item["dtype"]], device=device) for item in layout
    ]


def fill_(tensors: list[torch.Tensor], layout: list[dict[str, Any]], seed: int) -> None:
    """Overwrite every buffer with values drawn from ``seed`` (same result on any process)."""
    generator = torch.Generator(device=tensors[0].device if tensors else "cpu")
    generator.manual_seed(seed)
    for tensor, item in zip(tensors, layout, strict=True):
        scale = float(item.get("scale", 1.0))
        dist = item.get("dist", "normal")
        if dist == "randint" or not tensor.is_floating_point():
            high = 2 if tensor.dtype == torch.bool else max(1, int(scale))
            tensor.random_(0, high, generator=generator)
        elif dist == "uniform":
            tensor.uniform_(-scale, scale, generator=generator)
        else:
            tensor.normal_(0.0, scale, generator=generator)


def make(layout: list[dict[str, Any]], seed: int, device: str) -> list[torch.Tensor]:
    tensors = allocate(layout, device)
    fill_(tensors, layout, seed)
    return tensors
