"""A double of the CUDA driver API pieces the engine calls through ctypes (libcuda.so.1).

It answers what the driver documents, in CUresult codes, so the CUDA device's own logic
(graders/harness/cuda_memory.py, graders/devices/cuda_lock.py) runs on a machine without a
GPU: ``cuda_memory.use_driver(DriverDouble(...).library())``.

- memory: ``cuMemCreate`` of a granularity multiple, out of ``capacity`` bytes
  (CUDA_ERROR_OUT_OF_MEMORY past it); ``cuMemExportToShareableHandle`` gives a real file
  descriptor, which ``cuMemImportFromShareableHandle`` takes back (CUDA_ERROR_INVALID_VALUE for
  one it never gave, CUDA_ERROR_NOT_PERMITTED where ``import_refused``); reserve, map, access,
  unmap, free and release keep their books, so a leak shows;
- the checkpoint lock (``cuCheckpointProcessLock``/``Unlock``/``GetState``): per ``lock``,
  ``"works"`` (the process goes LOCKED), ``"timeout"`` (CUDA_ERROR_TIMEOUT, the process left
  RUNNING, as documented), ``"not_supported"`` / ``"not_permitted"`` (refused), ``"refused_locked"``
  (refused, but the process left LOCKED: the damaged target of other setups) or ``"missing"``
  (an older driver, no entry point at all). ``lock_after_first`` changes the behaviour after the
  first lock (a lock that works once, then times out on the sandbox's running kernel).

Pointers arrive as ``ctypes.pointer`` objects (``.contents``), values as ctypes scalars or ints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

SUCCESS = 0
INVALID_VALUE = 1
OUT_OF_MEMORY = 2
ILLEGAL_STATE = 401
NOT_PERMITTED = 800
NOT_SUPPORTED = 801
TIMEOUT = 909
NAMES = {
    INVALID_VALUE: "CUDA_ERROR_INVALID_VALUE",
    OUT_OF_MEMORY: "CUDA_ERROR_OUT_OF_MEMORY",
    ILLEGAL_STATE: "CUDA_ERROR_ILLEGAL_STATE",
    NOT_PERMITTED: "CUDA_ERROR_NOT_PERMITTED",
    NOT_SUPPORTED: "CUDA_ERROR_NOT_SUPPORTED",
    TIMEOUT: "CUDA_ERROR_TIMEOUT",
}
RUNNING, LOCKED = 0, 1
GRANULARITY = 2 << 20


def _value(item: Any) -> int:
    """An int from what ctypes would pass: a scalar object (``.value``) or an int."""
    value = getattr(item, "value", item)
    return int(value or 0)


@dataclass
class DriverDouble:
    capacity: int = 8 << 30
    lock: str = "works"
    lock_after_first: str | None = None
    import_refused: bool = False
    version: int = 13000
    used: int = 0
    handles: dict[int, int] = field(default_factory=dict)  # handle -> size
    exported: dict[int, int] = field(default_factory=dict)  # fd -> handle
    reserved: dict[int, int] = field(default_factory=dict)  # address -> size
    mapped: dict[int, int] = field(default_factory=dict)  # address -> handle
    states: dict[int, int] = field(default_factory=dict)  # pid -> CUprocessState
    lock_calls: list[tuple[int, int]] = field(default_factory=list)  # (pid, timeoutMs)
    unlock_calls: list[int] = field(default_factory=list)
    next_handle: int = 1
    next_address: int = 0x7F00_0000_0000

    def library(self) -> SimpleNamespace:
        """The driver as ctypes.CDLL would show it: one attribute per entry point."""
        names = [name for name in dir(self) if name.startswith("cu")]
        if self.lock == "missing":
            names = [name for name in names if not name.startswith("cuCheckpoint")]
        return SimpleNamespace(**{name: getattr(self, name) for name in names})

    # -- context ----------------------------------------------------------------------------

    def cuInit(self, flags: Any) -> int:
        return SUCCESS

    def cuDriverGetVersion(self, version: Any) -> int:
        version.contents.value = self.version
        return SUCCESS

    def cuDeviceGet(self, device: Any, index: Any) -> int:
        if _value(index) != 0:
            return INVALID_VALUE  # one GPU
        device.contents.value = 0
        return SUCCESS

    def cuDevicePrimaryCtxRetain(self, context: Any, device: Any) -> int:
        context.contents.value = 0xC0
        return SUCCESS

    def cuCtxSetCurrent(self, context: Any) -> int:
        return SUCCESS

    def cuGetErrorName(self, code: Any, text: Any) -> int:
        name = NAMES.get(_value(code))
        if name is None:
            return INVALID_VALUE
        text.contents.value = name.encode()
        return SUCCESS

    # -- memory -----------------------------------------------------------------------------

    def cuMemGetAllocationGranularity(self, value: Any, prop: Any, option: Any) -> int:
        value.contents.value = GRANULARITY
        return SUCCESS

    def cuMemCreate(self, handle: Any, size: Any, prop: Any, flags: Any) -> int:
        nbytes = _value(size)
        if nbytes <= 0 or nbytes % GRANULARITY:
            return INVALID_VALUE
        if self.used + nbytes > self.capacity:
            return OUT_OF_MEMORY
        self.used += nbytes
        self.handles[self.next_handle] = nbytes
        handle.contents.value = self.next_handle
        self.next_handle += 1
        return SUCCESS

    def cuMemRelease(self, handle: Any) -> int:
        size = self.handles.pop(_value(handle), None)
        if size is None:
            return INVALID_VALUE
        self.used -= size
        return SUCCESS

    def cuMemExportToShareableHandle(self, fd: Any, handle: Any, kind: Any, flags: Any) -> int:
        if _value(handle) not in self.handles:
            return INVALID_VALUE
        descriptor = os.open(os.devnull, os.O_RDONLY)  # a real fd: the engine closes it
        self.exported[descriptor] = _value(handle)
        fd.contents.value = descriptor
        return SUCCESS

    def cuMemImportFromShareableHandle(self, handle: Any, fd: Any, kind: Any) -> int:
        if self.import_refused:
            return NOT_PERMITTED
        found = self.exported.get(_value(fd))
        if found is None:
            return INVALID_VALUE
        handle.contents.value = found
        return SUCCESS

    def cuMemAddressReserve(
        self, pointer: Any, size: Any, alignment: Any, address: Any, flags: Any
    ) -> int:
        pointer.contents.value = self.next_address
        self.reserved[self.next_address] = _value(size)
        self.next_address += _value(size) + GRANULARITY
        return SUCCESS

    def cuMemAddressFree(self, pointer: Any, size: Any) -> int:
        return SUCCESS if self.reserved.pop(_value(pointer), None) is not None else INVALID_VALUE

    def cuMemMap(self, pointer: Any, size: Any, offset: Any, handle: Any, flags: Any) -> int:
        address = _value(pointer)
        if address not in self.reserved or _value(handle) not in self.handles:
            return INVALID_VALUE
        if _value(size) > self.handles[_value(handle)]:
            return INVALID_VALUE
        self.mapped[address] = _value(handle)
        return SUCCESS

    def cuMemSetAccess(self, pointer: Any, size: Any, desc: Any, count: Any) -> int:
        return SUCCESS if _value(pointer) in self.mapped else INVALID_VALUE

    def cuMemUnmap(self, pointer: Any, size: Any) -> int:
        return SUCCESS if self.mapped.pop(_value(pointer), None) is not None else INVALID_VALUE

    # -- the checkpoint lock -----------------------------------------------------------------

    def cuCheckpointProcessGetState(self, pid: Any, state: Any) -> int:
        state.contents.value = self.states.get(_value(pid), RUNNING)
        return SUCCESS

    def cuCheckpointProcessLock(self, pid: Any, args: Any) -> int:
        process = _value(pid)
        self.lock_calls.append((process, int(args.contents.timeoutMs)))
        behaviour = self.lock
        if len(self.lock_calls) > 1 and self.lock_after_first is not None:
            behaviour = self.lock_after_first
        if self.states.get(process, RUNNING) != RUNNING:
            return ILLEGAL_STATE  # "Process must be in the RUNNING state in order to lock"
        if behaviour == "works":
            self.states[process] = LOCKED
            return SUCCESS
        if behaviour == "timeout":
            return TIMEOUT  # the process is left RUNNING
        if behaviour == "refused_locked":
            self.states[process] = LOCKED
            return NOT_PERMITTED
        return NOT_PERMITTED if behaviour == "not_permitted" else NOT_SUPPORTED

    def cuCheckpointProcessUnlock(self, pid: Any, args: Any) -> int:
        process = _value(pid)
        self.unlock_calls.append(process)
        if self.states.get(process, RUNNING) != LOCKED:
            return ILLEGAL_STATE
        self.states[process] = RUNNING
        return SUCCESS
