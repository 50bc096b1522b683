"""Measure and cache the peak bandwidth and FLOP/s of a device.

Peaks are measured (never only looked up) because the roofline must describe the
machine the submission actually ran on, with the same timer and single-thread
setting as gradings. Results are cached as JSON keyed by device name, torch version
and thread count in ``$GRADERS_CACHE_DIR`` (default ``~/.cache/gpu-courseware``).
Datasheet figures are attached for comparison only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .errors import GraderError
from .sandbox import pick_core

GRADER_ROOT = Path(__file__).resolve().parent
# (substring of the device name, memory GB/s, dense fp32 FLOP/s non-tensor-core)
DATASHEETS: tuple[tuple[str, float, float], ...] = (
    ("H200", 4800.0, 67e12),
    ("H100 PCIe", 2000.0, 51e12),
    ("H100", 3350.0, 67e12),
    ("A100-SXM4-80GB", 2039.0, 19.5e12),
    ("A100 80GB PCIe", 1935.0, 19.5e12),
    ("A100", 1555.0, 19.5e12),
)


def cache_dir() -> Path:
    env = os.environ.get("GRADERS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gpu-courseware"


def device_name(device: str) -> str:
    if device == "cpu":
        with contextlib.suppress(OSError):
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
        return "unknown-cpu"
    import torch

    if not torch.cuda.is_available():
        raise GraderError("CUDA was requested but torch.cuda.is_available() is False here")
    return torch.cuda.get_device_name(0)


def datasheet(name: str) -> tuple[float, float] | None:
    for key, gbps, flops in DATASHEETS:
        if key in name:
            return gbps, flops
    return None


def _cache_key(device: str, name: str) -> str:
    import torch

    return f"{device}|{name}|threads=1|torch={torch.__version__}"


def _probe(device: str, slot: int) -> dict[str, Any]:
    from .sandbox import sandbox_env

    command = [
        sys.executable,
        "-I",
        "-c",
        f"import sys; sys.path.insert(0, {str(GRADER_ROOT)!r}); "
        f"from harness.probe import main; main({device!r})",
    ]
    core = pick_core(slot)
    if core is not None and shutil.which("taskset") and device == "cpu":
        command = ["taskset", "-c", str(core), *command]
    env = sandbox_env(str(cache_dir()), device)
    env["HOME"] = os.environ.get("HOME", "/tmp")
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired as exc:
        raise GraderError("peak calibration took longer than 300 s") from exc
    if result.returncode != 0:
        raise GraderError(f"peak calibration failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def peaks(device: str = "cpu", refresh: bool = False, slot: int | None = None) -> dict[str, Any]:
    """{"gbps", "flops_per_s", "method", "datasheet_gbps", "device_name", ...}.

    ``slot``: the grading slot already held by the caller; None acquires one, so a
    calibration never runs on a core where a grading is being timed.
    """
    if slot is None:
        from .slots import acquire

        with acquire() as held:
            return peaks(device, refresh, held)
    name = device_name(device)
    key = _cache_key(device, name)
    path = cache_dir() / "peaks.json"
    cache: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        cache = json.loads(path.read_text())
    if not refresh and key in cache:
        return cache[key]
    measured = _probe(device, slot)
    sheet = datasheet(measured.get("device_name", name))
    entry = {
        "gbps": measured["gbps"],
        "flops_per_s": measured["flops_per_s"],
        "method": measured["method"],
        "datasheet_gbps": sheet[0] if sheet else None,
        "datasheet_flops_per_s": sheet[1] if sheet else None,
        "device_name": name if device == "cpu" else measured.get("device_name", name),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    cache[key] = entry
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=2, sort_keys=True))
        tmp.replace(path)  # atomic: concurrent workers never see half a file
    return entry
