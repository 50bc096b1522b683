"""Peak probes, run in a subprocess with the same timer and thread settings as gradings.

Bandwidth: a STREAM-style triad ``a = b + s * c`` (two reads, one write, counted as
3 x 4 bytes per element) on arrays far larger than the last-level cache; the best
of several runs, as STREAM reports. Compute: a square fp32 matmul (2 n^3 FLOPs).
Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import torch

from . import timing


def _best_seconds(fn: Callable[[], object], repeats: int, timer: timing.Timer) -> float:
    best = float("inf")
    for _ in range(repeats):
        timer.start()
        fn()
        best = min(best, timer.stop() / 1e9)
    return best


def _triad_seconds(n: int, device: str, repeats: int, timer: timing.Timer) -> float:
    a, b, c = (torch.empty(n, dtype=torch.float32, device=device) for _ in range(3))
    b.fill_(1.0)
    c.fill_(2.0)
    return _best_seconds(lambda: torch.add(b, c, alpha=3.0, out=a), repeats, timer)


def _matmul_seconds(m: int, device: str, timer: timing.Timer) -> float:
    x, y = (torch.randn(m, m, device=device) for _ in range(2))
    out = torch.empty(m, m, device=device)
    return _best_seconds(lambda: torch.mm(x, y, out=out), 5, timer)


def main(device: str) -> None:
    cuda = device.startswith("cuda")
    if not cuda:
        torch.set_num_threads(1)
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
    timer = timing.Timer(device)
    n = (1 << 28) if cuda else (1 << 24)
    triad_s = _triad_seconds(n, device, 10 if cuda else 8, timer)
    m = 8192 if cuda else 1024
    matmul_s = _matmul_seconds(m, device, timer)
    name = torch.cuda.get_device_name(device) if cuda else "cpu"
    print(
        json.dumps(
            {
                "device_name": name,
                "gbps": 3 * n * 4 / triad_s / 1e9,
                "flops_per_s": 2 * m**3 / matmul_s,
                "method": f"triad a=b+s*c over 3x{n * 4 >> 20} MiB, best of runs; "
                f"fp32 matmul {m}x{m}; {'cuda events' if cuda else 'perf_counter_ns, 1 thread'}",
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
