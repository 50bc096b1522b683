"""The device peaks graders.measure.calibrate has already measured on this machine, from its
cache.

A worker shows them in the fleet registry. Reading never measures: a calibration takes a core
for a minute, and it runs when a grading first needs the peaks, not when a worker starts.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from graders.locations import cache_dir
from graders.measure import calibrate

logger = logging.getLogger(__name__)

# What the fleet page shows of calibrate.summary(); the history stays in the cache.
SHOWN = ("gbps", "flops_per_s", "device_name", "measured_at")


def cached_peaks(device: str) -> dict[str, Any] | None:
    """The newest cached peaks for `device` ("cpu" or "cuda") on this machine, or None."""
    try:
        store = json.loads((cache_dir() / "peaks.json").read_text())
    except (OSError, ValueError):
        return None  # never calibrated here (or the file is being replaced): nothing to show
    if not isinstance(store, dict):
        return None
    found: list[dict[str, Any]] = []
    # The cache is keyed "<device>|<device name>|threads=1|torch=<version>" (calibrate.py).
    for key, stored in store.items():
        device_part, _sep, name = str(key).partition("|")
        if device_part != device or not isinstance(stored, dict):
            continue
        try:
            history = calibrate.upgrade(stored)["history"]
            if not calibrate.current(history):
                continue
            summary = calibrate.summary(device, name.split("|", 1)[0], history)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            logger.warning("Unreadable peaks cache entry %r; not shown", key)
            continue
        found.append({field: summary.get(field) for field in SHOWN})
    if not found:
        return None
    return max(found, key=lambda peaks: str(peaks.get("measured_at") or ""))
