"""Subprocess side of import-kernelbench: run a problem file at candidate sizes, on meta.

Usage: python kb_probe.py <problem.py> <candidates.json>; prints one JSON line with, per
candidate, the init inputs, the input shapes/dtypes, the output's, weight bytes and FLOPs.
The problem file is instructor-supplied; it runs here, in a child process, never in the
grader. Tensors live on the meta device, so KernelBench's gigabyte sizes cost nothing.
"""

from __future__ import annotations

import ast
import json
import sys
from typing import Any


def _load(path: str, overrides: dict[str, int]) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    for node in tree.body:  # replace the module-level size constants
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in overrides
        ):
            node.value = ast.copy_location(ast.Constant(overrides[node.targets[0].id]), node.value)
    namespace: dict[str, Any] = {"__name__": "kernelbench_problem"}
    exec(compile(tree, path, "exec"), namespace)
    return namespace


def _describe(t: Any) -> dict[str, Any]:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}


def main() -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    path, candidates = sys.argv[1], json.loads(sys.argv[2])
    results = []
    for sizes in candidates:
        real = bool(sizes.pop("__real__", False))  # small sizes: run for real, for the scale
        ns = _load(path, sizes)
        with torch.device("cpu" if real else "meta"):
            init = list(ns["get_init_inputs"]())
            torch.manual_seed(0)
            model = ns["Model"](*init)
            inputs = list(ns["get_inputs"]())
            if real:  # signed, like the exercise's inputs
                inputs = [torch.randn_like(t) if t.is_floating_point() else t for t in inputs]
            counter = FlopCounterMode(display=False)
            with counter, torch.no_grad():
                out = model(*inputs)
        rms = float(out.double().pow(2).mean().sqrt()) if real and out.numel() else None
        results.append(
            {
                "out_rms": rms,
                "init": init,
                "inputs": [_describe(t) for t in inputs],
                "output": _describe(out),
                "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters())
                + sum(b.numel() * b.element_size() for b in model.buffers()),
                "flops": int(counter.get_total_flops()),
            }
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
