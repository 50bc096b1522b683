"""What the page shows: numbers formatted for the reader's language, table rows, and the data
and labels handed to the script (the same figures, so the chart and the table agree)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from courseware.roofline.devices import (
    AI_MAX,
    AI_MIN,
    Device,
    attainable,
    binding_roof,
    ridge_point,
)
from courseware.roofline.operations import OPERATIONS, Operation
from courseware.roofline.selection import Selection

# The operation's line in the answer; the script fills the same words in the same language.
OPERATION_DETAILS = gettext_noop(
    "%(label)s, %(dtype)s: %(basis)s. Shortest time on this device: %(time)s"
)
SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def number(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, with the language's separators."""
    if value == 0 or not math.isfinite(value):
        return formats.number_format(value)
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    while places > 0 and round(value, places - 1) == round(value, places):
        places -= 1  # no trailing zeros: "67", not "67.0" (the script's Intl does the same)
    return formats.number_format(round(value, places), places, use_l10n=True, force_grouping=True)


def si(value: float, unit: str) -> str:
    """``67108864, "B"`` → ``67.1 MB``: the decimal prefixes the chapter writes."""
    for scale, prefix in SI_PREFIXES:
        if abs(value) >= scale:
            return f"{number(value / scale)} {prefix}{unit}"
    return f"{number(value)} {unit}"


def seconds(value: float) -> str:
    if value >= 1:
        return f"{number(value)} s"
    if value >= 1e-3:
        return f"{number(value * 1e3)} ms"
    return f"{number(value * 1e6)} µs"


@dataclass(frozen=True)
class RoofRow:
    label: str
    peak: str
    ridge: str


@dataclass(frozen=True)
class DeviceRow:
    name: str
    description: str
    measured_at: str
    bandwidth: str
    roofs: list[RoofRow]


def device_rows(devices: list[Device]) -> list[DeviceRow]:
    rows = []
    for device in devices:
        roofs = [
            RoofRow(
                label=str(roof.label),
                peak=si(roof.flops_per_s, "FLOP/s"),
                ridge=number(
                    ridge_point(bandwidth_gbps=device.bandwidth_gbps, flops_per_s=roof.flops_per_s)
                ),
            )
            for roof in device.roofs
        ]
        rows.append(
            DeviceRow(
                name=device.name,
                description=str(device.description),
                measured_at=formats.date_format(device.measured_at, "SHORT_DATE_FORMAT")
                if device.measured_at
                else "",
                bandwidth=f"{number(device.bandwidth_gbps)} GB/s",
                roofs=roofs,
            )
        )
    return rows


@dataclass(frozen=True)
class OperationRow:
    key: str
    label: str
    dtype: str
    flops: str
    bytes: str
    ai: str
    basis: str


def operation_rows() -> list[OperationRow]:
    return [
        OperationRow(
            key=op.key,
            label=str(op.label),
            dtype=op.dtype,
            flops=si(op.flops, "FLOP"),
            bytes=si(op.bytes, "B"),
            ai=number(op.ai),
            basis=str(op.basis),
        )
        for op in OPERATIONS
    ]


@dataclass(frozen=True)
class Result:
    """The roofline's answer for the selection, as the page first shows it."""

    ai: str
    bandwidth: str
    roof_label: str
    peak: str
    ridge: str
    binding: str
    attainable: str
    fraction_of_peak: str
    operation: str  # what the operation is, how it was counted, its shortest time here


