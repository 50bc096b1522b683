"""The languages a GPU course uses: Triton kernels and CUDA C++ (load_inline) submissions.

On a CPU worker a Triton kernel runs under Triton's interpreter, in the real sandbox: its
results are checked, its timing earns nothing and the report says why. CUDA C++ cannot run
there at all and is rejected before anything starts. The gradings use the quick specs
(conftest's vector-add, validate's quick mode for gelu-residual) and share conftest's cache,
so the Triton sample test_engine grades is graded once per session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from graders import ExerciseSpec, Report, grade, load_exercise
from graders.authoring import validate
from graders.authoring.meta import load_expectations
from graders.errors import SpecError
from graders.grading import interpreted, precheck
from graders.report import build
from graders.report import schema as report_schema
from graders.sandbox import launch as sandbox

from .conftest import REPO, VECTOR_ADD

GELU_RESIDUAL = REPO / "exercises" / "ch15" / "gelu-residual"
TRITON_SAMPLE = (VECTOR_ADD / "samples" / "triton_kernel.py").read_text()
CUDA_SAMPLE = (VECTOR_ADD / "samples" / "cuda_inline.py").read_text()


# ------------------------------------------------------------------ telling the languages apart


@pytest.mark.parametrize(
    ("source", "language"),
    [
        (TRITON_SAMPLE, "triton"),
        (CUDA_SAMPLE, "cuda_cpp"),
        ((VECTOR_ADD / "samples" / "fast.py").read_text(), "python"),
        ("import triton as tr\n@tr.jit\ndef k(x):\n    pass\n", "triton"),
        ("from triton import jit\n@jit\ndef k(x):\n    pass\n", "triton"),
        ("import triton.language\n@triton.jit()\ndef k(x):\n    pass\n", "triton"),
        ("import triton\n@triton.autotune([], key=[])\n@triton.jit\ndef k(x):\n    pass\n",
         "triton"),
        # Importing triton is not writing a kernel; another package's jit is not Triton's.
        ("import triton\ndef f(x):\n    return x\n", "python"),
        ("import numba, triton\n@numba.jit\ndef f(x):\n    return x\n", "python"),
        # load_inline without CUDA sources is a C++ extension for the CPU.
        ("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', 'int f();')\n",
         "python"),
        ("import torch\nm = torch.utils.cpp_extension.load_inline('m', cpp_sources='',"
         " cuda_sources=None)\n", "python"),
        ("import torch.utils.cpp_extension as ext\nm = ext.load_inline('m', '', 'k')\n",
         "cuda_cpp"),
        ("this is not python(", "python"),
    ],
)  # fmt: skip
def test_the_language_is_read_from_the_syntax_tree(source: str, language: str) -> None:
    assert precheck.language(source) == language


def test_cuda_cpp_is_rejected_on_a_cpu_worker_only() -> None:
    problem, _ = precheck.find_problem(CUDA_SAMPLE, "vector_add", 65536, device="cpu")
    assert problem == precheck.CUDA_CPP_ON_CPU
    assert "CUDA C++ submission" in problem and "needs a GPU worker" in problem
    assert precheck.find_problem(CUDA_SAMPLE, "vector_add", 65536) == (problem, CUDA_SAMPLE)
    assert precheck.find_problem(CUDA_SAMPLE, "vector_add", 65536, device="cuda")[0] is None
    # Triton is never rejected: a CPU worker interprets it.
    assert precheck.find_problem(TRITON_SAMPLE, "vector_add", 65536, device="cpu")[0] is None


# ------------------------------------------------------------------ the sandbox's environment


def test_the_sandbox_interprets_triton_on_cpu_and_keeps_compile_caches_private() -> None:
    for device in ("cpu", "cuda"):
        env = sandbox.sandbox_env("/scratch", device)
        assert env["TRITON_CACHE_DIR"].startswith(env["HOME"] + "/")
        assert env["TORCH_EXTENSIONS_DIR"].startswith(env["HOME"] + "/")
        assert (env.get("TRITON_INTERPRET") == "1") is (device == "cpu")


def test_a_triton_kernel_is_interpreted_on_cpu_only(quick_spec: ExerciseSpec) -> None:
    for device, expected in (("cpu", True), ("cuda", False)):
        builder = build.ReportBuilder(quick_spec, device)
        assert not builder.interpreted
        builder.language = "triton"
        assert builder.interpreted is expected


# ------------------------------------------------------------------ graded in the real sandbox


def assert_interpreted_and_correct(report: Report, spec: ExerciseSpec) -> None:
    assert report_schema.validate(report) == []
    assert report["verdict"] == "correct", (report["message"], report["stderr"])
    assert report["score"] == spec.scoring.correctness_points  # correctness points stand
    assert report["performance"] is None  # never timed: the interpreter's time means nothing
    correctness = report["correctness"]
    assert correctness is not None and correctness["passed"] is True
    assert report["flags"] == []  # nothing untrustworthy: only meaningless, so no review
    assert report.get("notes") == [build.INTERPRETED_NOTE]
    assert report["message"] == build.INTERPRETED_CORRECT
    assert build.INTERPRETED_CORRECT.endswith(build.INTERPRETED_NOTE)
    assert "Performance needs a GPU" in build.INTERPRETED_NOTE


def test_a_triton_vector_add_runs_under_the_interpreter_on_cpu(
    graded: Callable[..., Report], quick_spec: ExerciseSpec
) -> None:
    assert_interpreted_and_correct(graded("triton_kernel.py"), quick_spec)


def test_a_triton_kernel_is_also_checked_at_the_timed_size(
    graded: Callable[..., Report], quick_spec: ExerciseSpec
) -> None:
    # Issue 38, class 3: the check sizes are public; one more call, untimed, at the timed size.
    checks = len(quick_spec.sizes["cpu"].check) + len(quick_spec.check_cases)
    correctness = graded("triton_kernel.py")["correctness"]
    assert correctness is not None and correctness["trials"] == checks + 1


def test_an_autotuned_kernel_runs_one_configuration_on_cpu(
    graded: Callable[..., Report], quick_spec: ExerciseSpec
) -> None:
    # Issue 38, class 6: the autotuner raised "0 active drivers" under the interpreter.
    report = graded("triton_autotune.py")
    assert report["verdict"] == "correct", (report["message"], report["stderr"])
    assert report["score"] == quick_spec.scoring.correctness_points
    assert report.get("notes") == [build.INTERPRETED_NOTE, interpreted.AUTOTUNE_NOTE]


def test_triton_is_a_kernel_launched_not_a_decorator(quick_spec: ExerciseSpec) -> None:
    run = SimpleNamespace(triton_launches=0)
    assert interpreted.observed_language("triton", "cpu", run) == "python"  # type: ignore[arg-type]
    assert interpreted.observed_language("triton", "cuda", run) == "triton"  # type: ignore[arg-type]
    run.triton_launches = 1
    assert interpreted.observed_language("python", "cpu", run) == "triton"  # type: ignore[arg-type]


def test_a_python_submission_has_no_note(graded: Callable[..., Report]) -> None:
    report = graded("fast.py")
    assert report["verdict"] == "correct" and "notes" not in report


def test_a_triton_kernel_with_a_wrong_mask_is_wrong(graded: Callable[..., Report]) -> None:
    wrong_mask = TRITON_SAMPLE.replace("mask = offsets < n ", "mask = offsets < n - 1 ")
    assert wrong_mask != TRITON_SAMPLE
    report = graded(wrong_mask)
    assert report["verdict"] == "wrong", report["message"]
    assert report["score"] == 0.0
    assert report.get("notes") == [build.INTERPRETED_NOTE]  # why it ran the way it did


def test_a_cuda_cpp_submission_is_rejected_on_cpu_with_a_message(
    graded: Callable[..., Report],
) -> None:
    report = graded("cuda_inline.py")
    assert report["verdict"] == "rejected"
    assert report["message"] == precheck.CUDA_CPP_ON_CPU
    assert report["gradable"] is False and report["score"] == 0.0
    assert "notes" not in report
    assert report_schema.validate(report) == []


def test_a_fused_triton_gelu_residual_matches_the_reference_on_cpu() -> None:
    # Quick mode: one timed call on the last check size, and a curve that needs no companions.
    spec = validate.quick_spec(load_exercise(GELU_RESIDUAL))
    source = (GELU_RESIDUAL / "samples" / "triton_fused.py").read_text()
    report = grade(spec, source, device="cpu", profile=False, compare=False)
    assert_interpreted_and_correct(report, spec)


# ------------------------------------------------------------------ expected.toml per device


def test_expected_toml_may_say_what_each_device_gives(tmp_path: Path) -> None:
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "kernel.py").write_text("")
    (samples / "plain.py").write_text("")
    (samples / "expected.toml").write_text(
        '[kernel]\nverdict = "rejected"\nscore = [0, 0]\n'
        '[kernel.cuda]\nverdict = "correct"\nscore = [6, 10]\n'
        '[plain]\nverdict = "wrong"\nscore = [0, 0]\n'
    )
    kernel, plain = load_expectations(tmp_path, 10.0)
    assert (kernel.verdict, kernel.where) == ("rejected", "kernel")
    on_gpu = kernel.for_device("cuda")
    assert (on_gpu.verdict, on_gpu.low, on_gpu.high, on_gpu.where) == (
        "correct", 6.0, 10.0, "kernel.cuda",
    )  # fmt: skip
    assert kernel.for_device("cpu") is kernel
    assert plain.for_device("cuda") is plain  # no table of its own: the top-level keys hold

    (samples / "expected.toml").write_text(
        '[kernel]\nverdict = "correct"\nscore = [0, 10]\n[kernel.rocm]\nverdict = "correct"\n'
        '[plain]\nverdict = "wrong"\nscore = [0, 0]\n'
    )
    with pytest.raises(SpecError, match=r"field 'kernel.rocm': unknown key"):
        load_expectations(tmp_path, 10.0)
    (samples / "expected.toml").write_text(
        '[kernel]\nverdict = "correct"\nscore = [0, 10]\n[kernel.cuda]\nverdict = "fine"\n'
        '[plain]\nverdict = "wrong"\nscore = [0, 0]\n'
    )
    with pytest.raises(SpecError, match=r"field 'kernel.cuda.verdict'"):
        load_expectations(tmp_path, 10.0)


def test_the_validator_checks_the_entry_of_the_device_it_grades_on() -> None:
    spec = load_exercise(VECTOR_ADD)
    expectations = [
        e for e in load_expectations(VECTOR_ADD, spec.max_score) if e.name == "cuda_inline"
    ]
    rejected = {"verdict": "rejected", "score": 0.0, "message": "needs a GPU worker"}
    correct = {"verdict": "correct", "score": 8.0, "message": None}
    check = validate._check_gradings
    for device, report, ok in (
        ("cpu", rejected, True),
        ("cpu", correct, False),
        ("cuda", correct, True),
        ("cuda", rejected, False),
    ):
        reports = {"samples/cuda_inline": report}
        problems = check(spec, expectations, reports, {}, True, device)
        assert (problems == []) is ok, (device, problems)
    (problem,) = check(spec, expectations, {"samples/cuda_inline": rejected}, {}, True, "cuda")
    assert "field 'cuda_inline.cuda.verdict': expected 'correct', graded 'rejected'" in problem
