"""tl.dot's precision on a CPU worker is the GPU's (issue 38, class 6).

On an NVIDIA GPU a float32 ``tl.dot`` multiplies TF32-rounded operands (10 mantissa bits)
unless told ``input_precision="ieee"``; Triton's interpreter multiplied them in full float32,
so a Triton matmul that a GPU grades wrong was graded correct on a CPU. The harness now rounds
the operands as the GPU does (graders/harness/triton_interpreter.py).

The test predicts each verdict without Triton: the operands rounded to TF32 (or not, for
"ieee"), multiplied in float64, compared with the exercise's reference under its tolerance;
then it grades the same file in the real sandbox and requires that verdict. Both are Triton's
matmul tutorial (under @triton.autotune), with and without input_precision="ieee".
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graders import ExerciseSpec, grade, load_exercise
from graders.authoring import validate
from graders.grading import correctness, trusted_code
from graders.harness.inputs import make
from graders.harness.triton_interpreter import round_to_tf32
from graders.spec.layouts import input_layout

from .conftest import REPO

MATMUL = REPO / "exercises" / "ch15" / "matmul"
SAMPLES = {"tf32": "triton_tutorial.py", "ieee": "triton_ieee.py"}


def tf32(tensor: torch.Tensor) -> torch.Tensor:
    """float32 rounded to TF32 with torch alone: to nearest, ties to even, at 10 mantissa
    bits; infinities and NaNs as they are."""
    bits = tensor.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    rounded = (bits + 0x0FFF + ((bits >> 13) & 1)) & 0xFFFFE000
    rounded = torch.where((bits & 0x7F800000) == 0x7F800000, bits, rounded)
    signed = torch.where(rounded >= 1 << 31, rounded - (1 << 32), rounded)
    return signed.to(torch.int32).view(torch.float32)


def test_the_harness_rounds_to_tf32_as_torch_does() -> None:
    values = torch.randn(100_000, generator=torch.Generator().manual_seed(1)) * 1e3
    edge = torch.tensor([1.0, -1.0, 0.0, 1 + 2**-11, 1 + 3 * 2**-11, 3.4e38, float("inf")])
    values = torch.cat([values, edge])
    ours = torch.from_numpy(round_to_tf32(values.numpy()))
    assert torch.equal(ours, tf32(values))
    # 10 mantissa bits kept: the low 13 are zero, and ties go to the even neighbour.
    assert not (ours.view(torch.int32) & 0x1FFF).any()
    assert tf32(torch.tensor([1 + 2**-11])).item() == 1.0
    assert tf32(torch.tensor([1 + 3 * 2**-11])).item() == 1 + 2**-9
    assert np.isinf(round_to_tf32(np.array([np.inf], np.float32))[0])


def predicted_verdict(spec: ExerciseSpec, precision: str, seed: int = 0) -> str:
    """The verdict the GPU's arithmetic gives at the CPU's check sizes, without Triton."""
    reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
    for index, sizes in enumerate(spec.sizes["cpu"].check):
        a, b = make(input_layout(spec, sizes), seed + index, "cpu")
        if precision == "tf32":
            a, b = tf32(a), tf32(b)
        gpu = (a.double() @ b.double()).float()  # a float32 accumulator's error is far smaller
        expected = reference(*make(input_layout(spec, sizes), seed + index, "cpu"))
        tolerance = correctness.tolerance_for(expected.dtype, spec.tolerance)
        if not correctness.compare(gpu, expected, tolerance).passed:
            return "wrong"
    return "correct"


@pytest.fixture(scope="module")
def quick_matmul() -> ExerciseSpec:
    # Quick mode: one timed call on the last check size, and a curve that needs no companions.
    return validate.quick_spec(load_exercise(MATMUL))


@pytest.mark.parametrize("precision", sorted(SAMPLES))
def test_the_interpreter_gives_the_verdict_the_gpus_arithmetic_predicts(
    quick_matmul: ExerciseSpec, precision: str
) -> None:
    predicted = predicted_verdict(quick_matmul, precision)
    assert predicted == {"tf32": "wrong", "ieee": "correct"}[precision]  # the premise
    source = (MATMUL / "samples" / SAMPLES[precision]).read_text()
    report = grade(quick_matmul, source, device="cpu", compare=False, profile=False)
    assert report["verdict"] == predicted, (report["message"], report["stderr"])


def test_the_prediction_holds_for_other_draws(quick_matmul: ExerciseSpec) -> None:
    # The grader draws its own secret inputs: the TF32 miss must not hang on one draw.
    assert {predicted_verdict(quick_matmul, "tf32", seed) for seed in range(1, 6)} == {"wrong"}
    assert {predicted_verdict(quick_matmul, "ieee", seed) for seed in range(1, 6)} == {"correct"}


def test_the_samples_differ_only_in_input_precision() -> None:
    tutorial, ieee = ((MATMUL / "samples" / name).read_text() for name in SAMPLES.values())
    body = tutorial[tutorial.index("import torch") :]
    changed = body.replace(
        "tl.dot(a, b, accumulator)", 'tl.dot(a, b, accumulator, input_precision="ieee")'
    )
    assert changed != body and ieee.endswith(changed)
