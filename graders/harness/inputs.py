"""Deterministic input generation from a seed; it runs on the trusted side only.

The trusted side draws a fresh secret seed per call and fills the inputs into the shared
arena from it (graders/grading/arena.py) while the sandbox is frozen; it draws the very same tensors
again from the same seed to compute the expected output. The harness imports this module
only for ``DTYPES``: no seed and no expected output ever enters the sandbox.

Distributions (``dist`` of a layout item; ``scale`` defaults to 1):

* ``normal``: N(0, scale); ``uniform``: U(-scale, scale); ``randint``: integers in
  [0, scale) (any integer or bool buffer is filled this way whatever its ``dist``);
* the adversarial ones, which exercise ``[[check_cases]]`` pick to make sloppy numerics
  fail (a "row" is the last dimension; a 0- or 1-d tensor is one row):

  - ``near_constant_rows``: each row is a random offset N(0, scale) plus noise
    N(0, (spread * scale)^2), ``spread`` default 1e-4: a row's variance is ~0, so a
    LayerNorm that forgets ``eps`` divides by ~0;
  - ``large``: N(0, scale) with a large ``scale`` (e.g. 1e4), so exp() overflows float32
    unless the row maximum is subtracted first;
  - ``offset``: N(0, scale) + ``shift`` (e.g. logits around +100);
  - ``extreme_scale``: N(0, 1) times a per-row factor 10^u, u ~ U(-scale, scale).
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

# The spec parser (graders/spec/exercise.py, which must not import torch for this) keeps its own
# copy of these names; a test checks the two agree.
DISTRIBUTIONS = (
    "normal",
    "uniform",
    "randint",
    "near_constant_rows",
    "large",
    "offset",
    "extreme_scale",
)
DEFAULT_SPREAD = 1e-4


def allocate(layout: list[dict[str, Any]], device: str) -> list[torch.Tensor]:
    """One empty buffer per input; ``layout`` items carry name, shape, dtype, dist, scale."""
    return [
        torch.empty(item["shape"], dtype=DTYPES[item["dtype"]], device=device) for item in layout
    ]


def per_row(tensor: torch.Tensor) -> torch.Tensor:
    """An empty buffer with one value per row of ``tensor``, broadcastable against it."""
    shape = (*tensor.shape[:-1], 1) if tensor.dim() > 0 else ()
    return torch.empty(shape, dtype=tensor.dtype, device=tensor.device)


def fill_(tensors: list[torch.Tensor], layout: list[dict[str, Any]], seed: int) -> None:
    """Overwrite every buffer with values drawn from ``seed`` (same result on any process)."""
    generator = torch.Generator(device=tensors[0].device if tensors else "cpu")
    generator.manual_seed(seed)
    for tensor, item in zip(tensors, layout, strict=True):
        scale = float(item.get("scale", 1.0))
        dist = item.get("dist", "normal")
        # The first three branches draw exactly as before the adversarial kinds existed:
        # graded inputs (and the tests pinning them) must not change.
        if dist == "randint" or not tensor.is_floating_point():
            high = 2 if tensor.dtype == torch.bool else max(1, int(scale))
            tensor.random_(0, high, generator=generator)
        elif dist == "uniform":
            tensor.uniform_(-scale, scale, generator=generator)
        elif dist == "near_constant_rows":
            spread = float(item.get("spread", DEFAULT_SPREAD))
            offsets = per_row(tensor).normal_(0.0, scale, generator=generator)
            tensor.normal_(0.0, spread * scale, generator=generator).add_(offsets)
        elif dist == "offset":
            tensor.normal_(0.0, scale, generator=generator).add_(float(item.get("shift", 0.0)))
        elif dist == "extreme_scale":
            # Exponents drawn in float64 so 10^u is exact enough in any dtype it is cast to.
            exponents = torch.empty(
                per_row(tensor).shape, dtype=torch.float64, device=tensor.device
            )
            exponents.uniform_(-scale, scale, generator=generator)
            tensor.normal_(0.0, 1.0, generator=generator).mul_(
                torch.pow(10.0, exponents).to(tensor.dtype)
            )
        else:  # normal, and large (a normal whose scale the case makes large)
            tensor.normal_(0.0, scale, generator=generator)


def make(layout: list[dict[str, Any]], seed: int, device: str) -> list[torch.Tensor]:
    tensors = allocate(layout, device)
    fill_(tensors, layout, seed)
    return tensors
