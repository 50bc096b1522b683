"""What differs between a CPU and a CUDA device, behind one interface (base.py).

``for_kind("cpu", slot)`` or ``for_kind("cuda", slot)`` gives the device a grading's phases
ask; the CUDA module is imported only when asked for, so a CPU worker never loads it.
"""

from __future__ import annotations

from graders.devices.base import Device


def for_kind(kind: str, slot: int, *, flush: bool = True) -> Device:
    """The device a slot grades ``kind`` on. ``flush=False``: no cache flusher (a bench
    that only checks correctness, or a test)."""
    if kind == "cpu":
        from graders.devices.cpu import CpuDevice

        return CpuDevice(slot, flush=flush)
    if kind == "cuda":
        from graders.devices.cuda import CudaDevice

        return CudaDevice(slot)
    raise ValueError(f"no device of kind {kind!r} (cpu or cuda)")
