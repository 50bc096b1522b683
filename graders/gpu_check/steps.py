"""The steps of ``gpu-check``; each runs in a child process of its own (see runner.py).

A step writes rows (measure, target, value, status) and raw figures through its
:class:`StepContext`, which saves them to the result file after every change, so a step
stopped at its time budget still leaves what it had measured (and ``raw["progress"]``, which
the parent quotes in the timeout's row). Every step reuses the engine
or the repository's own tools: ``graders.grade``, ``graders.measure.calibrate.peaks``, the
validator (``graders.authoring.validate.validate_exercise``), the hostile corpus
(``tests/hostile/corpus.py``), ``graders.harness.inputs`` and ``CacheFlusher`` for the
fidelity child, ``graders.grading.warm`` for the warm runners.

Targets are a GPU machine's: on a CPU run the timing targets are recorded as ``info``, and
the steps that need CUDA (fidelity against ``triton.testing.do_bench``, the Triton and CUDA
C++ samples, ncu's bytes) write one ``skipped: needs CUDA`` row.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders.gpu_check.results import Row, judged
from graders.locations import REPO_ROOT

if TYPE_CHECKING:
    from graders.report.types import Report
    from graders.spec.exercise import ExerciseSpec

GIB = 1024**3
# Targets (issue 25 item 7).
DATASHEET_BAND = (0.80, 1.00)  # calibrated triad over the datasheet; a d2d copy reads ~0.9
FIDELITY_TOLERANCE = 0.05  # engine median / do_bench median within 5%
CV_TARGET = 0.01  # achieved GB/s over 5 gradings of vector-add's samples/fast.py
FRACTION_TARGET = 0.85  # vector-add reference: achieved GB/s / calibrated peak
MEMORY_TARGET = 2 * GIB  # the sandbox's host memory during vector-add's grading
WARM_TARGET_S = 5.0  # a warm grading of vector-add, submit to report
COMPILED_SAMPLES = (
    ("vector-add", "triton_kernel"),
    ("vector-add", "cuda_inline"),
    ("gelu-residual", "triton_fused"),
)
NEEDS_CUDA = "skipped: needs CUDA"


class StepContext:
    """What a step writes; saved to ``path`` (JSON) after every row and on request."""

    def __init__(self, device: str, quick: bool, path: Path | None = None) -> None:
        self.device, self.quick, self.path = device, quick, path
        self.cuda = device.startswith("cuda")
        self.rows: list[Row] = []
        self.raw: dict[str, Any] = {}
        # Held while saving; a step whose threads change ``raw`` holds it around the change.
        self.lock = threading.RLock()

    def row(self, measure: str, target: str, value: str, status: str) -> None:
        self.rows.append(Row(measure, target, value, status))
        self.save()

    def timing(self, measure: str, target: str, value: str, ok: bool) -> None:
        """A row whose target is a GPU machine's timing target: ``info`` on a CPU run."""
        self.row(
            measure, target if self.cuda else f"{target} (on cuda)", value, judged(ok, self.cuda)
        )

    def skipped(self, measure: str, why: str = NEEDS_CUDA) -> None:
        self.row(measure, "-", why, "skipped")

    def save(self) -> None:
        if self.path is None:
            return
        with self.lock:
            tmp = self.path.with_suffix(".tmp")
            data = {"rows": [asdict(r) for r in self.rows], "raw": self.raw}
            tmp.write_text(json.dumps(data, indent=2, default=str))
            tmp.replace(self.path)


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    run: Callable[[StepContext], None]
    budget_s: float  # full run
    quick_budget_s: float
    needs_cuda: bool = False

    def budget(self, quick: bool) -> float:
        return self.quick_budget_s if quick else self.budget_s


# ---------------------------------------------------------------------------- helpers


def _spec(slug: str) -> ExerciseSpec:
    from graders.spec.exercise import find_exercise

    return find_exercise(slug)


def _needs_compare(spec: ExerciseSpec, device: str) -> bool:
    """Relative measures are scored against the companions, which compare=False skips."""
    curve = spec.scoring.curves.get("cuda" if device.startswith("cuda") else "cpu")
    return bool(curve and curve.measure in ("relative_to_reference", "speedup_vs_naive"))


