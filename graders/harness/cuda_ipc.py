"""CUDA memory shared between processes, through the driver API (libcuda) and nothing else.

Both sides use it: the trusted side allocates each grading's device inputs and exports them;
the harness opens them before any student code exists, so the inputs are on the device
before ``go`` and never pass through host memory. After a call the harness exports the
allocation its output lies in, and the trusted side opens it, while the sandbox is frozen,
to compare the output on the device.

It talks to libcuda with ctypes rather than through torch's own tensor sharing: that needs a
reference-count file in /dev/shm that each side names for the other, and a sandbox has its
own /dev/shm. The driver ships libcuda.so.1 wherever there is a CUDA GPU, so this costs no
package. Tensors over raw device pointers are built from ``__cuda_array_interface__`` as
bytes and then viewed as the real dtype (bfloat16 has no array-interface type string).
"""

from __future__ import annotations

import ctypes
from typing import Any

HANDLE_BYTES = 64  # sizeof(CUipcMemHandle)
_LAZY_PEER_ACCESS = 1  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
_lib: ctypes.CDLL | None = None


class CudaIpcError(Exception):
    """The driver refused an IPC or checkpoint call; the text names the call and the code."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


def driver() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        try:
            _lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CudaIpcError(f"the CUDA driver library is not here ({exc})") from None
    return _lib


def _symbol(name: str) -> Any:
    """The newest versioned entry point of ``name`` (cuda.h maps e.g. cuMemGetAddressRange
    to cuMemGetAddressRange_v2)."""
    lib = driver()
    for candidate in (f"{name}_v2", name):
        function = getattr(lib, candidate, None)
        if function is not None:
            return function
    raise CudaIpcError(f"the CUDA driver has no {name} (too old for this)")


def _check(code: int, call: str) -> None:
    if code != 0:
        text = ctypes.c_char_p()
        with_name = getattr(driver(), "cuGetErrorName", None)
        if with_name is not None and with_name(code, ctypes.byref(text)) == 0 and text.value:
            raise CudaIpcError(f"{call} failed: {text.value.decode()} ({code})")
        raise CudaIpcError(f"{call} failed with CUDA error {code}")


def make_current(device_index: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread."""
    import torch

    torch.cuda.init()
    torch.cuda.set_device(device_index)
    torch.empty(1, device=f"cuda:{device_index}")  # torch creates the primary context lazily
    current = ctypes.c_void_p()
    _check(_symbol("cuCtxGetCurrent")(ctypes.byref(current)), "cuCtxGetCurrent")
    if current.value:
        return
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _check(_symbol("cuDeviceGet")(ctypes.byref(device), device_index), "cuDeviceGet")
    _check(
        _symbol("cuDevicePrimaryCtxRetain")(ctypes.byref(context), device),
        "cuDevicePrimaryCtxRetain",
    )
    _check(_symbol("cuCtxSetCurrent")(context), "cuCtxSetCurrent")


def address_range(pointer: int) -> tuple[int, int]:
    """(base, size) of the allocation that holds ``pointer``."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    function = _symbol("cuMemGetAddressRange")
    _check(
        function(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)),
        "cuMemGetAddressRange",
    )
    return int(base.value), int(size.value)


def allocate(nbytes: int) -> int:
    """A device allocation of its own (cuMemAlloc), outside torch's caching allocator: a
    block of that allocator may share its segment with other tensors, and exporting the
    segment would show them to the process that opens the handle."""
    pointer = ctypes.c_uint64()
    _check(_symbol("cuMemAlloc")(ctypes.byref(pointer), ctypes.c_size_t(nbytes)), "cuMemAlloc")
    return int(pointer.value)


def free(pointer: int) -> None:
    _check(_symbol("cuMemFree")(ctypes.c_uint64(pointer)), "cuMemFree")


def export(pointer: int) -> tuple[str, int, int]:
    """(handle as hex, offset of ``pointer`` in its allocation, the allocation's size)."""
    base, size = address_range(pointer)
    handle = _Handle()
    _check(_symbol("cuIpcGetMemHandle")(ctypes.byref(handle), ctypes.c_uint64(base)), "export")
    return bytes(handle.reserved).hex(), pointer - base, size


def open_handle(handle_hex: str) -> tuple[int, int]:
    """(base pointer, size) of another process's allocation, mapped into this one."""
    raw = bytes.fromhex(handle_hex)
    if len(raw) != HANDLE_BYTES:
        raise CudaIpcError(f"an IPC handle has {HANDLE_BYTES} bytes, not {len(raw)}")
    handle = _Handle()
    handle.reserved = raw
    pointer = ctypes.c_uint64()
    function = _symbol("cuIpcOpenMemHandle")
    _check(function(ctypes.byref(pointer), handle, _LAZY_PEER_ACCESS), "cuIpcOpenMemHandle")
    _, size = address_range(int(pointer.value))
    return int(pointer.value), size


def close_handle(pointer: int) -> None:
    _check(_symbol("cuIpcCloseMemHandle")(ctypes.c_uint64(pointer)), "cuIpcCloseMemHandle")


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


class _LockArgs(ctypes.Structure):
    _fields_ = [
        ("timeoutMs", ctypes.c_uint),
        ("reserved0", ctypes.c_uint),
        ("reserved1", ctypes.c_uint64 * 7),
    ]


class _UnlockArgs(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


def lock_process(pid: int, timeout_ms: int) -> None:
    """Block ``pid``'s CUDA calls and wait for all the work it has already submitted to the
    GPU to finish (the driver's checkpoint lock, CUDA 12.8+ drivers). Raises CudaIpcError
    when the driver cannot (older driver, a sandbox runtime that lacks it, a timeout)."""
    args = _LockArgs(timeoutMs=max(int(timeout_ms), 1))
    _check(_symbol("cuCheckpointProcessLock")(pid, ctypes.byref(args)), "cuCheckpointProcessLock")


def unlock_process(pid: int) -> None:
    args = _UnlockArgs()
    _check(
        _symbol("cuCheckpointProcessUnlock")(pid, ctypes.byref(args)), "cuCheckpointProcessUnlock"
    )
