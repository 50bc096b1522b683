"""What does the operator watch of ``[rules] forbid`` cost a timed call?

.venv/bin/python -m bench.operator_watch_cost [--rounds 15]

The harness wraps the operators an exercise forbids in PyTorch's dispatcher before the
submission is imported (graders/harness/operator_watch.py) and leaves them wrapped for every
call, the timed ones included. This times calls of the exercises' own samples with the watch
off and on, side by side: each round times one call of each, in a random order, the watch
installed for the one and removed for the other, on the same inputs, in one process pinned to
one core, with torch on one thread as in the sandbox. Reported per workload: the median call
with the watch off and on, and the median of the rounds' ratios (on / off).

The workloads: the written-out softmax and layernorm at the CPU's timed size (a few large
operators), llm.c's column-by-column online softmax (samples/online_columns.py, a dozen small
operators per column: what a per-operator observer would cost most), and the library's
torch.softmax, a forbidden call, which the watch counts.

Never a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from graders.harness.operator_watch import OperatorWatch

REPO = Path(__file__).resolve().parents[1]

SOFTMAX_PATTERNS = ("softmax", "logsumexp", "logcumsumexp")
LAYERNORM_PATTERNS = ("layer_norm", "group_norm", "instance_norm", "batch_norm", "rms_norm")


def _sample(exercise: str, name: str, entry: str) -> Callable[..., Any]:
    path = REPO / "exercises" / "ch15" / exercise / "samples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{exercise}_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[..., Any] = getattr(module, entry)
    return function


def workloads() -> list[tuple[str, tuple[str, ...], Callable[[], Any]]]:
    rows, cols = 4096, 2048  # the CPU's timed size of softmax and layernorm
    x = torch.randn(rows, cols) * 25
    small = torch.randn(256, 2048) * 25
    y = torch.randn(rows, cols) * 2
    weight, bias = torch.randn(cols), torch.randn(cols)
    softmax_fast = _sample("softmax", "fast", "softmax")
    online = _sample("softmax", "online_columns", "softmax")
    layernorm_fast = _sample("layernorm", "fast", "layer_norm")
    return [
        ("softmax fast.py 4096x2048", SOFTMAX_PATTERNS, lambda: softmax_fast(x)),
        ("softmax online_columns.py 256x2048", SOFTMAX_PATTERNS, lambda: online(small)),
        (
            "layernorm fast.py 4096x2048",
            LAYERNORM_PATTERNS,
            lambda: layernorm_fast(y, weight, bias),
        ),
        ("torch.softmax 4096x2048 (forbidden)", SOFTMAX_PATTERNS, lambda: torch.softmax(x, -1)),
    ]


def _timed(call: Callable[[], Any]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def measure(rounds: int) -> None:
    for label, patterns, call in workloads():
        call()  # warm up: first-call costs are no one's
        off: list[float] = []
        on: list[float] = []
        ratios: list[float] = []
        for _ in range(rounds):
            times = {}
            for watched in random.sample([False, True], 2):
                watch = OperatorWatch(patterns if watched else ())
                watch.install()
                try:
                    times[watched] = _timed(call)
                finally:
                    watch.close()
            off.append(times[False])
            on.append(times[True])
            ratios.append(times[True] / times[False])
        print(
            f"{label:40s} off {statistics.median(off) * 1e3:9.2f} ms   "
            f"on {statistics.median(on) * 1e3:9.2f} ms   "
            f"on/off {statistics.median(ratios):.3f} (median of {rounds} rounds)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--core", type=int, default=None, help="pin to this core")
    args = parser.parse_args()
    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    torch.set_num_threads(1)
    measure(args.rounds)


if __name__ == "__main__":
    main()
