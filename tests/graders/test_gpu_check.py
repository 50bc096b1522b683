"""``python -m graders gpu-check`` without a GPU: the containment probe's text, the table and
JSON, the pass/fail rule, step isolation (a crash, a hang), and one real ``--device cpu
--quick`` run of the cheap steps. No outcome here depends on a time that was measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graders.gpu_check import probe, results, runner
from graders.gpu_check import steps as gpu_steps
from graders.gpu_check.results import Row, StepOutcome
from graders.gpu_check.steps import STEPS, Step, StepContext, timer_script

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


def test_skipped_and_unmeasured_rows_fail_only_on_cuda() -> None:
    for status in ("skipped", "not measured"):
        steps = [_step("ncu-bytes", Row("ncu", "-", "skipped: needs CUDA", status))]
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
    agreed, disagreed = gpu_steps._agreement(expectations, gradings)
    assert agreed == ["fast", "wrong"]
    assert disagreed == ["hanging (error, expected timeout)", "gone (not graded)"]


def test_a_samples_own_table_for_cuda_decides_there(tmp_path: Path) -> None:
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "expected.toml").write_text(
        '[triton_kernel]\nverdict = "wrong"\nscore = [0.0, 0.0]\n'
        '[triton_kernel.cuda]\nverdict = "correct"\nscore = [6.0, 10.0]\n'
        '[fast]\nverdict = "correct"\nscore = [6.0, 10.0]\n'
    )
    assert gpu_steps._expected_verdict(tmp_path, "triton_kernel", "cuda") == "correct"
    assert gpu_steps._expected_verdict(tmp_path, "triton_kernel", "cpu") == "wrong"
    assert gpu_steps._expected_verdict(tmp_path, "fast", "cuda") == "correct"
    assert gpu_steps._expected_verdict(tmp_path, "cuda_inline", "cuda") == "correct"


def test_hardware_bytes_are_read_from_a_number_a_mapping_or_an_object() -> None:
    class Counted:
        dram_bytes = 12.0

    assert gpu_steps._bytes_of(3) == 3.0
    assert gpu_steps._bytes_of({"measured": True, "total_bytes": 7, "read_bytes": 4}) == 7.0
    assert gpu_steps._bytes_of(Counted()) == 12.0
    assert gpu_steps._bytes_of({"measured": False, "total_bytes": None}) is None
    assert gpu_steps._bytes_of(True) is None


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


# ---------------------------------------------------------------------------- a real run


def test_a_cpu_quick_run_of_cheap_steps(tmp_path: Path) -> None:
    """The command line end to end: the probe, one step in its child (calibration), the
    CUDA-only steps skipped, the files written. The calibration's figures are not judged on
    CPU, so the exit status depends on none of them."""
    env = {k: v for k, v in os.environ.items() if k not in ("GRADERS_CACHE_DIR", "OUT")}
    done = subprocess.run(
        [sys.executable, "-m", "graders", "gpu-check", "--device", "cpu", "--quick",
         "--only", "calibration", "--only", "ncu-bytes", "--only", "compiled-samples",
         "--out", str(tmp_path), "--budget-factor", "8"],  # never stopped by a busy machine
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "== containment" in done.stdout and "engine will use:" in done.stdout
    table = (tmp_path / results.MARKDOWN).read_text()
    assert "| calibrated bandwidth / datasheet |" in table
    assert table.count("skipped: needs CUDA") == 2
    data = json.loads((tmp_path / results.JSON_FILE).read_text())
    assert [s["name"] for s in data["steps"]] == ["calibration", "compiled-samples", "ncu-bytes"]
    assert [s["status"] for s in data["steps"]] == ["ok", "skipped", "skipped"]
    assert data["steps"][0]["raw"]["peaks"]["gbps"] > 0
    assert data["exit_code"] == 0
    # Its own cache, removed after: a worker's calibration history is never touched.
    assert "gpu-check-cache-" in data["cache_dir"] and not Path(data["cache_dir"]).exists()
