"""
class = "limits"
attack = "four forked children each allocate 400 MiB (each under the 1 GiB limit, together past it)"
verdict = "correct"
points = 0
stdout = "children killed: 4"
"""

import os
import time

import torch

children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(400 << 20)
        for offset in range(0, len(block), 4096):
            block[offset] = 1  # touch every page so it is really held
        time.sleep(30)
        os._exit(0)
    children.append(pid)
killed = 0
deadline = time.monotonic() + 15
while children and time.monotonic() < deadline:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.remove(pid)
            killed += os.WIFSIGNALED(status)
    time.sleep(0.05)
    if len(children) < 4 and killed == 4 - len(children) and killed >= 2:
        break
for pid in children:  # whatever survived: the limit held for the group as a whole
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    killed += 1
print("children killed:", killed, flush=True)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
