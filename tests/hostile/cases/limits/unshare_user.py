"""
class = "limits"
attack = "unshare(CLONE_NEWUSER) through ctypes to become root in a new user namespace"
verdict = "correct"
points = 0
stdout = "unshare refused"
"""

import ctypes
import os
import time

import torch

CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(CLONE_NEWUSER) == 0:
    print("unshare allowed, uid", os.getuid(), flush=True)
else:
    print("unshare refused:", os.strerror(ctypes.get_errno()), flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
