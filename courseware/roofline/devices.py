"""Devices on the roofline: their roofs, and the roofline arithmetic.

The datasheet figures are the checked ones (the chapter's fact check): A100 80GB SXM
2039 GB/s and 312 TFLOP/s dense bf16 on Tensor Cores, H100 SXM 3.35 TB/s and ~990 TFLOP/s,
H200 SXM 4.8 TB/s with the H100's compute. The FP32 roofs without Tensor Cores are the ones
the graders compare their measurements with (measure/calibrate.py's DATASHEETS); for the A100
the chapter gives the same 19.5 TFLOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

Roof = Literal["memory", "compute"]
# The arithmetic intensities the page can show (FLOP/B): the chart's x axis and the slider.
AI_MIN = 0.01
AI_MAX = 10_000.0


@dataclass(frozen=True)
class ComputeRoof:
    key: str
    label: str | Promise  # the precision and the units that reach it
    flops_per_s: float


@dataclass(frozen=True)
class Device:
    name: str
    kind: Literal["datasheet", "measured"]
    bandwidth_gbps: float
    roofs: tuple[ComputeRoof, ...]
    description: str | Promise = ""
    measured_at: datetime | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


BF16_TENSOR = "bf16-tensor"
FP32 = "fp32"

DATASHEET_DEVICES: tuple[Device, ...] = (
    Device(
        name="A100",
        kind="datasheet",
        bandwidth_gbps=2039.0,
        roofs=(
            ComputeRoof(BF16_TENSOR, _("BF16 on Tensor Cores (dense)"), 312e12),
            ComputeRoof(FP32, _("FP32 without Tensor Cores"), 19.5e12),
        ),
        description=_("NVIDIA A100 80 GB SXM, HBM2e, 108 SMs (datasheet)"),
    ),
    Device(
        name="H100",
        kind="datasheet",
        bandwidth_gbps=3350.0,
        roofs=(
            ComputeRoof(BF16_TENSOR, _("BF16 on Tensor Cores (dense)"), 990e12),
            ComputeRoof(FP32, _("FP32 without Tensor Cores"), 67e12),
        ),
        description=_("NVIDIA H100 SXM, HBM3, 132 SMs (datasheet)"),
    ),
    Device(
        name="H200",
        kind="datasheet",
        bandwidth_gbps=4800.0,
        roofs=(
            ComputeRoof(BF16_TENSOR, _("BF16 on Tensor Cores (dense)"), 990e12),
            ComputeRoof(FP32, _("FP32 without Tensor Cores"), 67e12),
        ),
        description=_(
            "NVIDIA H200 SXM, 141 GB HBM3e, the H100's compute (datasheet). Measured on one "
            "H200: about 4.3 TB/s for a device-to-device copy and about 790 TFLOP/s for a bf16 "
            "8192³ matmul."
        ),
    ),
)


def ridge_point(*, bandwidth_gbps: float, flops_per_s: float) -> float:
    """The intensity (FLOP/B) where the memory roof meets the compute roof."""
    return flops_per_s / (bandwidth_gbps * 1e9)


def memory_roof(*, ai: float, bandwidth_gbps: float) -> float:
    """FLOP/s that the bandwidth allows at this intensity."""
    return ai * bandwidth_gbps * 1e9


def attainable(*, ai: float, bandwidth_gbps: float, flops_per_s: float | None) -> float:
    """The roofline bound: min(peak, bandwidth x AI); without a known peak, the memory roof."""
    by_memory = memory_roof(ai=ai, bandwidth_gbps=bandwidth_gbps)
    return by_memory if flops_per_s is None else min(flops_per_s, by_memory)


def binding_roof(*, ai: float, bandwidth_gbps: float, flops_per_s: float | None) -> Roof:
    """Which roof limits this intensity. At the ridge itself both do; like the quiz's answer
    function, that point counts as compute-bound."""
    if flops_per_s is None:
        return "memory"
    return (
        "memory" if memory_roof(ai=ai, bandwidth_gbps=bandwidth_gbps) < flops_per_s else "compute"
    )
