"""Fidelity: does the engine measure what an established tool measures?

The engine grades a plain ``x.clone()`` of a 128 MiB buffer (far beyond the LLC);
torch.utils.benchmark times the same clone in a separate process pinned to the same
core with the same environment (1 thread, huge-page allocator hint). Both report the
median; their ratio should be close to 1. (The engine flushes caches between calls,
torch.utils.benchmark does not; at 128 MiB the cache holds a negligible part.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from graders import grade, load_exercise
from graders.sandbox.launch import pick_core, sandbox_env

COPY = Path(__file__).resolve().parent / "copy"

_TORCH_BENCH = """
import json, torch, torch.utils.benchmark as tb
torch.set_num_threads(1)
n = {n}
x = torch.randn(n, device={device!r})
timer = tb.Timer(stmt="x.clone()", globals={{"x": x}}, num_threads=1)
m = timer.adaptive_autorange(threshold=0.01, min_run_time=2.0)
print(json.dumps({{"median_s": m.median, "iqr_s": m.iqr, "runs": len(m.times)}}))
"""


def torch_benchmark(n: int, device: str) -> dict[str, Any]:
    env = sandbox_env("/tmp", device)
    command = [sys.executable, "-c", _TORCH_BENCH.format(n=n, device=device)]
    core = pick_core(0)
    if device == "cpu" and core is not None:
        command = ["taskset", "-c", str(core), *command]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(device: str = "cpu") -> dict[str, Any]:
    spec = load_exercise(COPY)
    source = (COPY / "submission.py").read_text()
    report = grade(spec, source, device=device, compare=False, profile=False)
    perf, peak = report["performance"], report["peak"]
    assert report["verdict"] == "correct", report["message"]
    assert perf is not None  # a correct grading was timed
    n = spec.sizes[device].timed["n"]
    reference = torch_benchmark(n, device)
    engine_s = perf["median_s"]
    nbytes = 2 * n * 4
    return {
        "device": device,
        "n": n,
        "engine_median_s": engine_s,
        "engine_gbps": nbytes / engine_s / 1e9,
        "engine_runs": perf["runs"],
        "torch_benchmark_median_s": reference["median_s"],
        "torch_benchmark_gbps": nbytes / reference["median_s"] / 1e9,
        "ratio_engine_over_torch": engine_s / reference["median_s"],
        "peak_gbps": peak["gbps"] if peak is not None else None,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "cpu"), indent=2))
