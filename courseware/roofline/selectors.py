"""The devices the grading workers measured, read from the stored gradings' reports.

Each report carries the peaks its worker measured (measure/calibrate.py): ``peak.gbps`` from a
triad, ``peak.flops_per_s`` from an fp32 matmul with TF32 off. The newest grading per device
name speaks for that device.
"""

from __future__ import annotations

import math

from django.utils.translation import gettext_lazy as _

from courseware.roofline.devices import FP32, ComputeRoof, Device
from courseware.submissions.models import Grading

RECENT_GRADINGS = 2000
MEASURED_FP32 = _("FP32 matmul, measured (TF32 off)")


def _positive(value: object) -> float | None:
    """A stored figure, if it is a usable one: reports are JSON and old ones may lack it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def measured_devices() -> list[Device]:
    # Only the latest gradings are read, so the page costs the same however long the course
    # has run; a worker measures again every week and every grading carries its peaks, so a
    # device still in service is among them.
    rows = (
        Grading.objects.filter(report__peak__gbps__isnull=False)
        .exclude(report__peak__gbps=None)
        .order_by("-pk")
        .values_list(
            "report__device__name",
            "report__peak__gbps",
            "report__peak__flops_per_s",
            "created_at",
        )[:RECENT_GRADINGS]
    )
    newest: dict[str, Device] = {}
    for name, gbps, flops, created_at in rows:
        bandwidth = _positive(gbps)
        if not isinstance(name, str) or not name.strip() or bandwidth is None:
            continue
        if name.strip() in newest:
            continue  # newest first: the first row of a device speaks for it
        peak = _positive(flops)
        newest[name.strip()] = Device(
            name=name.strip(),
            kind="measured",
            bandwidth_gbps=bandwidth,
            roofs=(ComputeRoof(FP32, MEASURED_FP32, peak),) if peak else (),
            description=_("Measured by a grading worker"),
            measured_at=created_at,
        )
    return sorted(newest.values(), key=lambda device: device.name.lower())
