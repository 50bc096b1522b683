"""
class = "freeze"
attack = "a double-forked child calls setsid (a daemon in its own session) and keeps spinning"
verdict = "correct"
points = 0
"""

import os
import time

import torch

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            sum(range(20000))
    os._exit(0)
os.wait()


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
