"""The sandbox's GPU memory, watched from outside through NVML (nvidia-ml-py's ``pynvml``).

A CUDA sandbox has its own device-memory limit (``[limits] gpu_memory_mb``). The sandbox cannot
be trusted to report what it holds, so the trusted side asks the driver, through NVML, how
much device memory each compute process on the grading GPU uses, and sums it over the
sandbox's processes (the harness and every process it started). Going over the limit is the
student's verdict, in their words (:func:`over_limit_message`), not a grader failure.

Where NVML cannot give per-process figures, :meth:`GpuMemoryWatch.available` says why in a
sentence and nothing is watched: no NVIDIA driver, NVML that fails to start, a GPU that does
not report per-process usage (gVisor's GPU proxy lists no processes), or process ids from
another pid namespace (a container that does not share the host's). The last two are told
by this process's own entry: once it holds a CUDA context on the watched GPU, NVML must list
it there.

``pynvml`` is imported on first use, so this module imports on a machine without it, and
``pynvml`` itself imports without a GPU: only ``nvmlInit`` fails there.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
from collections.abc import Iterable
from typing import Any

GIB = 1 << 30
MIB = 1 << 20
# What NVML reports for a figure it does not have (pynvml turns it into None, not always).
NOT_AVAILABLE = (1 << 64) - 1


class GpuMemoryWatch:
    """Device memory used by a set of processes on one GPU, read from NVML.

    ``gpu_index`` is the GPU's CUDA index in this process (what ``cuda:N`` names), which is
    mapped to NVML's device through ``CUDA_VISIBLE_DEVICES`` (by UUID, or by index in PCI
    bus order), or through the UUID torch reports when torch has already initialised CUDA.
    """

    def __init__(self, gpu_index: int) -> None:
        self.gpu_index = gpu_index
        self._lock = threading.Lock()
        self._nvml: Any = None
        self._handle: Any = None
        self._started = False
        self._reason: str | None = None  # why NVML cannot be used at all (final)
        self._own_listed = False  # this process was seen in the list: pids are ours

    # -- what the grading asks -------------------------------------------------------------

    def available(self) -> str | None:
        """None when per-process device memory can be read; else why not, in a sentence."""
        with self._lock:
            if not self._started:
                self._start()
            if self._reason is not None:
                return self._reason
            if self._own_listed:
                return None
            return self._check_own_entry()

    def used_bytes(self, host_pids: Iterable[int]) -> int | None:
        """Device memory held by ``host_pids`` on this GPU, in bytes (the caller names the
        sandbox's whole tree: graders.sandbox.containment.process_tree).

        Pids are the host's (outside the sandbox's pid namespace). Processes without a CUDA
        context on the GPU count nothing. None when the figure is unknown: NVML unavailable,
        the query failing, or a listed process whose usage NVML does not report.
        """
        if self.available() is not None:
            return None
        wanted = {int(pid) for pid in host_pids}
        try:
            processes = self._processes()
        except Exception:  # NVMLError and anything a broken driver raises: unknown, not fatal
            return None
        total = 0
        for process in processes:
            if int(process.pid) not in wanted:
                continue
            used = _used(process)
            if used is None:
                return None
            total += used
        return total

    @staticmethod
    def over_limit_message(used: int, limit: int) -> str:
        return over_limit_message(used, limit)

    def close(self) -> None:
        """Shut NVML down (it is reference counted: other users in this process keep theirs)."""
        with self._lock:
            if self._nvml is not None and self._reason is None:
                # Shutting down a half-broken NVML: nothing to do about a failure.
                with contextlib.suppress(Exception):
                    self._nvml.nvmlShutdown()
            self._nvml, self._handle, self._started = None, None, False
            self._reason, self._own_listed = None, False

    # -- inside ----------------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True
        try:
            import pynvml
        except ImportError:
            self._reason = "nvidia-ml-py is not installed, so NVML cannot be read"
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError, or OSError from a broken library
            self._reason = _init_failure(pynvml, exc)
            return
        self._nvml = pynvml
        try:
            self._handle = self._device_handle(pynvml)
        except LookupError as exc:
            self._reason = str(exc)
            return
        except Exception as exc:
            self._reason = f"NVML could not open GPU {self.gpu_index}: {_text(exc)}"
            return
        try:
            processes = self._processes()
        except Exception as exc:
            self._reason = (
                f"NVML does not report the processes using GPU {self.gpu_index}: {_text(exc)}"
            )
            return
        if processes and all(_used(p) is None for p in processes):
            self._reason = (
                f"NVML lists the processes on GPU {self.gpu_index} but not the memory each "
                "uses (per-process usage is not reported on this machine)"
            )

    def _processes(self) -> list[Any]:
        return list(self._nvml.nvmlDeviceGetComputeRunningProcesses(self._handle) or [])

    def _check_own_entry(self) -> str | None:
        """Whether NVML's pids are this process's: only decidable once it holds a context."""
        try:
            listed = {int(p.pid) for p in self._processes()}
        except Exception as exc:
            return f"NVML could not list the processes on GPU {self.gpu_index}: {_text(exc)}"
        if os.getpid() in listed:
            self._own_listed = True
            return None
        if self._holds_context():
            return (
                f"NVML does not list this grader's own process on GPU {self.gpu_index}, "
                "although it holds a CUDA context there, so it would not find the sandbox's "
                "either: per-process usage is not reported on this machine (as under gVisor), "
                "or NVML's process ids are from another pid namespace"
            )
        return None  # no evidence either way yet

    def _holds_context(self) -> bool:
        """Whether this process has a CUDA context on the watched GPU (torch's primary one)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        try:
            if not torch.cuda.is_initialized():
                return False
            has_context = getattr(torch._C, "_cuda_hasPrimaryContext", None)
            return bool(has_context is not None and has_context(self.gpu_index))
        except Exception:  # torch without CUDA, or a changed private API: no evidence
            return False

    def _device_handle(self, nvml: Any) -> Any:
        """NVML's handle of the GPU that CUDA calls ``cuda:<gpu_index>`` in this process."""
        uuid = _torch_uuid(self.gpu_index)
        if uuid is not None:
            for candidate in (uuid, f"GPU-{uuid}", f"MIG-{uuid}"):
                try:
                    return nvml.nvmlDeviceGetHandleByUUID(candidate)
                except Exception:  # not this spelling of the UUID: try the next
                    continue
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is None or not visible.strip():
            return nvml.nvmlDeviceGetHandleByIndex(self.gpu_index)
        entries = [part.strip() for part in visible.split(",") if part.strip()]
        if self.gpu_index >= len(entries):
            raise LookupError(
                f"CUDA_VISIBLE_DEVICES={visible!r} names no GPU {self.gpu_index} for NVML to watch"
            )
        entry = entries[self.gpu_index]
        if entry.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(entry))
        if entry.startswith("MIG-"):
            return nvml.nvmlDeviceGetHandleByUUID(entry)
        if entry.startswith("GPU-"):
            for index in range(int(nvml.nvmlDeviceGetCount())):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                if _text(nvml.nvmlDeviceGetUUID(handle)).startswith(entry):
                    return handle
        raise LookupError(
            f"NVML has no GPU matching CUDA_VISIBLE_DEVICES entry {entry!r} (GPU {self.gpu_index})"
        )


