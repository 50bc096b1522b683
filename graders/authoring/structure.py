"""Trusted-side checks of an exercise's own code: shapes, degenerate answers, traffic.

Only reference.py and naive.py run here (instructor code, like the grader's own
reference calls); student code never does. Everything is small: meta tensors for the
big sizes, real tensors only for the correctness-check sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from graders.grading import correctness
from graders.harness import inputs as harness_inputs
from graders.spec.exercise import ExerciseSpec

_NO_DATA_OPS = ("aten::empty", "aten::empty_like", "aten::empty_strided")


@dataclass(frozen=True)
class Traffic:
    """What a function's eager operators move: the sum over operators of bytes in + out."""

    ops: int
    bytes: int


class _TrafficCounter(TorchDispatchMode):
    """Counts every aten operator call and the bytes of its tensor inputs and outputs.

    This is the traffic of running each operator as its own kernel (eager, unfused):
    every input is read from memory, every output written. Views move nothing.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.bytes = 0

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        returns = func._schema.returns
        is_view = bool(returns) and all(
            r.alias_info is not None and not r.alias_info.is_write for r in returns
        )
        if is_view or func._schema.name in _NO_DATA_OPS:
            return out
        self.ops += 1
        flat_in = torch.utils._pytree.tree_leaves((args, kwargs or {}))
        flat_out = torch.utils._pytree.tree_leaves(out)
        self.bytes += sum(_nbytes(t) for t in flat_in) + sum(_nbytes(t) for t in flat_out)
        return out


def _nbytes(value: Any) -> int:
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def layout(spec: ExerciseSpec, sizes: Mapping[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "name": item.name,
            "shape": list(item.concrete_shape(sizes)),
            "dtype": item.dtype,
            "dist": item.dist,
            "scale": item.scale,
        }
        for item in spec.inputs
    ]


def size_labels(spec: ExerciseSpec, device: str) -> list[tuple[str, dict[str, int]]]:
    plan = spec.sizes[device]
    return [
        *((f"sizes.{device}.check[{i}]", s) for i, s in enumerate(plan.check)),
        (f"sizes.{device}.timed", plan.timed),
    ]


def _shapes_text(spec: ExerciseSpec, sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{i.name}={tuple(i.concrete_shape(sizes))}" for i in spec.inputs)


def check_shapes(
    spec: ExerciseSpec, function: Callable[..., Any], devices: tuple[str, ...] | None = None
) -> list[str]:
    """Call the reference on meta tensors of every size of every device (no memory, no time)."""
    problems = []
    toml = spec.path / "exercise.toml"
    for device in devices if devices is not None else spec.devices:
        for label, sizes in size_labels(spec, device):
            tensors = [
                torch.empty(
                    item.concrete_shape(sizes),
                    dtype=harness_inputs.DTYPES[item.dtype],
                    device="meta",
                )
                for item in spec.inputs
            ]
            try:
                with torch.no_grad():
                    out = function(*tensors)
            except NotImplementedError:
                continue  # an operator without a meta kernel: the CPU check sizes run for real
            except Exception as exc:
                problems.append(
                    f"{toml}: field '{label}': the input shapes ({_shapes_text(spec, sizes)}) "
                    f"do not fit reference.py: {type(exc).__name__}: {str(exc)[:300]}"
                )
                continue
            if not isinstance(out, torch.Tensor):
                problems.append(
                    f"{spec.path / 'reference.py'}: field '{spec.entry}': returns "
                    f"{type(out).__name__} for {label}, not a torch.Tensor"
                )
    return problems


def check_real_and_degenerate(spec: ExerciseSpec, function: Callable[..., Any]) -> list[str]:
    """Run the reference on every CPU check size; on the largest, degenerate answers must fail.

    A zero tensor, an input returned unchanged, or the right answer rounded to bfloat16
    passing the tolerance would mean the inputs or tolerances cannot tell a real answer
    from a cheap one.
    """
    problems: list[str] = []
    toml = spec.path / "exercise.toml"
    if "cpu" not in spec.sizes:
        return problems
    largest: tuple[int, torch.Tensor, list[torch.Tensor], str] | None = None
    for label, sizes in size_labels(spec, "cpu")[:-1]:  # the timed size is too big to bother
        tensors = harness_inputs.make(layout(spec, sizes), 1234, "cpu")
        try:
            with torch.no_grad():
                out = function(*[t.clone() for t in tensors])
        except Exception as exc:
            problems.append(
                f"{toml}: field '{label}': reference.py raised {type(exc).__name__} on "
                f"({_shapes_text(spec, sizes)}): {str(exc)[:300]}"
            )
            continue
        if not isinstance(out, torch.Tensor):
            problems.append(f"{spec.path / 'reference.py'}: returns {type(out).__name__}")
            continue
        if out.is_floating_point() and out.numel() and not bool(torch.isfinite(out).all()):
            problems.append(
                f"{toml}: field '{label}': reference.py returns inf/NaN on these inputs; "
                "lower the input scale"
            )
        if largest is None or out.numel() > largest[0]:
            largest = (out.numel(), out, tensors, label)
    if largest is None or not largest[1].is_floating_point() or largest[0] < 2:
        return problems
    _, expected, tensors, label = largest
    tol = correctness.tolerance_for(expected.dtype, spec.tolerance)
    candidates: dict[str, torch.Tensor] = {
        "all zeros": torch.zeros_like(expected),
        "the answer rounded to bfloat16": expected.bfloat16().to(expected.dtype),
    }
    for item, tensor in zip(spec.inputs, tensors, strict=True):
        if tensor.shape == expected.shape and tensor.dtype == expected.dtype:
            candidates[f"input `{item.name}` returned unchanged"] = tensor
    for name, candidate in candidates.items():
        if correctness.compare(candidate, expected, tol).passed:
            problems.append(
                f"{toml}: field 'tolerance' / 'inputs': {name} passes as correct on {label}; "
                "tighten the tolerance or change the input scale"
            )
    return problems


# The share of an output's smallest values that, set to 0, must fail the tolerance.
SMALL_SHARE = 0.01
# Above this much ideal traffic the timed size is not run here; the largest check size is.
SMALL_VALUES_MAX_BYTES = 1 << 30


def check_small_values(spec: ExerciseSpec, function: Callable[..., Any]) -> list[str]:
    """On the CPU's timed size and inputs, the answer with its smallest 1 % of values set to 0
    must fail the tolerance.

    An ``atol`` above most of an output's values (softmax over logits of standard deviation
    25: 99 % of the probabilities are below 1e-6) lets a kernel skip them and leave zeros; a
    tolerance for such outputs compares small values relatively (``small_rtol``). The timed
    size, not a check size: the timed calls are what the spot checks judge, and how far an
    output's values spread depends on its shape (softmax's row width).
    """
    toml = spec.path / "exercise.toml"
    if "cpu" not in spec.sizes:
        return []
    sizes = dict(spec.sizes["cpu"].timed)
    if float(spec.cost_bytes(sizes)) > SMALL_VALUES_MAX_BYTES:
        sizes = largest_check(spec)
    tensors = harness_inputs.make(layout(spec, sizes), 4321, "cpu")
    try:
        with torch.no_grad():
            expected = function(*tensors)
    except Exception as exc:
        return [
            f"{toml}: field 'sizes.cpu.timed': reference.py raised {type(exc).__name__} on "
            f"({_shapes_text(spec, sizes)}): {str(exc)[:300]}"
        ]
    if not isinstance(expected, torch.Tensor) or not expected.is_floating_point():
        return []
    smallest = smallest_values(expected, SMALL_SHARE)
    if smallest is None:
        return []
    # The answer with these set to 0 differs from it only there: compare just them.
    tol = correctness.tolerance_for(expected.dtype, spec.tolerance)
    if not correctness.compare(torch.zeros_like(smallest), smallest, tol).passed:
        return []
    below = float((expected.abs() <= tol.atol).double().mean())
    return [
        f"{toml}: field 'tolerance': the answer with its smallest {100 * SMALL_SHARE:g}% of "
        f"values set to 0 passes as correct on the timed inputs ({_shapes_text(spec, sizes)}; "
        f"{100 * below:.3g}% of the values are below atol={tol.atol:g}); compare small values "
        "relatively: set small_rtol, or lower atol"
    ]


def smallest_values(values: torch.Tensor, share: float) -> torch.Tensor | None:
    """The smallest ``share`` (in magnitude, at least one) of the normal non-zero values of
    ``values``, flat; None when it has none (all zero, or too small for the dtype to hold at
    full precision, where hardware may flush them to 0 anyway)."""
    flat = values.reshape(-1)
    normal = flat[flat.abs() >= correctness.smallest_normal(values.dtype)]
    if normal.numel() == 0:
        return None
    count = max(1, int(share * normal.numel()))
    return normal[normal.abs().topk(count, largest=False, sorted=False).indices]


def traffic(spec: ExerciseSpec, function: Callable[..., Any], sizes: Mapping[str, int]) -> Traffic:
    tensors = harness_inputs.make(layout(spec, sizes), 99, "cpu")
    counter = _TrafficCounter()
    with torch.no_grad(), counter:
        function(*tensors)
    return Traffic(counter.ops, counter.bytes)


def largest_check(spec: ExerciseSpec) -> dict[str, int]:
    """The CPU check size with the most ideal traffic: big enough to show the structure."""
    return max(spec.sizes["cpu"].check, key=lambda s: float(spec.cost_bytes(s)))
