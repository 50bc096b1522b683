"""
class = "work_outside"
attack = "a background thread started at import keeps computing sums of every input it has seen"
verdict = "correct"
points = 0
"""

import threading
import time

import torch

seen: list[tuple[torch.Tensor, torch.Tensor]] = []
cache: dict[int, torch.Tensor] = {}


def precompute() -> None:
    while True:  # busy: tries to run between calls, where the sandbox should be frozen
        for a, b in list(seen):
            cache[a.data_ptr()] = a + b
        sum(range(10000))


threading.Thread(target=precompute, daemon=True).start()


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    seen.append((a, b))
    del seen[:-2]
    time.sleep(0.05)
    return a + b