def over_limit_message(used: int, limit: int) -> str:
    """The student's verdict for going over the limit: what was used, the limit, what to do."""
    return (
        f"Your code used {_size(used, up=True)} of GPU memory; the limit is {_size(limit)}. "
        "Free temporary tensors (or use smaller ones) and resubmit."
    )


def _used(process: Any) -> int | None:
    used = getattr(process, "usedGpuMemory", None)
    if used is None or int(used) == NOT_AVAILABLE:
        return None
    return int(used)


def _torch_uuid(gpu_index: int) -> str | None:
    """The GPU's UUID as torch reports it, if torch has initialised CUDA in this process."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_initialized():
            return None
        uuid = str(torch.cuda.get_device_properties(gpu_index).uuid)
    except Exception:  # no CUDA build, a bad index, an older torch: map another way
        return None
    return uuid or None


def _init_failure(nvml: Any, exc: BaseException) -> str:
    value = getattr(exc, "value", None)
    if value == getattr(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND", 12):
        return "no NVIDIA driver on this machine (NVML's library libnvidia-ml.so.1 is missing)"
    if value == getattr(nvml, "NVML_ERROR_DRIVER_NOT_LOADED", 9):
        return "the NVIDIA driver is not loaded, so NVML cannot start"
    if value == getattr(nvml, "NVML_ERROR_NO_PERMISSION", 4):
        return "NVML refused this user (insufficient permissions)"
    return f"NVML failed to start: {_text(exc)}"


def _size(nbytes: int, *, up: bool = False) -> str:
    """GiB with one decimal where not whole (MiB below 1 GiB); ``up`` rounds up, so a figure
    just over a limit never reads as the limit itself."""
    unit, name = (GIB, "GiB") if nbytes >= GIB else (MIB, "MiB")
    if name == "GiB":
        tenths = math.ceil(nbytes * 10 / unit) if up else round(nbytes * 10 / unit)
        return f"{tenths // 10} GiB" if tenths % 10 == 0 else f"{tenths / 10:.1f} GiB"
    whole = math.ceil(nbytes / unit) if up else round(nbytes / unit)
    return f"{whole} MiB"


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)
