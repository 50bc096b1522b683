"""
class = "limits"
attack = "ftruncate the shared input arena's fd to 0 (the trusted side would fault on its mapping)"
verdict = "correct"
points = 0
stdout = "ftruncate refused"
"""

import os
import time

import torch

for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        continue
    if "memfd:" in target:
        for size in (0, 1 << 40):
            try:
                os.ftruncate(int(name), size)
                print("ftruncate allowed:", size, flush=True)
            except OSError as exc:
                print("ftruncate refused:", size, exc, flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
