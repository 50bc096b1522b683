"""``python -m graders gpu-check`` without a GPU: the containment probe's text, the table and
JSON, the pass/fail rule, the plan, the exercise each step grades on the CPU, and step
isolation (a crash, a hang, no time left). The whole ``--device cpu --quick`` run is
tests/graders/test_gpu_check_cpu_run.py. No outcome here depends on a time that was
measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graders.gpu_check import exercises, plan, probe, results, runner, timing_steps
from graders.gpu_check.ncu_step import bytes_of
from graders.gpu_check.results import NEEDS_GPU, Row, StepOutcome
from graders.gpu_check.sample_steps import agreement, expected_verdict, lanes
from graders.gpu_check.steps import STEPS, Step, StepContext
from graders.gpu_check.timing_steps import timer_script

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- the probe


def _facts(**changes: object) -> probe.Facts:
    facts = probe.Facts(
        kernel="4.4.0",
        runtime="gVisor",
        euid=0,
        sandbox_mode="root",
        cgroup_mounts=["cgroup v2 at /sys/fs/cgroup (controllers: memory pids cpu cpuset)"],
        unavailable={"cgroup-v1": "no cgroup v1 hierarchy for memory", "cgroup-v2": None},
        chosen="cgroup-v2",
        freeze_test="froze and thawed an empty group",
        freeze_ok=True,
        userns="unshare(CLONE_NEWUSER) works",
        userns_ok=True,
        seccomp_self="Seccomp: 0",
        seccomp_filter="built (520 bytes of BPF)",
        seccomp_filter_ok=True,
        seccomp_enforced="loaded by bwrap: unshare(CLONE_NEWUSER) refused with EPERM",
        seccomp_enforced_ok=True,
        bwrap_candidates=["/x/bwrap"],
        bwrap="/x/bwrap",
        tools={"taskset": "/usr/bin/taskset", "prlimit": "/usr/bin/prlimit"},
    )
    for key, value in changes.items():
        setattr(facts, key, value)
    return facts


def test_the_probe_names_each_mechanism_and_the_one_the_engine_uses() -> None:
    lines, rows = probe.describe(_facts())
    text = "\n".join(lines)
    for part in (
        "gVisor",
        "cgroup v2 at",
        "cgroup-v1: not usable: no cgroup v1 hierarchy",
        "cgroup-v2: usable",
        "engine will use: cgroup-v2",
        "freezer: cgroup v2 cgroup.freeze: froze and thawed",
        "user namespaces: unshare(CLONE_NEWUSER) works",
        "bwrap working: /x/bwrap",
        "seccomp filter: built",
        "refused with EPERM",
    ):
        assert part in text, part
    assert {row.measure: row.status for row in rows} == {
        "containment": "pass",
        "bubblewrap": "pass",
        "seccomp filter": "pass",
    }


def test_without_a_freezer_the_probe_says_the_engine_uses_the_weaker_sigstop() -> None:
    facts = _facts(chosen="signals", freeze_test=None, freeze_ok=None)
    lines, rows = probe.describe(facts)
    text = "\n".join(lines)
    assert "engine will use: signals" in text
    assert "weaker containment, SIGSTOP/SIGCONT" in text
    (row,) = [row for row in rows if row.measure == "containment"]
    assert "SIGSTOP" in row.value and "weaker" in row.value
    assert row.status == "info"  # stated in the report, not a failure by itself


def test_probe_failures_become_failing_rows() -> None:
    facts = _facts(
        chosen=None,
        chosen_error="no way to contain the sandbox here",
        bwrap=None,
        bwrap_error="bubblewrap (bwrap) is required",
        seccomp_enforced_ok=False,
        seccomp_enforced="loaded by bwrap, but unshare returned 0",
        sandbox_mode="user",
        userns_ok=False,
        userns="unshare(CLONE_NEWUSER) refused (EPERM)",
        errors=["tools: OSError: boom"],
    )
    _, rows = probe.describe(facts)
    failing = {row.measure for row in rows if row.status == "FAIL"}
    assert failing == {
        "containment probe",
        "containment",
        "bubblewrap",
        "seccomp filter",
        "user namespaces",
    }
    assert results.exit_code([], "cpu", rows) == results.EXIT_FAILED


def test_the_real_probe_with_the_freezer_forced_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """On this machine, with the engine told to use signals: the probe reports what
    containment.create really made, so the text states the weaker containment."""
    monkeypatch.setenv("GRADERS_CONTAINMENT", "signals")
    facts = probe.gather()
    assert facts.errors == []
    assert facts.chosen == "signals" and facts.forced == "signals"
    assert set(facts.unavailable) == {"cgroup-v1", "cgroup-v2", "signals"}
    lines, _ = probe.describe(facts)
    text = "\n".join(lines)
    assert "GRADERS_CONTAINMENT=signals forces that kind" in text
    assert "SIGSTOP" in text and "user namespaces:" in text and "bwrap working:" in text


# ---------------------------------------------------------------------------- results


def _step(name: str, *rows: Row, status: str = "ok") -> StepOutcome:
    return StepOutcome(name, status, seconds=1.0, budget_s=10.0, rows=list(rows))


def test_the_exit_code_follows_failed_steps_and_missed_targets() -> None:
    ok = _step("a", Row("m", "t", "v", "pass"), Row("n", "t", "v", "info"))
    assert results.exit_code([ok], "cuda") == results.EXIT_OK
    missed = _step("b", Row("cv", "<= 1%", "2.5%", "FAIL"))
    assert results.exit_code([ok, missed], "cuda") == results.EXIT_FAILED
    for status in ("failed", "timed out", "not run"):
        assert results.exit_code([ok, _step("c", status=status)], "cpu") == results.EXIT_FAILED


def test_rows_a_gpu_must_answer_fail_only_on_cuda() -> None:
    for status in (NEEDS_GPU, "skipped", "not measured"):
        steps = [_step("ncu-bytes", Row("ncu", "-", "only a GPU has the counters", status))]
        assert results.exit_code(steps, "cpu") == results.EXIT_OK
        assert results.exit_code(steps, "cuda") == results.EXIT_FAILED


def test_a_row_status_must_be_known() -> None:
    with pytest.raises(ValueError, match="status"):
        Row("m", "t", "v", "ok")


def test_timing_targets_are_judged_on_cuda_and_recorded_on_cpu() -> None:
    cpu, cuda = StepContext("cpu", quick=True), StepContext("cuda", quick=False)
    for ctx in (cpu, cuda):
        ctx.timing("cv", "<= 1%", "2%", ok=False)
        ctx.timing("fraction", ">= 0.85", "0.9", ok=True)
    assert [row.status for row in cpu.rows] == ["info", "info"]
    assert cpu.rows[0].target == "<= 1% (on cuda)"
    assert [row.status for row in cuda.rows] == ["FAIL", "pass"]


def test_markdown_table_and_json_files(tmp_path: Path) -> None:
    steps = [
        _step("calibration", Row("bandwidth | datasheet", "0.80-1.00", "0.9", "pass")),
        _step("hostile", Row("step hostile", "completes", "stopped", "FAIL"), status="timed out"),
    ]
    probe_rows = [Row("containment", "a cgroup freezer", "cgroup-v1", "pass")]
    text = results.markdown(
        ["Measured now."], ["engine will use: cgroup-v1"], probe_rows, steps, "cuda"
    )
    assert "| measure | target | value | pass |" in text
    assert "| bandwidth \\| datasheet | 0.80-1.00 | 0.9 | pass |" in text  # pipes escaped
    assert "| containment | a cgroup freezer | cgroup-v1 | pass |" in text
    assert "| hostile | timed out | 1.0 | 10 |" in text
    assert "Exit status 1: failed: step hostile" in text
    data = results.as_json({"gpu": "H100"}, {"chosen": "cgroup-v1"}, probe_rows, steps, "cuda")
    paths = results.write(tmp_path / "out", text, data, "log text")
    assert [p.name for p in paths] == [results.MARKDOWN, results.JSON_FILE, results.LOG_FILE]
    stored = json.loads(paths[1].read_text())
    assert stored["exit_code"] == 1 and stored["gpu"] == "H100"
    assert stored["steps"][1]["status"] == "timed out"
    assert stored["steps"][0]["rows"][0]["measure"] == "bandwidth | datasheet"
    assert paths[0].read_text() == text


def test_the_timing_child_is_valid_python() -> None:
    spec_folder = REPO / "exercises" / "ch15" / "vector-add"
    code = timer_script(spec_folder, spec_folder / "reference.py", "cuda", 3, 1 << 20)
    compile(code, "<timer>", "exec")
    assert "do_bench" in code and "torch.utils.benchmark" in code


def test_sample_agreement_is_judged_as_the_validator_judges_quick_mode() -> None:
    from graders.authoring.meta import SampleExpectation

    expectations = [
        SampleExpectation("fast", "correct", 6.0, 10.0),
        SampleExpectation("wrong", "wrong", 0.0, 0.0),
        SampleExpectation("hanging", "timeout", 0.0, 0.0),
        SampleExpectation("gone", "error", 0.0, 0.0),
    ]
    gradings = {
        "samples/fast": {"verdict": "correct", "score": 6.0},  # untimed: any score
        "samples/wrong": {"verdict": "wrong", "score": 0.0},
        "samples/hanging": {"verdict": "error", "score": 0.0},
    }
    agreed, disagreed = agreement(expectations, gradings)
    assert agreed == ["fast", "wrong"]
    assert disagreed == ["hanging (error, expected timeout)", "gone (not graded)"]


def test_a_samples_own_table_for_cuda_decides_there(tmp_path: Path) -> None:
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "expected.toml").write_text(
        '[triton_kernel]\nverdict = "wrong"\nscore = [0.0, 0.0]\n'
        '[triton_kernel.cuda]\nverdict = "correct"\nscore = [6.0, 10.0]\n'
        '[fast]\nverdict = "correct"\nscore = [6.0, 10.0]\n'
    )
    assert expected_verdict(tmp_path, "triton_kernel", "cuda") == "correct"
    assert expected_verdict(tmp_path, "triton_kernel", "cpu") == "wrong"
    assert expected_verdict(tmp_path, "fast", "cuda") == "correct"
    assert expected_verdict(tmp_path, "cuda_inline", "cuda") == "correct"


def test_hardware_bytes_are_read_from_a_number_a_mapping_or_an_object() -> None:
    class Counted:
        dram_bytes = 12.0

    assert bytes_of(3) == 3.0
    assert bytes_of({"measured": True, "total_bytes": 7, "read_bytes": 4}) == 7.0
    assert bytes_of(Counted()) == 12.0
    assert bytes_of({"measured": False, "total_bytes": None}) is None
    assert bytes_of(True) is None


# ---------------------------------------------------------------------------- isolation


def raises(ctx: StepContext) -> None:
    ctx.row("before the crash", "-", "kept", "pass")
    raise RuntimeError("this step broke")


def hangs(ctx: StepContext) -> None:
    ctx.raw["progress"] = "1 of 2 things done"
    ctx.row("before the hang", "-", "kept", "pass")
    time.sleep(600)


def _run_in_child(function: str, budget_s: float) -> StepOutcome:
    step = Step(f"tests.graders.test_gpu_check:{function}", function, raises, budget_s, budget_s)
    return runner.run_step(step, "cpu", True, budget_s, log=[])


def test_a_step_that_raises_is_recorded_as_failed_with_its_rows() -> None:
    outcome = _run_in_child("raises", 60)
    assert outcome.status == "failed"
    assert outcome.error == "RuntimeError: this step broke"
    assert [row.measure for row in outcome.rows] == [
        "before the crash",
        "step tests.graders.test_gpu_check:raises",
    ]
    assert outcome.rows[-1].status == "FAIL"
    assert "this step broke" in outcome.log_tail


def test_a_step_that_hangs_is_stopped_at_its_budget_and_the_next_one_runs() -> None:
    steps = [
        Step("tests.graders.test_gpu_check:hangs", "hangs", hangs, 5, 5),
        Step("tests.graders.test_gpu_check:raises", "raises", raises, 60, 60),
    ]
    outcomes = runner.run_all(steps, "cpu", True, log=[], total_s=120, echo=False)
    assert [o.status for o in outcomes] == ["timed out", "failed"]
    assert outcomes[0].rows[0].value == "kept"
    assert outcomes[0].error == "stopped at its budget of 5 s (1 of 2 things done)"


def test_a_step_left_without_time_is_recorded_as_not_run() -> None:
    (outcome,) = runner.run_all(list(STEPS[:1]), "cpu", True, log=[], total_s=1, echo=False)
    assert outcome.status == "not run"
    assert outcome.rows[-1].status == "FAIL"
    assert results.exit_code([outcome], "cpu") == results.EXIT_FAILED


def only_a_gpu(ctx: StepContext) -> None:
    ctx.needs_gpu("the driver's lock", "no CUDA driver on this machine")


def test_a_step_that_only_a_gpu_can_answer_is_neither_failed_nor_not_run() -> None:
    step = Step("tests.graders.test_gpu_check:only_a_gpu", "gpu", only_a_gpu, 60, 60)
    outcome = runner.run_step(step, "cpu", True, 60, log=[])
    assert outcome.status == NEEDS_GPU and not results.step_failed(outcome)
    assert [row.status for row in outcome.rows] == [NEEDS_GPU]
    assert results.exit_code([outcome], "cpu") == results.EXIT_OK
    assert results.exit_code([outcome], "cuda") == results.EXIT_FAILED  # a GPU must answer


# ---------------------------------------------------------------------------- the plan


def test_the_plan_adds_up_for_the_full_run_and_quick() -> None:
    assert plan.problems(STEPS) == []
    for quick in (False, True):
        listed = plan.budgets(STEPS, quick)
        assert listed[0][0].startswith("probe")  # the hardware's questions come first
        assert sum(budget for _, budget in listed) <= plan.TOTAL_S == 420
        assert all(0 < budget <= plan.TOTAL_S for _, budget in listed)
    # The probe's share is there whether or not its step exists yet.
    assert dict(plan.budgets(STEPS, False))[plan.budgets(STEPS, False)[0][0]] == 150
    assert dict(plan.budgets(STEPS, True))[plan.budgets(STEPS, True)[0][0]] == 30


def test_a_plan_over_the_total_is_reported() -> None:
    big = Step("big", "too long", raises, 300, 430)
    full, quick = plan.problems([*STEPS, big])
    assert full.startswith("full: the budgets add up to") and full.endswith("over 420 s")
    assert quick.startswith("--quick: the budgets add up to") and quick.endswith("over 420 s")
    assert plan.problems([Step("none", "no budget", raises, 0, 10)]) == ["full: none has no budget"]


def test_the_plan_command_prints_each_budget_and_the_total() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graders", "gpu-check", "--plan"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for step in STEPS:
        assert any(line.startswith(f"| {step.name} |") for line in lines), step.name
    (total,) = [line for line in lines if line.startswith("| total")]
    full, quick = (float(cell) for cell in total.strip("| ").split(" | ")[1:])
    assert full <= 420 and quick <= 420
    assert "plan problem" not in done.stdout


# ---------------------------------------------------------------------------- the exercises


def test_on_the_cpu_a_step_grades_the_cuda_spec_at_cpu_sizes() -> None:
    from graders.spec.exercise import find_exercise

    original = find_exercise("vector-add")
    spec = exercises.exercise("vector-add", "cpu", quick=True)
    assert spec.scoring.curves["cpu"] == original.scoring.curves["cuda"]
    assert spec.sizes["cpu"].timed == {"n": original.sizes["cpu"].timed["n"] // 4}  # not 3 GiB
    assert spec.content_hash != original.content_hash  # not the published exercise
    assert exercises.needs_compare(spec, "cpu")
    on_gpu = exercises.exercise("vector-add", "cuda", quick=True)  # a GPU: as published
    for field in ("scoring", "sizes", "timing", "limits", "content_hash"):
        assert getattr(on_gpu, field) == getattr(original, field), field


def test_a_relative_curve_is_never_graded_without_its_companions() -> None:
    spec = exercises.exercise("vector-add", "cpu", quick=True)
    with pytest.raises(ValueError, match="must be graded with compare on"):
        exercises.grade(spec, "", "cpu", compare=False)


def test_on_a_gpu_one_grading_runs_at_a_time() -> None:
    assert lanes("cuda") == 1 and lanes("cuda:0") == 1
    assert lanes("cpu") >= 1


def test_the_hostile_corpus_scales_each_exercise_for_the_gpu(tmp_path: Path) -> None:
    """The quick copies: sizes a GPU grades a case in seconds, and a vector-add curve the
    engine can score without companions (as its cases are graded) on either device."""
    from graders.spec.exercise import ExerciseSpec, find_exercise
    from tests.hostile import corpus

    copies = corpus.Exercises(tmp_path)
    for slug in ("vector-add", "layernorm", "softmax", "gelu-residual", "softmax-pool"):
        spec = copies.get(slug)
        assert isinstance(spec, ExerciseSpec)
        original = find_exercise("softmax" if slug == "softmax-pool" else slug)
        for device in ("cpu", "cuda"):
            copy_bytes = spec.cost_bytes(spec.sizes[device].timed)
            assert copy_bytes < original.cost_bytes(original.sizes[device].timed)
        assert spec.cost_bytes(spec.sizes["cuda"].timed) >= 128 * 2**20  # past a GPU's L2
        if slug == "vector-add":
            for device in ("cpu", "cuda"):
                assert not exercises.needs_compare(spec, device), device


def test_the_probes_witness_reaches_the_later_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each step is a child process: the probe's choice travels in the environment they inherit.
    monkeypatch.delenv("GRADERS_CUDA_LOCK", raising=False)
    runner.follow_probe(StepOutcome("probe", "ok", raw={"gpu_completion": "driver_lock"}))
    assert "GRADERS_CUDA_LOCK" not in os.environ
    runner.follow_probe(StepOutcome("calibration", "ok", raw={"gpu_completion": "harness_sync"}))
    assert "GRADERS_CUDA_LOCK" not in os.environ
    runner.follow_probe(StepOutcome("probe", "ok", raw={"gpu_completion": "harness_sync"}))
    assert os.environ["GRADERS_CUDA_LOCK"] == "0"


def test_the_windows_fixed_cost_is_judged_by_its_spread_not_its_size() -> None:
    # A GPU window of 5 calls of 1.08 ms with 300 us of fixed cost: 5 % of the window, which
    # the old "<= 2 %" row failed by design; the median is subtracted, so the spread is judged.
    figures = {"calls_per_window": 5, "median_s": 1.08e-3, "empty_window_s": 300e-6}
    steady = StepContext("cuda", quick=False)
    timing_steps.window_rows(steady, {**figures, "empty_window_spread_s": 10e-6})
    size, spread = steady.rows
    assert size.status == "info" and "5.3% of a window" in size.value
    assert spread.measure == timing_steps.WINDOW_SPREAD and spread.status == "pass"
    unsteady = StepContext("cuda", quick=False)
    timing_steps.window_rows(unsteady, {**figures, "empty_window_spread_s": 100e-6})
    assert unsteady.rows[1].status == "FAIL" and "1.75% of a window" in unsteady.rows[1].value
    on_cpu = StepContext("cpu", quick=True)
    timing_steps.window_rows(on_cpu, {**figures, "empty_window_spread_s": 100e-6})
    assert on_cpu.rows[1].status == "info"  # timings are recorded, not judged, on a CPU
