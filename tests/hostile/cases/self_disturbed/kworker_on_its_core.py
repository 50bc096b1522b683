"""
class = "self_disturbed"
attack = "a thread of its own calls mbind(MPOL_MF_MOVE) in a loop: a kworker drains on its core"
verdict = "correct"
points = 0

How it would gain: mbind with MPOL_MF_MOVE first drains every core's per-CPU page lists,
and the kernel does that by queueing work for a kworker bound to each core, the grading
core included, then waits for it. While that kworker runs, the submission's main thread
waits for its core behind a task that is not the submission's own, which the stall rule
took for a busy machine: every timed call was set aside and measured again (18 in a
vector-add grading, where honest code has 0-3), and with the patience spent the phase was
graded provisional, which buys four automatic regrades and a "Pending" in the LMS.

What the engine must do: count kernel work that the sandbox's own system calls queue on
its core as the submission's own time. Its calls are kept as measured, no more are set
aside than for honest code, the grading is not provisional, and the slow work (a Python
loop over a hundredth of the elements on top of the sum) earns no points.
"""

import ctypes
import mmap
import threading

import torch

_SYS_MBIND = 237  # x86_64
_MPOL_BIND = 2
_MPOL_MF_MOVE = 1 << 1
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_region = mmap.mmap(-1, 1 << 20)
_region.write(b"x" * (1 << 20))  # fault the pages in: there is something to move
_address = ctypes.addressof(ctypes.c_char.from_buffer(_region))
_nodes = ctypes.c_ulong(1)  # node 0


def _drain_forever() -> None:
    while True:
        _libc.syscall(
            _SYS_MBIND,
            ctypes.c_void_p(_address),
            ctypes.c_ulong(1 << 20),
            _MPOL_BIND,
            ctypes.byref(_nodes),
            ctypes.c_ulong(64),
            _MPOL_MF_MOVE,
        )


threading.Thread(target=_drain_forever, daemon=True).start()


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = a + b
    flat = out.view(-1)
    for i in range(0, flat.numel(), 100):  # slow on purpose: no points are due
        flat[i] = a.view(-1)[i] + b.view(-1)[i]
    return out