def _grade(spec: ExerciseSpec, source: str, device: str, **options: Any) -> Report:
    from graders import grade

    options.setdefault("compare", _needs_compare(spec, device))
    options.setdefault("profile", False)
    return grade(spec, source, device=device, **options)


def _perf(report: Report) -> dict[str, Any]:
    return dict(report.get("performance") or {})


def _cv(values: list[float]) -> float | None:
    return statistics.pstdev(values) / statistics.fmean(values) if len(values) > 1 else None


def _gib(value: float) -> str:
    return f"{value / GIB:.2f} GiB"


def _summary(report: Report) -> dict[str, Any]:
    perf = _perf(report)
    return {
        "verdict": report["verdict"],
        "score": report["score"],
        "message": report.get("message"),
        "flags": list(report.get("flags") or []),
        "median_s": perf.get("median_s"),
        "achieved_gbps": perf.get("achieved_gbps"),
        "fraction_of_peak": perf.get("fraction_of_peak"),
        "peak_gbps": perf.get("peak_gbps"),
        "cv": perf.get("cv"),
        "runs": perf.get("runs"),
        "points": perf.get("points"),
        "calls_per_window": perf.get("calls_per_window"),
        "empty_window_s": perf.get("empty_window_s"),
        "timings": dict(report.get("timings") or {}),
        "sandbox": (report.get("device") or {}).get("sandbox"),
    }


# ---------------------------------------------------------------------------- calibration


def calibration(ctx: StepContext) -> None:
    from graders.measure.calibrate import peaks

    result = peaks(ctx.device, refresh=True)
    ctx.raw["peaks"] = result
    gbps, flops, sheet = result["gbps"], result["flops_per_s"], result.get("datasheet_gbps")
    value = f"{gbps:.1f} GB/s ({result['device_name']}; {result.get('method')})"
    if sheet:
        ratio = gbps / sheet
        ctx.raw["ratio_to_datasheet"] = ratio
        low, high = DATASHEET_BAND
        ctx.timing(
            "calibrated bandwidth / datasheet",
            f"{low:.2f}-{high:.2f} x {sheet:g} GB/s (a device-to-device copy reads ~0.9)",
            f"{value} = {ratio:.3f} x datasheet",
            low <= ratio <= high,
        )
    else:
        ctx.row("calibrated bandwidth / datasheet", "no datasheet for this device", value, "info")
    window = result.get("window_s")
    if window:  # GPUs: the empty window every timed window is measured less
        ctx.row("window fixed cost (empty window)", "recorded", f"{window * 1e6:.0f} us", "info")
    for kind in ("tf32", "bf16"):
        peak = result.get(f"flops_per_s_{kind}")
        if peak:
            ctx.row(f"calibrated {kind} matmul", "recorded", f"{peak / 1e12:.1f} TFLOP/s", "info")
    sheet_flops = result.get("datasheet_flops_per_s")
    ctx.row(
        "calibrated fp32 matmul",
        f"recorded (datasheet {sheet_flops / 1e12:g} TFLOP/s)" if sheet_flops else "recorded",
        f"{flops / 1e12:.2f} TFLOP/s"
        + (f" = {flops / sheet_flops:.3f} x datasheet" if sheet_flops else ""),
        "info",
    )


# ---------------------------------------------------------------------------- samples


def _agreement(
    expectations: list[Any], gradings: dict[str, dict[str, Any]], device: str = "cpu"
) -> tuple[list[str], list[str]]:
    """(agreed, disagreed) sample names, judged as the validator's quick mode judges them:
    the verdict, and the score range unless the verdict is 'correct' (untimed in quick mode),
    against the sample's table for this device kind where expected.toml has one."""
    agreed: list[str] = []
    disagreed: list[str] = []
    kind = "cuda" if device.startswith("cuda") else "cpu"
    for expected in expectations:
        for_device = getattr(expected, "for_device", None)
        want = for_device(kind) if callable(for_device) else expected
        got = gradings.get(f"samples/{want.name}")
        if got is None:
            disagreed.append(f"{want.name} (not graded)")
            continue
        ok = got["verdict"] == want.verdict and (
            want.verdict == "correct" or want.low <= got["score"] <= want.high
        )
        (agreed if ok else disagreed).append(
            want.name if ok else f"{want.name} ({got['verdict']}, expected {want.verdict})"
        )
    return agreed, disagreed


