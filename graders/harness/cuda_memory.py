"""GPU memory that the trusted side owns and the sandbox maps, through the CUDA driver API.

Both sides use this module (the trusted side imports it as ``graders.harness.cuda_memory``):

- the trusted side creates device memory with the driver's virtual memory API (``cuMemCreate``)
  and exports each allocation as a POSIX file descriptor; the sandbox inherits the
  descriptor when it starts and maps the same physical memory (``cuMemImportFromShareable
  Handle`` and ``cuMemMap``) before any student code exists. Two allocations per sandbox:
  the inputs (drawn by the trusted side with its secret seed) and a pool that all of the
  sandbox's torch allocations come from;
- the harness installs a torch allocator over that pool before torch touches the GPU, so
  every tensor the submission makes, its output included, lies in memory the trusted side
  has mapped too. After the freeze the trusted side reads an output at its offset in the
  pool, on the device: nothing is copied inside the window, and the pool's size is the
  sandbox's device memory limit by construction.

Why descriptors and not ``cuIpcGetMemHandle``: a legacy IPC handle cannot be opened across
PID namespaces, and the sandbox has its own. Why ctypes over libcuda.so.1: the driver ships
it wherever there is a GPU, so this costs no package, and it needs no compiler.

The driver's checkpoint lock (:func:`lock_process`) is here too: the trusted side's witness
that a sandbox's submitted GPU work has finished.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any

_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_RECOMMENDED = 1  # CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
ALIGN = 512  # every block the pool hands out starts on this boundary (torch's own rounding)
_lib: ctypes.CDLL | None = None


# CUresult codes the engine tells apart (cuda.h).
SUCCESS = 0
ERROR_OUT_OF_MEMORY = 2
ERROR_NOT_PERMITTED = 800
ERROR_NOT_SUPPORTED = 801
ERROR_TIMEOUT = 909
# CUprocessState (cuCheckpointProcessGetState).
PROCESS_RUNNING, PROCESS_LOCKED, PROCESS_CHECKPOINTED, PROCESS_FAILED = 0, 1, 2, 3


class CudaMemoryError(Exception):
    """The driver refused a call; the text names the call and the driver's error, ``code``
    its CUresult (None: no driver, or no such entry point)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def timed_out(self) -> bool:
        return self.code == ERROR_TIMEOUT


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _LockArgs(ctypes.Structure):  # CUcheckpointLockArgs
    _fields_ = [
        ("timeoutMs", ctypes.c_uint),
        ("reserved0", ctypes.c_uint),
        ("reserved1", ctypes.c_uint64 * 7),
    ]


class _UnlockArgs(ctypes.Structure):  # CUcheckpointUnlockArgs
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


def use_driver(lib: Any) -> None:
    """Use ``lib`` as the CUDA driver from now on (None: load libcuda.so.1 again when next
    needed). The tests give a double of the driver (tests/graders/cuda_double.py), so the
    logic above the driver runs on a machine without one."""
    global _lib
    _lib = lib


def driver() -> Any:
    global _lib
    if _lib is None:
        try:
            _lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CudaMemoryError(f"the CUDA driver library is not here ({exc})") from None
    return _lib


def _call(name: str, *args: Any) -> None:
    """Call the newest versioned entry point of ``name`` (cuda.h maps some names to _v2)."""
    lib = driver()
    function = getattr(lib, f"{name}_v2", None) or getattr(lib, name, None)
    if function is None:
        raise CudaMemoryError(f"the CUDA driver has no {name} (too old for this)")
    code = function(*args)
    if code != 0:
        text = ctypes.c_char_p()
        named = getattr(lib, "cuGetErrorName", None)
        if named is not None and named(code, ctypes.pointer(text)) == 0 and text.value:
            raise CudaMemoryError(f"{name} failed: {text.value.decode()} ({code})", code)
        raise CudaMemoryError(f"{name} failed with CUDA error {code}", code)


