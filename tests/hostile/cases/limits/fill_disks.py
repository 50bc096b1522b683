"""
class = "limits"
attack = "writes 1.5 GiB each to /tmp, $HOME and out/ until a write fails"
verdict = "correct"
points = 0
stdout = "filled"
"""

import os
import time

import torch

chunk = b"\0" * (16 << 20)
for place in ("/tmp", os.environ.get("HOME", "/tmp"), "out"):
    written = 0
    try:
        os.makedirs(place, exist_ok=True)
        for index in range(96):  # 1.5 GiB, in files of at most 64 MiB
            with open(os.path.join(place, f"fill{index // 4}"), "ab") as handle:
                handle.write(chunk)
            written += len(chunk)
    except OSError as exc:
        print(f"{place}: stopped after {written >> 20} MiB: {exc}", flush=True)
    print(f"{place}: filled {written >> 20} MiB", flush=True)
    for name in os.listdir(place) if os.path.isdir(place) else []:
        if name.startswith("fill"):
            os.unlink(os.path.join(place, name))


def vector_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    time.sleep(0.05)
    return a + b