def samples(ctx: StepContext) -> None:
    from graders.authoring.meta import load_expectations
    from graders.authoring.validate import exercise_folders, validate_exercise
    from graders.errors import SpecError
    from graders.sandbox.slots import slot_count
    from graders.spec.exercise import default_root, load_exercise

    folders = exercise_folders(default_root())
    if ctx.quick:  # the quick run checks one exercise's samples end to end
        folders = [f for f in folders if f.name == "vector-add"]
    jobs = max(1, min(4, slot_count()))
    ctx.raw["jobs"] = jobs
    ctx.raw["exercises"] = {}
    for folder in folders:
        name = folder.name
        try:
            spec = load_exercise(folder)
        except SpecError as exc:
            ctx.row(f"samples: {name}", "as expected.toml says", f"spec error: {exc}", "FAIL")
            continue
        if ctx.device not in spec.devices:
            ctx.row(f"samples: {name}", "-", f"{ctx.device} not in devices", "info")
            continue
        try:
            result = validate_exercise(folder, device=ctx.device, jobs=jobs, use_cache=False)
        except Exception as exc:  # the grader broke: record it, go on with the next exercise
            ctx.raw["exercises"][name] = {"error": repr(exc)}
            ctx.row(
                f"samples: {name}", "as expected.toml says", f"grader failed: {exc}"[:400], "FAIL"
            )
            continue
        try:
            expectations = load_expectations(folder, spec.max_score)
        except SpecError:
            expectations = []  # the validator reports the same problem
        agreed, disagreed = _agreement(expectations, result.gradings, ctx.device)
        ctx.raw["exercises"][name] = {
            "problems": result.problems,
            "agreed": agreed,
            "disagreed": disagreed,
            "gradings": result.gradings,
            "seconds": result.seconds,
        }
        ctx.raw["progress"] = f"{len(ctx.raw['exercises'])} of {len(folders)} exercises validated"
        if not result.gradings and result.problems:  # stopped before grading anything
            value = "not graded: " + "; ".join(result.problems)[:400]
        else:
            others = [p for p in result.problems if "expected.toml" not in p]
            value = f"{len(agreed)}/{len(expectations)} samples agreed"
            if disagreed:
                value += "; disagreed: " + ", ".join(disagreed)
            if others:
                value += "; " + "; ".join(others)[:400]
        ctx.row(
            f"samples: {name} (reference, naive, samples on {ctx.device})",
            "every verdict as samples/expected.toml",
            value,
            judged(result.passed),
        )


# ---------------------------------------------------------------------------- fidelity

_TIMER = """
import json, statistics, sys, importlib.util
sys.path.insert(0, {repo!r})
import torch
from graders import load_exercise
from graders.harness import inputs as harness_inputs
from graders.spec.layouts import input_layout
device = {device!r}
spec = load_exercise({folder!r})
loaded = importlib.util.spec_from_file_location("reference", {path!r})
module = importlib.util.module_from_spec(loaded)
loaded.loader.exec_module(module)
fn = getattr(module, spec.entry)
sizes = spec.sizes["cuda" if device.startswith("cuda") else "cpu"].timed
inputs = harness_inputs.make(input_layout(spec, sizes), 12345, device)
if device == "cpu":
    torch.set_num_threads(1)
tool, medians = None, []
with torch.no_grad():
    if device.startswith("cuda") and not {no_triton}:
        try:
            from triton.testing import do_bench
        except ImportError:
            do_bench = None
        if do_bench is not None:
            for _ in range({repeats}):
                medians.append(do_bench(lambda: fn(*inputs), return_mode="median") / 1e3)
            tool = "triton.testing.do_bench (median; L2 cleared before each call)"
    if tool is None:
        import torch.utils.benchmark as tb
        from graders.measure.flush_size import CacheFlusher
        flusher = CacheFlusher({flush_bytes}, device)
        timer = tb.Timer(stmt="fn(*inputs)", setup="flusher.flush()", num_threads=1,
                         globals={{"fn": fn, "inputs": inputs, "flusher": flusher}})
        for _ in range(3):
            fn(*inputs)
        for _ in range({repeats}):
            medians.append(statistics.median(timer.timeit(number=1).times[0] for _ in range(25)))
        tool = "torch.utils.benchmark.Timer (cache flushed before each call, number=1)"
print(json.dumps({{"tool": tool, "medians_s": medians}}))
"""


