"""
class = "compile_budget"
attack = "starts a real C++ compiler that waits on its input forever, then sleeps 95 s"
verdict = "timeout"
points = 0
message = "import and the correctness checks together have 20 s"

How it would gain: if the longer budget were given while a compiler's process merely exists,
a cc1plus left waiting on an open pipe (it sleeps, using no CPU) would stretch the import's
budget towards compile_s for a sleep.

What the engine must do: count a compiler's time only while it runs or waits for the core; a
sleeping one adds nothing, so the import runs out of setup_s (20 s in the corpus).
"""

import subprocess
import time

import torch

cc1plus = subprocess.run(
    ["gcc", "-print-prog-name=cc1plus"], capture_output=True, text=True, check=True
).stdout.strip()
# Reads its source from the pipe, which stays open and empty: the compiler sleeps on it.
idle = subprocess.Popen([cc1plus, "-quiet", "-o", "/dev/null", "-"], stdin=subprocess.PIPE)
time.sleep(95.0)


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b
