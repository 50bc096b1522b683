"""A short description of the machine, for benchmark write-ups."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> dict[str, str]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "unknown"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        memory = f"{kib / 2**20:.1f} GiB"
    llc = "unknown"
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"))
    if caches:
        llc = caches[-1].read_text().strip()
    import torch

    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "last-level cache": llc,
        "memory": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
    }