def timer_script(
    folder: Path, path: Path, device: str, repeats: int, flush_bytes: int, no_triton: bool = False
) -> str:
    """The child that times the reference with do_bench (or torch.utils.benchmark.Timer)."""
    return _TIMER.format(
        repo=str(REPO_ROOT),
        folder=str(folder),
        path=str(path),
        device=device,
        repeats=repeats,
        flush_bytes=flush_bytes,
        no_triton=no_triton,
    )


def _time_reference(spec: ExerciseSpec, device: str, repeats: int) -> dict[str, Any]:
    """One pass of the outside tool, in a fresh child with the sandbox's environment, as
    bench/fidelity.py's torch_benchmark does."""
    from graders.measure import calibrate
    from graders.sandbox.launch import pick_core, sandbox_env

    code = timer_script(
        spec.path,
        spec.reference_path,
        device,
        repeats,
        calibrate.flush_bytes(device),
        # =1 times with torch.utils.benchmark.Timer even where Triton is installed.
        no_triton=os.environ.get("GRADERS_GPU_CHECK_NO_TRITON") == "1",
    )
    command = [sys.executable, "-c", code]
    core = pick_core(0)
    if device == "cpu" and core is not None:
        command = ["taskset", "-c", str(core), *command]
    env = sandbox_env("/tmp", device)
    env["HOME"] = os.environ.get("HOME", "/tmp")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    if done.returncode != 0:
        raise RuntimeError(f"the timing child failed: {done.stderr[-1500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def fidelity(ctx: StepContext) -> None:
    spec = _spec("vector-add")
    source = spec.reference_path.read_text()
    pairs = 1 if ctx.quick else 2
    engine, outside, tools = [], [], set()
    ctx.raw["pairs"] = []
    for _ in range(pairs):  # interleaved: the device's mood drifts between far-apart runs
        report = _grade(spec, source, ctx.device, compare=False)
        if report["verdict"] != "correct":
            raise RuntimeError(
                f"vector-add reference graded {report['verdict']}: {report['message']}"
            )
        engine.append(float(_perf(report)["median_s"]))
        timed = _time_reference(spec, ctx.device, repeats=3)
        outside.append(statistics.median(timed["medians_s"]))
        tools.add(timed["tool"])
        ctx.raw["pairs"].append({"engine": _summary(report), "outside": timed})
        ctx.save()
    ratio = statistics.median(engine) / statistics.median(outside)
    ctx.raw.update(
        engine_median_s=statistics.median(engine), tool_median_s=statistics.median(outside)
    )
    ctx.raw.update(ratio=ratio, tools=sorted(tools))
    ctx.timing(
        "fidelity: engine median / "
        + ("do_bench" if any("do_bench" in t for t in tools) else "Timer"),
        f"1 +- {FIDELITY_TOLERANCE:g}",
        f"{ratio:.3f} ({statistics.median(engine) * 1e3:.3f} ms / "
        f"{statistics.median(outside) * 1e3:.3f} ms, {pairs} pair(s); {', '.join(sorted(tools))})",
        abs(ratio - 1) <= FIDELITY_TOLERANCE,
    )


# ---------------------------------------------------------------------------- repeatability


def repeatability(ctx: StepContext) -> None:
    spec = _spec("vector-add")
    source = (spec.path / "samples" / "fast.py").read_text()
    count = 3 if ctx.quick else 5
    gbps, gradings = [], []
    for _ in range(count):
        report = _grade(spec, source, ctx.device, compare=False)
        gradings.append(_summary(report))
        ctx.raw["gradings"] = gradings
        if report["verdict"] != "correct":
            raise RuntimeError(f"samples/fast.py graded {report['verdict']}: {report['message']}")
        gbps.append(float(_perf(report)["achieved_gbps"]))
        ctx.raw["progress"] = f"{len(gbps)} of {count} gradings"
        ctx.save()
    cv = _cv(gbps)
    ctx.raw.update(achieved_gbps=gbps, cv=cv)
    ctx.timing(
        f"CV of achieved GB/s, {count} gradings of vector-add samples/fast.py",
        f"<= {CV_TARGET:.0%}",
        f"{(cv or 0):.2%} (mean {statistics.fmean(gbps):.1f} GB/s, "
        f"{min(gbps):.1f}-{max(gbps):.1f})",
        cv is not None and cv <= CV_TARGET,
    )


# ---------------------------------------------------------------------------- the reference


@contextlib.contextmanager
def watch_sandboxes() -> Iterator[list[dict[str, Any]]]:
    """The memory peak of every sandbox closed meanwhile, read from its containment just
    before the engine releases it (cgroup v2 ``memory.peak``, v1 ``memory.max_usage_in_bytes``,
    or the signals watchdog's sampled PSS). It covers the sandbox's whole life, of which the
    timed phase is a part, so it bounds that phase's peak from above."""
    from graders.sandbox import launch

    seen: list[dict[str, Any]] = []
    original = launch.SandboxedProcess.close

    def close(self: launch.SandboxedProcess) -> int | None:
        box = self.containment
        entry: dict[str, Any] = {"kind": box.kind}
        if box.kind == "cgroup-v2":
            has_peak = (getattr(box, "path", Path("/nonexistent")) / "memory.peak").exists()
            entry["source"] = "memory.peak" if has_peak else "memory.current (no memory.peak)"
        else:
            entry["source"] = {
                "cgroup-v1": "memory.max_usage_in_bytes",
                "signals": "PSS sampled every 50 ms by the watchdog",
            }.get(box.kind, box.kind)
        try:
            entry["peak_bytes"] = box.memory_peak()
        except (OSError, ValueError) as exc:
            entry["error"] = str(exc)
        seen.append(entry)
        return original(self)

    setattr(launch.SandboxedProcess, "close", close)  # noqa: B010 (mypy: no method assignment)
    try:
        yield seen
    finally:
        setattr(launch.SandboxedProcess, "close", original)  # noqa: B010


def reference(ctx: StepContext) -> None:
    """One grading of vector-add's reference: its fraction of the calibrated bandwidth, and
    the sandbox's host memory peak."""
    spec = _spec("vector-add")
    with watch_sandboxes() as seen:
        report = _grade(spec, spec.reference_path.read_text(), ctx.device, compare=False)
    ctx.raw.update(grading=_summary(report), sandboxes=seen)
    if report["verdict"] != "correct":
        raise RuntimeError(f"vector-add reference graded {report['verdict']}: {report['message']}")
    perf = _perf(report)
    fraction = perf.get("fraction_of_peak")
    ctx.timing(
        "vector-add reference: achieved / calibrated bandwidth",
        f">= {FRACTION_TARGET:g}",
        f"{fraction:.3f} ({perf.get('achieved_gbps'):.1f} of {perf.get('peak_gbps'):.1f} GB/s)"
        if fraction is not None
        else "no figure",
        fraction is not None and fraction >= FRACTION_TARGET,
    )
    calls, empty = perf.get("calls_per_window") or 1, perf.get("empty_window_s")
    median = perf.get("median_s")
    if empty and median:
        share = empty / (empty + calls * median)
        ctx.row(
            "vector-add: the window's fixed cost",
            "<= 2% of a window (else calls per window or sizes go up)",
            f"{empty * 1e6:.0f} us against {calls} call(s) of {median * 1e3:.3f} ms: {share:.1%}",
            judged(share <= 0.02) if ctx.device != "cpu" else "info",
        )
    peaks = [s for s in seen if "peak_bytes" in s]
    if not peaks:
        why = "; ".join(s.get("error", s["kind"]) for s in seen) or "no sandbox was seen closing"
        ctx.row(
            "vector-add: sandbox host memory peak",
            f"<= {_gib(MEMORY_TARGET)}",
            f"not measured ({why})",
            "not measured",
        )
        return
    top = max(peaks, key=lambda s: s["peak_bytes"])
    not_a_peak = "no memory.peak" in top["source"]
    ctx.row(
        "vector-add: sandbox host memory peak (whole life, timed phase included)",
        f"<= {_gib(MEMORY_TARGET)}",
        f"{_gib(top['peak_bytes'])} ({top['kind']}: {top['source']}; {len(seen)} sandbox(es))",
        "not measured" if not_a_peak else judged(top["peak_bytes"] <= MEMORY_TARGET),
    )


# ---------------------------------------------------------------------------- hostile corpus


def hostile(ctx: StepContext) -> None:
    """Every case of tests/hostile graded on the device, each followed by an honest grading,
    judged by the corpus's own rules (tests/hostile/corpus.py, as scripts/reliability.py)."""
    os.environ["GRADERS_HOSTILE_DEVICE"] = ctx.device  # read when the corpus is imported
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    from importlib.util import find_spec

    from graders.sandbox.slots import slot_count
    from tests.hostile import corpus

    files = corpus.case_files()
    notebooks_graded = find_spec("nbformat") is not None and find_spec("nbgrader") is not None
    skipped_notebooks = [] if notebooks_graded else [p for p in files if p.suffix == ".ipynb"]
    cases = [corpus.load_case(p) for p in files if p not in skipped_notebooks]
    if ctx.quick:  # one case of each class
        firsts: dict[str, Any] = {}
        for case in cases:
            firsts.setdefault(case.klass, case)
        cases = list(firsts.values())
    lanes = max(1, min(4, slot_count()))
    results: list[dict[str, Any]] = []
    ctx.raw.update(lanes=lanes, cases=len(cases), results=results)
    ctx.raw["notebook_cases_not_run"] = [p.name for p in skipped_notebooks]
    with tempfile.TemporaryDirectory() as folder:
        exercises = corpus.Exercises(Path(folder))
        for slug in sorted({case.exercise for case in cases} | {"vector-add"}):
            exercises.get(slug)  # built before the lanes share them

        def record(entry: dict[str, Any]) -> None:
            with ctx.lock:  # lanes finish concurrently: one writer of results at a time
                results.append(entry)
                held = sum(not r["problems"] for r in results)
                ctx.raw["progress"] = f"{len(results)} of {len(cases)} cases graded, {held} held"
                ctx.save()

        def one(case: Any) -> None:
            try:
                outcome = corpus.grade_case(case, exercises)
                honest = corpus.grade_honest(exercises)
            except Exception as exc:  # a bug of ours, not the case's doing: recorded, go on
                record({"case": case.name, "problems": [f"raised {exc!r}"]})
                return
            record(
                {
                    "case": case.name,
                    "expected": case.expected(),
                    "got": f"{outcome.verdict}/{outcome.points:g}",
                    "flags": outcome.flags,
                    "seconds": round(outcome.seconds, 2),
                    "problems": outcome.problems + honest,
                    "unearned": corpus.unearned_credit(case, outcome),
                    "grader_failure": outcome.report is None,
                }
            )

        # Lanes grade on slots of their own (own core and uid), as separate workers would.
        with ThreadPoolExecutor(lanes) as pool:
            list(pool.map(one, cases))
    failed = [r for r in results if r["problems"]]
    value = f"{len(results) - len(failed)} of {len(cases)} cases held ({lanes} lanes)"
    if failed:
        value += "; failed: " + "; ".join(f"{r['case']}: {r['problems'][0]}" for r in failed)[:600]
    if skipped_notebooks:
        value += (
            f"; {len(skipped_notebooks)} notebook cases not run (no nbgrader here; notebooks "
            "are graded on CPU workers)"
        )
    ctx.row(
        f"hostile corpus on {ctx.device}" + (" (one case per class)" if ctx.quick else ""),
        "every case held, honest grading after each clean",
        value,
        judged(not failed and len(results) == len(cases)),
    )


# ---------------------------------------------------------------------------- compiled samples


def _expected_verdict(folder: Path, name: str, device: str) -> str:
    """The sample's verdict in expected.toml: its [name.cuda] table's on a GPU where it has
    one, else its own; "correct" where the file has no entry for it."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
        entry = tomllib.loads((folder / "samples" / "expected.toml").read_text()).get(name)
        for table in (entry.get(kind) if isinstance(entry, dict) else None, entry):
            if isinstance(table, dict) and isinstance(table.get("verdict"), str):
                return str(table["verdict"])
    return "correct"


def compiled_samples(ctx: StepContext) -> None:
    if not ctx.cuda:
        ctx.skipped("Triton and CUDA C++ samples")
        return
    for slug, name in COMPILED_SAMPLES:
        measure = f"{slug} samples/{name}.py on {ctx.device}"
        spec = _spec(slug)
        path = spec.path / "samples" / f"{name}.py"
        want = _expected_verdict(spec.path, name, ctx.device)
        if not path.is_file():
            ctx.row(measure, want, "missing: the sample file is not there", "FAIL")
            continue
        began = time.monotonic()
        try:
            report = _grade(spec, path.read_text(), ctx.device)
        except Exception as exc:  # one sample's grader failure must not hide the others
            ctx.raw[name] = {"error": repr(exc)}
            ctx.row(measure, want, f"grader failed: {exc}"[:400], "FAIL")
            continue
        ctx.raw[name] = _summary(report)
        seconds = time.monotonic() - began
        message = (
            f": {report['message']}" if report["verdict"] != want and report["message"] else ""
        )
        ctx.row(
            measure,
            want,
            f"{report['verdict']} {report['score']:g}/{report['max_score']:g} in {seconds:.1f} s"
            f"{message}"[:400],
            judged(report["verdict"] == want),
        )


# ---------------------------------------------------------------------------- ncu bytes


def _bytes_of(result: Any) -> float | None:
    """The DRAM bytes in what hardware_bytes returned: a number, a mapping or an object with
    ``total_bytes`` (the report's HardwareBytes), ``dram_bytes`` or ``bytes``."""
    if isinstance(result, int | float) and not isinstance(result, bool):
        return float(result)
    for key in ("total_bytes", "dram_bytes", "bytes"):
        value = result.get(key) if isinstance(result, dict) else getattr(result, key, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _hardware_bytes(ctx: StepContext, spec: ExerciseSpec) -> tuple[Any, str]:
    """What the engine's ncu path counted for vector-add's reference, and how it was asked:
    ``graders.measure.hardware_bytes.measure(spec, source, device)`` where that exists, else
    the ``hardware_bytes`` of a profiled grading's report. (None, why) when neither has it."""
    try:
        from graders.measure import hardware_bytes
    except ImportError as exc:
        return None, f"graders.measure.hardware_bytes cannot be imported ({exc})"
    reason = getattr(hardware_bytes, "ncu_unavailable_reason", None)
    if callable(reason):
        ctx.raw["ncu_unavailable_reason"] = reason()
    source = spec.reference_path.read_text()
    measure = getattr(hardware_bytes, "measure", None)
    if callable(measure):
        return measure(spec, source, ctx.device), "hardware_bytes.measure()"
    report = _grade(spec, source, ctx.device, compare=False, profile=True)
    ctx.raw["grading"] = _summary(report)
    found = report.get("hardware_bytes")
    if found is None:
        why = "neither hardware_bytes.measure() nor a report's hardware_bytes exists yet"
        if ctx.raw.get("ncu_unavailable_reason"):
            why += f"; ncu here: {ctx.raw['ncu_unavailable_reason']}"
        return None, why
    return found, "the report's hardware_bytes (profiled grading)"


def ncu_bytes(ctx: StepContext) -> None:
    measure = "ncu: DRAM bytes of vector-add's reference / [cost] bytes"
    if not ctx.cuda:
        ctx.skipped(measure)
        return
    spec = _spec("vector-add")
    result, how = _hardware_bytes(ctx, spec)
    ctx.raw.update(result=result, how=how)
    if result is None:
        ctx.row(measure, "within 10%", f"not available: {how}", "not measured")
        return
    if isinstance(result, dict) and result.get("measured") is False:
        # Where ncu cannot count on this machine at all (gVisor, counters for admins only) the
        # engine's report saying so is right; where ncu works, not counting is a failure.
        ncu_cannot = ctx.raw.get("ncu_unavailable_reason")
        status = "info" if ncu_cannot else "FAIL"
        ctx.row(measure, "within 10%", f"not measured: {result.get('message')}", status)
        return
    measured = _bytes_of(result)
    if measured is None:
        ctx.row(measure, "within 10%", f"{how} returned {result!r}"[:300], "info")
        return
    ideal = float(spec.cost_bytes(spec.sizes["cuda"].timed))
    if isinstance(result, dict) and result.get("minimum_bytes"):
        ideal = float(result["minimum_bytes"])  # the minimum for the calls it profiled
    ratio = measured / ideal
    ctx.row(
        measure,
        "within 10%",
        f"{ratio:.3f} ({measured:.4g} of {ideal:.4g} bytes; {how})",
        judged(abs(ratio - 1) <= 0.10),
    )


# ---------------------------------------------------------------------------- warm grading


def warm(ctx: StepContext) -> None:
    """Two gradings of vector-add's samples/fast.py in this process with warm runners on, as
    a Celery worker grades (compare and profile on, the grade handed over in on_graded):
    the first fills the slot's bench, the second is what a student waits for."""
    os.environ["GRADERS_WARM"] = "1"
    from graders.grading import warm as warm_runners

    spec = _spec("vector-add")
    source = (spec.path / "samples" / "fast.py").read_text()
    timings: list[dict[str, Any]] = []
    ctx.raw["gradings"] = timings
    try:
        for index in range(2):
            if index:
                time.sleep(2.0)  # a student reading the first report: runners start meanwhile
            final: list[float] = []
            began = time.monotonic()

            def graded(_: Report, began: float = began, final: list[float] = final) -> bool:
                final.append(time.monotonic() - began)
                return True

            report = _grade(spec, source, ctx.device, compare=True, profile=True, on_graded=graded)
            total = time.monotonic() - began
            timings.append(
                {"to_grade_s": final[0] if final else None, "total_s": total, **_summary(report)}
            )
            ctx.save()
            if report["verdict"] != "correct":
                raise RuntimeError(
                    f"samples/fast.py graded {report['verdict']}: {report['message']}"
                )
    finally:
        warm_runners.close_all()
    second = timings[-1]
    to_grade = second["to_grade_s"] if second["to_grade_s"] is not None else second["total_s"]
    ctx.timing(
        "warm grading of vector-add: submit to report",
        f"<= {WARM_TARGET_S:g} s",
        f"{to_grade:.2f} s to the final grade ({second['total_s']:.2f} s with the profile; "
        f"the first, cold: {timings[0]['total_s']:.2f} s)",
        to_grade <= WARM_TARGET_S,
    )


# ---------------------------------------------------------------------------- the probe


def probe_step(ctx: StepContext) -> None:
    """The hardware's questions (graders/gpu_check/hardware_probe.py), imported here so the
    probe's module can import this one's context type without a cycle."""
    from graders.gpu_check import hardware_probe

    hardware_probe.probe(ctx)


# ---------------------------------------------------------------------------- the list

STEPS: tuple[Step, ...] = (
    Step("probe", "the hardware's questions (GPU)", probe_step, 150, 30),
    Step("calibration", "peaks(device, refresh=True) against the datasheet", calibration, 60, 40),
    Step("samples", "every exercise's reference, naive and samples", samples, 150, 90),
    Step("reference", "vector-add reference: bandwidth fraction, memory", reference, 60, 45),
    Step("fidelity", "engine median against do_bench", fidelity, 60, 40, needs_cuda=True),
    Step("repeatability", "CV over gradings of samples/fast.py", repeatability, 60, 40),
    Step(
        "compiled-samples", "Triton and CUDA C++ samples", compiled_samples, 90, 60, needs_cuda=True
    ),
    Step("ncu-bytes", "ncu bytes of one exercise", ncu_bytes, 60, 40, needs_cuda=True),
    Step("warm", "warm grading, submit to report", warm, 60, 60),
    Step("hostile", "the hostile corpus on the device", hostile, 150, 120),
)
BY_NAME = {step.name: step for step in STEPS}


def skip_on_cpu(step: Step, ctx: StepContext) -> None:
    """The row a CUDA-only step leaves on a CPU run, without starting a child."""
    if step.name == "compiled-samples":
        compiled_samples(ctx)
    elif step.name == "ncu-bytes":
        ncu_bytes(ctx)
    else:
        ctx.skipped(f"{step.name}: {step.title}")
