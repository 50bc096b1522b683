"""
class = "more_than_one_core"
attack = "forked workers move to every core and spin, so the calls get more than one core"
verdict = "correct"
points = 0
stdout = "worker cores: 1"
"""

import contextlib
import mmap
import os
import struct
import time

import torch

SLOTS = 1 << 22
shared = mmap.mmap(-1, 8 + 4 * SLOTS)
workers = []


def work(index: int) -> None:
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    print("worker cores:", len(os.sched_getaffinity(0)), flush=True)
    while True:  # busy: burns whatever core it may run on, every moment it may run
        struct.unpack_from("q", shared, 0)
        sum(range(2000))


for index in range(2):
    pid = os.fork()
    if pid == 0:
        work(index)
        os._exit(0)
    workers.append(pid)
time.sleep(0.2)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
