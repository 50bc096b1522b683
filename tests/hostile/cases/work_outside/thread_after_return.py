"""
class = "work_outside"
attack = "returns an empty tensor at once and fills it from a thread that runs after the return"
verdict = "wrong"
points = 0
"""

import threading
import time

import torch


def fill(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    time.sleep(0.02)  # long after `done`: only a sandbox that keeps running would finish
    torch.add(a, b, out=out)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.full_like(a, 7.0)
    threading.Thread(target=fill, args=(out, a, b), daemon=True).start()
    return out