def make_current(device_index: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread,
    without torch: the harness maps its memory before torch initialises CUDA."""
    _call("cuInit", 0)
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _call("cuDeviceGet", ctypes.pointer(device), device_index)
    _call("cuDevicePrimaryCtxRetain", ctypes.pointer(context), device)
    _call("cuCtxSetCurrent", context)


def _prop(device_index: int) -> _Prop:
    prop = _Prop()
    prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
    prop.location = _Location(_ON_DEVICE, device_index)
    return prop


def granularity(device_index: int) -> int:
    value = ctypes.c_size_t()
    prop = _prop(device_index)
    _call(
        "cuMemGetAllocationGranularity", ctypes.pointer(value), ctypes.pointer(prop), _RECOMMENDED
    )
    return int(value.value)


def _map(handle: int, size: int, device_index: int) -> int:
    pointer = ctypes.c_uint64()
    _call("cuMemAddressReserve", ctypes.pointer(pointer), ctypes.c_size_t(size), 0, 0, 0)
    try:
        _call("cuMemMap", pointer, ctypes.c_size_t(size), 0, ctypes.c_uint64(handle), 0)
        access = _AccessDesc(_Location(_ON_DEVICE, device_index), _READ_WRITE)
        _call("cuMemSetAccess", pointer, ctypes.c_size_t(size), ctypes.pointer(access), 1)
    except CudaMemoryError:
        with contextlib.suppress(CudaMemoryError):
            _call("cuMemAddressFree", pointer, ctypes.c_size_t(size))
        raise
    return int(pointer.value)


class SharedMemory:
    """Device memory mapped in this process; ``fd`` (the trusted side's) exports it."""

    def __init__(self, handle: int, pointer: int, size: int, fd: int | None) -> None:
        self.handle, self.pointer, self.size, self.fd = handle, pointer, size, fd

    @classmethod
    def create(cls, nbytes: int, device_index: int) -> SharedMemory:
        """New device memory of at least ``nbytes`` (rounded to the granularity), mapped here
        and exported as a file descriptor for one sandbox to inherit."""
        step = granularity(device_index)
        size = max((nbytes + step - 1) // step * step, step)
        handle = ctypes.c_uint64()
        prop = _prop(device_index)
        _call("cuMemCreate", ctypes.pointer(handle), ctypes.c_size_t(size), ctypes.pointer(prop), 0)
        try:
            pointer = _map(int(handle.value), size, device_index)
            fd = ctypes.c_int(-1)
            _call("cuMemExportToShareableHandle", ctypes.pointer(fd), handle, _POSIX_FD, 0)
        except CudaMemoryError:
            with contextlib.suppress(CudaMemoryError):
                _call("cuMemRelease", handle)
            raise
        return cls(int(handle.value), pointer, size, int(fd.value))

    @classmethod
    def open(cls, fd: int, size: int, device_index: int) -> SharedMemory:
        """The memory another process exported as ``fd``, mapped here."""
        handle = ctypes.c_uint64()
        _call(
            "cuMemImportFromShareableHandle",
            ctypes.pointer(handle),
            ctypes.c_void_p(fd),
            _POSIX_FD,
        )
        return cls(int(handle.value), _map(int(handle.value), size, device_index), size, None)

    def close(self) -> None:
        """Unmap and release; the physical memory goes once every process has let go."""
        import os

        if self.pointer:
            with contextlib.suppress(CudaMemoryError):
                _call("cuMemUnmap", ctypes.c_uint64(self.pointer), ctypes.c_size_t(self.size))
                _call("cuMemAddressFree", ctypes.c_uint64(self.pointer), ctypes.c_size_t(self.size))
                _call("cuMemRelease", ctypes.c_uint64(self.handle))
            self.pointer = 0
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def fill_u32(pointer: int, value: int, count: int) -> None:
    """Set ``count`` 32-bit words at ``pointer`` to ``value`` and wait for it (no torch)."""
    _call("cuMemsetD32", ctypes.c_uint64(pointer), ctypes.c_uint(value), ctypes.c_size_t(count))
    _call("cuCtxSynchronize")


def read_u32(pointer: int) -> int:
    """The 32-bit word at ``pointer`` (no torch)."""
    word = ctypes.c_uint32()
    _call("cuMemcpyDtoH", ctypes.pointer(word), ctypes.c_uint64(pointer), ctypes.c_size_t(4))
    return int(word.value)


class _Bytes:
    """A device span as the array interface describes it: ``nbytes`` bytes at ``pointer``."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (pointer, False),
            "version": 3,
            "strides": None,
        }


def byte_tensor(pointer: int, nbytes: int, device_index: int) -> Any:
    """A uint8 torch tensor over ``nbytes`` of device memory at ``pointer`` (no copy)."""
    import torch

    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8, device=f"cuda:{device_index}")
    return torch.as_tensor(_Bytes(pointer, nbytes), device=f"cuda:{device_index}")


GIB = 1 << 30


class OutOfMemoryError(MemoryError):
    """The sandbox's pool could not meet a request: its device memory limit."""


class Pool:
    """First-fit blocks of one mapped span, for torch's allocator in the sandbox.

    Simple on purpose: a call allocates a handful of tensors, and the pool's size is the
    sandbox's whole device memory limit, so a request it cannot meet is an honest
    out-of-memory error for the submission. torch's pluggable allocator does not check the
    pointer it gets (a null one becomes a tensor at address 0, whose kernel then faults), and
    an exception cannot cross the C callback, so a request the pool refuses is remembered
    (:attr:`refused`) and :meth:`check` raises it as the submission's out-of-memory error once
    the call is back in Python.
    """

    def __init__(self, base: int, size: int) -> None:
        self.base, self.size = base, size
        self.free: list[tuple[int, int]] = [(base, size)]  # (start, length), sorted
        self.used: dict[int, int] = {}
        self.lock = threading.Lock()
        self.refused: OutOfMemoryError | None = None  # the first request it could not meet

    def in_use(self) -> int:
        with self.lock:
            return sum(self.used.values())

    def allocate(self, nbytes: int) -> int:
        length = max((nbytes + ALIGN - 1) // ALIGN * ALIGN, ALIGN)
        with self.lock:
            for index, (start, room) in enumerate(self.free):
                if room >= length:
                    if room == length:
                        del self.free[index]
                    else:
                        self.free[index] = (start + length, room - length)
                    self.used[start] = length
                    return start
            if self.refused is None:
                self.refused = OutOfMemoryError(
                    self.message(sum(self.used.values()), length, max(self.free, default=None))
                )
        return 0

    def message(self, in_use: int, wanted: int, largest: tuple[int, int] | None) -> str:
        """What the student reads: how much of the limit the code held when it asked."""
        room = largest[1] if largest else 0
        scattered = (
            f" ({_gib(self.size - in_use)} GiB is free, but in pieces of at most {_gib(room)} GiB)"
            if self.size - in_use >= wanted
            else ""
        )
        return (
            f"CUDA out of memory: your code used {_gib(in_use)} of the {_gib(self.size)} GiB "
            f"GPU memory limit and asked for {_gib(wanted)} GiB more{scattered}. Free tensors "
            "you no longer need (del them, or write into an existing tensor with out=), or "
            "work on the data in smaller pieces."
        )

    def check(self) -> None:
        """Raise the refusal, if a request was refused since the last check."""
        refused, self.refused = self.refused, None
        if refused is not None:
            raise refused

    def release(self, pointer: int) -> None:
        with self.lock:
            length = self.used.pop(pointer, 0)
            if not length:
                return
            self.free.append((pointer, length))
            self.free.sort()
            merged: list[tuple[int, int]] = []
            for start, room in self.free:
                if merged and merged[-1][0] + merged[-1][1] == start:
                    merged[-1] = (merged[-1][0], merged[-1][1] + room)
                else:
                    merged.append((start, room))
            self.free = merged


def _gib(nbytes: int) -> str:
    return f"{nbytes / GIB:.2f}"


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
_installed: list[Any] = []  # the callbacks must outlive every tensor: kept for good
_pool: Pool | None = None


def install_torch_allocator(pool: Pool) -> None:
    """Make every CUDA tensor torch creates in this process come from ``pool``. Must run
    before torch initialises CUDA (torch refuses to swap an allocator in use)."""
    import torch

    # A refusal returns null (torch does not check it); Pool.check raises it afterwards.
    alloc = _ALLOC(lambda size, device, stream: pool.allocate(int(size)) or None)
    free = _FREE(lambda pointer, size, device, stream: pool.release(int(pointer or 0)))
    alloc_address = ctypes.cast(alloc, ctypes.c_void_p).value
    free_address = ctypes.cast(free, ctypes.c_void_p).value
    if alloc_address is None or free_address is None:
        raise CudaMemoryError("the allocator's callbacks have no address")
    allocator = torch._C._cuda_customAllocator(alloc_address, free_address)
    torch._C._cuda_changeCurrentAllocator(allocator)
    _installed.extend((alloc, free, allocator, pool))
    register_pool(pool)


def register_pool(pool: Pool | None) -> None:
    """``pool`` is this process's device memory from now on (:func:`installed_pool`)."""
    global _pool
    _pool = pool


def installed_pool() -> Pool | None:
    """The pool torch allocates from in this process (None before install_torch_allocator)."""
    return _pool


def lock_process(pid: int, timeout_ms: int) -> None:
    """Block ``pid``'s CUDA calls and wait for all the work it has already submitted to the
    GPU to finish (the driver's checkpoint lock, CUDA 12.8+ drivers). Raises
    CudaMemoryError where the driver cannot: an older driver (no entry point),
    CUDA_ERROR_NOT_SUPPORTED / NOT_PERMITTED (a runtime or a process it refuses), or
    CUDA_ERROR_TIMEOUT, after which the driver documents the process as left RUNNING."""
    args = _LockArgs(timeoutMs=max(int(timeout_ms), 1))
    _call("cuCheckpointProcessLock", pid, ctypes.pointer(args))


def unlock_process(pid: int) -> None:
    _call("cuCheckpointProcessUnlock", pid, ctypes.pointer(_UnlockArgs()))


def process_state(pid: int) -> int | None:
    """The driver's checkpoint state of ``pid`` (PROCESS_RUNNING, ...), None where it cannot
    tell (an older driver, a process it does not know)."""
    state = ctypes.c_int(-1)
    try:
        _call("cuCheckpointProcessGetState", pid, ctypes.pointer(state))
    except CudaMemoryError:
        return None
    return int(state.value)