def result_for(selection: Selection) -> Result:
    device, roof, ai = selection.device, selection.roof, selection.ai
    peak = roof.flops_per_s if roof else None
    bound = attainable(ai=ai, bandwidth_gbps=device.bandwidth_gbps, flops_per_s=peak)
    binding = binding_roof(ai=ai, bandwidth_gbps=device.bandwidth_gbps, flops_per_s=peak)
    if peak is None:
        binding_text = _("memory (no compute roof is known for this device)")
    elif binding == "memory":
        binding_text = _("memory: memory-bound, the bandwidth limits it")
    else:
        binding_text = _("compute: compute-bound, the arithmetic units limit it")
    op = selection.operation
    return Result(
        ai=f"{number(ai)} FLOP/B",
        bandwidth=f"{number(device.bandwidth_gbps)} GB/s",
        roof_label=str(roof.label) if roof else _("not measured"),
        peak=si(peak, "FLOP/s") if peak else _("not measured"),
        ridge=f"{number(ridge_point(bandwidth_gbps=device.bandwidth_gbps, flops_per_s=peak))} "
        "FLOP/B"
        if peak
        else _("unknown without a compute roof"),
        binding=binding_text,
        attainable=si(bound, "FLOP/s"),
        fraction_of_peak=f"{number(100 * bound / peak)} %" if peak else "—",
        operation=_(OPERATION_DETAILS)
        % {
            "label": op.label,
            "dtype": op.dtype,
            "basis": op.basis,
            "time": seconds(_lower_bound_s(op, device, peak)),
        }
        if op
        else "",
    )


def _lower_bound_s(op: Operation, device: Device, peak: float | None) -> float:
    """The roofline's shortest time for the operation: its bytes at full bandwidth, or its
    FLOPs at the peak, whichever takes longer."""
    memory_s = op.bytes / (device.bandwidth_gbps * 1e9)
    return max(memory_s, op.flops / peak) if peak else memory_s


def script_data(devices: list[Device], selection: Selection) -> dict[str, Any]:
    """Everything the chart needs, so it never asks the server again."""
    return {
        "devices": [
            {
                "key": d.key,
                "name": d.name,
                "kind": d.kind,
                "description": str(d.description),
                "bandwidthGbps": d.bandwidth_gbps,
                "roofs": [
                    {"key": r.key, "label": str(r.label), "flopsPerS": r.flops_per_s}
                    for r in d.roofs
                ],
            }
            for d in devices
        ],
        "operations": [
            {
                "key": op.key,
                "label": str(op.label),
                "dtype": op.dtype,
                "flops": op.flops,
                "bytes": op.bytes,
                "basis": str(op.basis),
            }
            for op in OPERATIONS
        ],
        "initial": {
            "device": selection.device.key,
            "roof": selection.roof.key if selection.roof else None,
            "ai": selection.ai,
            "op": selection.operation.key if selection.operation else None,
        },
        "range": {"min": AI_MIN, "max": AI_MAX},
    }


def script_labels() -> dict[str, str]:
    """The words the script writes, in the page's language. ``%(name)s`` marks a value."""
    return {
        "memoryBinds": _("memory: memory-bound, the bandwidth limits it"),
        "computeBinds": _("compute: compute-bound, the arithmetic units limit it"),
        "memoryOnly": _("memory (no compute roof is known for this device)"),
        "notMeasured": _("not measured"),
        "ridgeUnknown": _("unknown without a compute roof"),
        "xAxis": _("Arithmetic intensity (FLOP/B, log scale)"),
        "yAxis": _("Attainable performance (FLOP/s, log scale)"),
        "memoryRoof": _("Memory roof %(bandwidth)s"),
        "ridge": _("Ridge %(ai)s FLOP/B"),
        "marker": _("%(ai)s FLOP/B → %(rate)s"),
        "summary": _(
            "On the %(device)s at %(ai)s FLOP/B the %(roof)s roof binds: at most %(rate)s."
        ),
        "operation": _(OPERATION_DETAILS),
        "roofMemory": _("memory"),
        "roofCompute": _("compute"),
        "chartDescription": _(
            "Log-log roofline of the %(device)s: the memory roof rises with arithmetic "
            "intensity until it meets the compute roof at the ridge point."
        ),
        "invalidAi": _("Enter a positive number of FLOPs per byte, for example 1.25."),
        "outOfRange": _("The chart shows %(low)s to %(high)s FLOP/B; the nearest end is shown."),
    }
