"""
class = "work_outside"
attack = "many short-lived threads each finish a slice of the output just after the return"
verdict = "wrong"
points = 0
"""

import random
import threading
import time

import torch


def part(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, delay: float) -> None:
    time.sleep(delay)
    out.copy_(a + b)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.full_like(a, 7.0)
    for index in range(16):
        piece = slice(index * a.numel() // 16, (index + 1) * a.numel() // 16)
        delay = 0.005 + random.random() * 0.01
        args = (out[piece], a[piece], b[piece], delay)
        threading.Thread(target=part, args=args, daemon=True).start()
    return out
