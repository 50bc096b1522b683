"""The sandbox side of gpu-check's hardware probe (graders/gpu_check/hardware_probe.py).

One process of a CUDA sandbox that maps the device memory the trusted side exported (the
descriptor it inherits, imported as the sandbox's uid, as the harness imports its inputs and
pool) and does what it is told, one line at a time, through the driver API alone (no torch,
so it starts in a fraction of a second):

    -> ready <pid>          mapped
    <- write <value>        fill the allocation's first words with value, synchronise
    -> wrote
    <- read
    -> value <word>         the allocation's first word
    <- exit

An error is one line ``error <text>``, then the process ends.
"""

from __future__ import annotations

import os
import sys

from . import cuda_memory

WORDS = 1024  # how much of the allocation a write covers


def main(fd: int, size: int, control_fd: int, results_fd: int) -> None:
    out = os.fdopen(results_fd, "w", buffering=1, encoding="utf-8")
    commands = os.fdopen(control_fd, "r", encoding="utf-8")
    try:
        cuda_memory.make_current(0)
        memory = cuda_memory.SharedMemory.open(fd, size, 0)
        os.close(fd)
        out.write(f"ready {os.getpid()}\n")
        for line in commands:
            op, *args = line.split()
            if op == "write":
                cuda_memory.fill_u32(memory.pointer, int(args[0]), WORDS)
                out.write("wrote\n")
            elif op == "read":
                out.write(f"value {cuda_memory.read_u32(memory.pointer)}\n")
            else:
                break
    except cuda_memory.CudaMemoryError as exc:
        out.write(f"error {exc}\n")
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:5]))
