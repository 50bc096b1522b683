"""Which /dev/nvidiaN nodes a CUDA sandbox gets: only its own GPU's, where that can be told.

Binding every ``/dev/nvidiaN`` lets a submission start a process with another
``CUDA_VISIBLE_DEVICES`` and run on a GPU another worker is timing. The driver lists each GPU
under ``/proc/driver/nvidia/gpus/<PCI bus id>/information`` with its ``Device Minor`` (the N of
its node) and its ``GPU UUID``, so the worker's ``CUDA_VISIBLE_DEVICES`` maps to nodes when it
names GPUs by UUID, or by index with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (what deploy/worker.sh
sets: then index i is the i-th GPU in bus order). Anything else (CUDA's default
fastest-first order, an unset variable, a driver that lists nothing) cannot be mapped, and
every node is bound as before, with a warning, so a grading still runs.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")


def _listed(driver: Path) -> list[tuple[str, str, int]]:
    """(bus id, UUID, minor) of each GPU the driver lists, in PCI bus order."""
    found = []
    for folder in sorted(driver.iterdir()) if driver.is_dir() else []:
        fields: dict[str, str] = {}
        try:
            for line in (folder / "information").read_text().splitlines():
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
            found.append((folder.name, fields.get("GPU UUID", ""), int(fields["Device Minor"])))
        except (OSError, KeyError, ValueError):
            continue
    return found


def own_minors(
    visible: str | None, order: str | None, driver: Path = DRIVER_GPUS
) -> list[int] | None:
    """The minors of the GPUs ``visible`` names, or None when that cannot be told."""
    if not visible:
        return None
    gpus = _listed(driver)
    minors = []
    for entry in (part.strip() for part in visible.split(",")):
        if entry.startswith(("GPU-", "MIG-")):
            match = [minor for _, uuid, minor in gpus if uuid and entry.startswith(uuid)]
        elif entry.isdigit() and order == "PCI_BUS_ID" and int(entry) < len(gpus):
            match = [gpus[int(entry)][2]]
        else:
            match = []
        if not match:
            return None
        minors += match
    return minors


def device_nodes(
    visible: str | None,
    order: str | None,
    dev: Path = Path("/dev"),
    driver: Path = DRIVER_GPUS,
) -> list[str]:
    """The /dev/nvidia* nodes to bind: the shared control nodes and the GPU's own."""
    names = sorted(os.listdir(dev)) if dev.is_dir() else []
    shared = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}
    minors = own_minors(visible, order, driver)
    if minors is None:
        logger.warning(
            "CUDA_VISIBLE_DEVICES=%r cannot be mapped to /dev/nvidiaN (use GPU UUIDs, or "
            "indices with CUDA_DEVICE_ORDER=PCI_BUS_ID): every GPU node is bound",
            visible,
        )
    own = None if minors is None else {f"nvidia{minor}" for minor in minors}
    return [
        name
        for name in names
        if name in shared
        or (name.startswith("nvidia") and name[6:].isdigit() and (own is None or name in own))
    ]


def unreachable(names: list[str], dev: Path = Path("/dev")) -> str | None:
    """Why the sandbox's uid cannot open some of these nodes, or None. The sandbox runs as a
    uid of its own with no groups (setpriv --clear-groups), so a node it must open has to be
    readable and writable by others: mode 0666, the driver's default (NVreg_DeviceFileMode).
    A node of 0660 for the video group works for a worker in that group and fails in the
    sandbox with CUDA's unhelpful "no CUDA-capable device is detected"."""
    closed = []
    for name in names:
        try:
            mode = (dev / name).stat().st_mode
        except OSError:
            continue  # gone since the listing: the driver reloaded; CUDA will say so
        if mode & (stat.S_IROTH | stat.S_IWOTH) != stat.S_IROTH | stat.S_IWOTH:
            closed.append(f"/dev/{name} is mode {stat.S_IMODE(mode):04o}")
    if not closed:
        return None
    return (
        "the sandbox's uid has no groups, so it needs the NVIDIA device nodes readable and "
        f"writable by all (mode 0666), but {', '.join(closed)}. Load the driver with "
        "NVreg_DeviceFileMode=0666 (the default), or run `chmod 0666 /dev/nvidia*` as root"
    )
