"""Triton's interpreter made to grade as a GPU would (a CPU worker, ``TRITON_INTERPRET=1``).

Installed by the harness before any student code exists; nothing is imported until the
submission imports ``triton`` itself (a hook on that import), so a runner that never sees
Triton pays nothing. Then three things change in the interpreter:

* **launches are counted** (:func:`launches`): the harness reports them with each call, and
  the trusted side treats a submission as Triton only once a kernel was launched, never for
  a decorator in its source (issue 38, class 3);
* **``@triton.autotune`` runs one configuration**: the autotuner benchmarks its configurations
  on a device, which the interpreter does not have ("0 active drivers"), so it takes the first
  one left after the kernel's own ``early_config_prune`` (its ``perf_model`` needs a device
  too, and is skipped). A correct kernel is correct in each configuration;
* **``tl.dot`` on float32 rounds its operands to TF32** unless ``input_precision="ieee"`` (or
  the older ``allow_tf32=False``), as an NVIDIA GPU's tensor cores do by default: the
  interpreter itself multiplies in full float32, which graded a kernel correct on a CPU that a
  GPU grades wrong. ``"tf32x3"`` (three TF32 products) is float32 to within its last bits and
  stays as the interpreter computes it.

This process is the student's, so the submission can undo any of it; what it gains by that is
bounded (graders/grading/interpreted.py says what the trusted side believes of these counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from . import after_import

# The fields the harness adds to each ``done`` (graders/sandbox/protocol.py).
_counts = {"triton_launches": 0, "triton_autotuned": 0}


def launches() -> dict[str, int]:
    """Triton kernels launched so far, and how many of those launches went through an
    autotuner."""
    return dict(_counts)


def round_to_tf32(values: Any) -> Any:
    """float32 values with their mantissas rounded to TF32's 10 bits, to nearest (ties to
    even), as NumPy float32; infinities and NaNs are kept as they are."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    # Add half of the dropped 13 bits' range (less one when the kept last bit is even), then
    # clear them: round to nearest, ties to even. A carry into the exponent is still right.
    bias = ((bits >> np.uint32(13)) & np.uint32(1)) + np.uint32(0x0FFF)
    rounded = (bits + bias) & np.uint32(0xFFFFE000)
    return np.where(special, bits, rounded).view(np.float32)


def _patch(triton: ModuleType) -> None:
    """Apply the three changes to an imported ``triton`` (see the module docstring)."""
    from triton._C.libtriton import ir  # type: ignore[import-untyped]
    from triton.runtime import autotuner, interpreter  # type: ignore[import-untyped]

    executor = interpreter.GridExecutor
    launch = executor.__call__

    def counted_launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        _counts["triton_launches"] += 1
        return launch(self, *args, **kwargs)

    executor.__call__ = counted_launch

    builder = interpreter.InterpreterBuilder
    create_dot = builder.create_dot
    tf32 = ir.INPUT_PRECISION.TF32

    def dot_as_on_a_gpu(
        self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any
    ) -> Any:
        if input_precision == tf32 and a.dtype == triton.language.float32:
            a = interpreter.TensorHandle(round_to_tf32(a.data), a.dtype)
            b = interpreter.TensorHandle(round_to_tf32(b.data), b.dtype)
        return create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    builder.create_dot = dot_as_on_a_gpu

    tuner = autotuner.Autotuner
    prune = tuner.prune_configs
    run = tuner.run

    def first_config(self: Any, kwargs: dict[str, Any]) -> Sequence[Any]:
        model, self.perf_model = self.perf_model, None  # it would time on a device
        try:
            return list(prune(self, kwargs))[:1]
        finally:
            self.perf_model = model

    def counted_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        _counts["triton_autotuned"] += 1
        return run(self, *args, **kwargs)

    tuner.prune_configs = first_config
    tuner.run = counted_run


def install() -> None:
    """Patch Triton as soon as the submission imports it (see the module docstring)."""
    after_import.when_imported("triton", _patch)
