"""Validate exercises: schema, trusted code, samples' verdicts, the lesson's structure.

Quick mode (the default, for CI) grades the reference, the naive version and every
sample through the real engine and sandbox, but with the timed phase shrunk to one
verified call on the last check size (:func:`quick_spec`): verdicts are checked,
scores of correct gradings are not; the scoring curves are checked against the ladder's
rule without timing (``ladder_rules.curve_problems``). ``perf=True`` grades with the
exercise's own timing and companions, and also checks the measured ladder
(``ladder_rules.ladder_problems``): the naive version earns at most 25 % of the performance
points, the reference at least 95 % with a margin, every sample its score range. The
measured rungs are kept with the result (``ExerciseResult.ladder``) for the site to show.

Results are cached per exercise content hash (any file in the folder) in
``$GRADERS_CACHE_DIR/validation.json``; :func:`validation_status` reads them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from graders.authoring.forbidden_samples import exempt, forbidden_problems
from graders.authoring.ladder_rules import (
    LadderRecord,
    curve_problems,
    has_ladder,
    ladder_problems,
    measured_ladder,
    noise_problem,
)
from graders.authoring.meta import AuthoringMeta, SampleExpectation, load_expectations, load_meta
from graders.authoring.notebook_samples import notebook_folders, validate_notebook
from graders.errors import GraderError, SpecError
from graders.locations import cache_dir
from graders.spec.exercise import Curve, ExerciseSpec, SizePlan, TimingPolicy, load_exercise

QUICK_SETUP_S = 15.0  # a hanging sample costs this much in quick mode, not the full limit
_CACHE_FILE = "validation.json"


@dataclasses.dataclass
class ExerciseResult:
    path: str
    slug: str | None
    content_hash: str | None
    mode: str  # "quick" | "perf"
    device: str
    problems: list[str] = dataclasses.field(default_factory=list)
    gradings: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    figures: dict[str, Any] = dataclasses.field(default_factory=dict)
    draft: bool = False
    seconds: float = 0.0
    cached: bool = False
    # --perf only: the measured rungs, and whether one failed (which withholds publishing).
    ladder: LadderRecord | None = None
    ladder_failed: bool = False

    @property
    def passed(self) -> bool:
        return not self.problems


# ------------------------------------------------------------------------ discovery


def exercise_folders(path: Path) -> list[Path]:
    """The folder itself when it holds exercise.toml, else every exercise folder below it."""
    if (path / "exercise.toml").is_file():
        return [path]
    return sorted(
        p.parent for p in path.rglob("exercise.toml") if "samples" not in p.relative_to(path).parts
    )


def quick_spec(spec: ExerciseSpec) -> ExerciseSpec:
    """The spec with the timed phase reduced to one verified call on the last check size.

    The last check size is also one the correctness phase used, so an answer cached per
    shape is replayed, and caught, in the single timed call.
    """
    sizes = {
        device: SizePlan(plan.check, dict(plan.check[-1])) for device, plan in spec.sizes.items()
    }
    timing = TimingPolicy(
        warmup=0, min_runs=1, max_runs=1, target_median_error=1.0, verified_samples=1
    )
    limits = dataclasses.replace(
        spec.limits,
        setup_s=min(spec.limits.setup_s, QUICK_SETUP_S),
        timed_s=min(spec.limits.timed_s, QUICK_SETUP_S),
    )
    # Relative measures need the companions, which quick mode does not start (the engine
    # refuses to score without them); scores are not checked in quick mode anyway.
    curves = {
        device: Curve("fraction_of_roofline", curve.full_at, curve.zero_at)
        if curve.measure in ("relative_to_reference", "speedup_vs_naive")
        else curve
        for device, curve in spec.scoring.curves.items()
    }
    scoring = dataclasses.replace(spec.scoring, curves=curves)
    return dataclasses.replace(spec, sizes=sizes, timing=timing, limits=limits, scoring=scoring)


# ------------------------------------------------------------------------ one exercise


def _gradable(spec: ExerciseSpec) -> list[tuple[str, str, str]]:
    """(name, file, source) for the reference, the naive version and every sample.

    Sources are graded as they are: the engine itself wraps a KernelBench-style file that
    defines only the model class, exactly as it would a student's.
    """
    files = [("reference", spec.reference_path)]
    if spec.naive_path is not None:
        files.append(("naive", spec.naive_path))
    files += [(f"samples/{p.stem}", p) for p in sorted((spec.path / "samples").glob("*.py"))]
    return [(name, str(path), path.read_text(encoding="utf-8")) for name, path in files]


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    perf = report.get("performance") or {}
    profile = report.get("profile") or []
    return {
        "verdict": report["verdict"],
        "score": report["score"],
        "message": report.get("message"),
        "points": perf.get("points"),
        "measure": perf.get("measure"),
        "measure_value": perf.get("measure_value"),
        "median_s": perf.get("median_s"),
        "achieved_gbps": perf.get("achieved_gbps"),
        "achieved_gflops": (perf["achieved_flops_per_s"] / 1e9)
        if perf.get("achieved_flops_per_s")
        else None,
        "fraction_of_peak": perf.get("fraction_of_peak"),
        "relative_to_reference": perf.get("relative_to_reference"),
        "speedup_vs_naive": perf.get("speedup_vs_naive"),
        "profile_calls": sum(row["calls"] for row in profile) if profile else None,
        "profile_ops": [row["name"] for row in profile],
        "flags": report.get("flags"),
        "total_s": report["timings"].get("total_s"),
    }


def _grade_all(
    spec: ExerciseSpec,
    items: list[tuple[str, str, str]],
    device: str,
    perf: bool,
    jobs: int,
) -> dict[str, dict[str, Any]]:
    from graders import grade

    graded_spec = spec if perf else quick_spec(spec)
    jobs = 1 if perf else max(1, jobs)  # timed gradings must never share the machine

    def one(index: int, item: tuple[str, str, str]) -> tuple[str, dict[str, Any]]:
        name, _, source = item
        profile = perf or name in ("reference", "naive")
        report = grade(
            exempt(graded_spec) if name in ("reference", "naive") else graded_spec,
            source,
            device=device,
            slot=(index % jobs) if jobs > 1 else None,
            profile=profile,
            compare=perf,
        )
        # The checks below read reports as the JSON they are stored as.
        return name, cast("dict[str, Any]", report)

    if jobs == 1:
        return dict(one(i, item) for i, item in enumerate(items))
    # Each worker thread keeps to its own slot (uid and core), like separate workers would.
    with ThreadPoolExecutor(jobs) as pool:
        lanes = [
            pool.submit(lambda lane: [one(lane, it) for it in items[lane::jobs]], lane)
            for lane in range(jobs)
        ]
        return dict(pair for lane in lanes for pair in lane.result())


def _check_gradings(
    spec: ExerciseSpec,
    expectations: list[SampleExpectation],
    reports: dict[str, dict[str, Any]],
    files: dict[str, str],
    perf: bool,
    device: str = "cpu",
) -> list[str]:
    problems = []
    for name in ("reference", "naive"):
        report = reports.get(name)
        if report is not None and report["verdict"] != "correct":
            problems.append(
                f"{files[name]}: graded {report['verdict']!r}, must be 'correct': "
                f"{report.get('message')}"
            )
    expected_toml = spec.path / "samples" / "expected.toml"
    for sample in expectations:
        report = reports[f"samples/{sample.name}"]
        want = sample.for_device(device)  # a [name.cuda] table, or the top-level keys
        where = f"{expected_toml}: field '{want.where}.verdict'"
        if report["verdict"] != want.verdict:
            problems.append(
                f"{where}: expected {want.verdict!r}, graded {report['verdict']!r} "
                f"({report.get('message')})"
            )
            continue
        problems += forbidden_problems(spec, want, report, expected_toml)
        # In quick mode the score of a correct grading reflects no real timing; in perf mode
        # it is a rung of the ladder (ladder_rules), which says where it sits on the curve.
        # One that ran a forbidden operator earns correctness points only, timed or not.
        untimed = want.verdict != "correct" or "forbidden" in report
        checked_here = untimed or (perf and not has_ladder(spec, device))
        if checked_here and not want.low <= report["score"] <= want.high:
            problems.append(
                f"{expected_toml}: field '{want.where}.score': "
                f"expected [{want.low:g}, {want.high:g}], graded {report['score']:g}"
            )
    return problems


def _check_lesson(
    spec: ExerciseSpec, meta: AuthoringMeta, reports: dict[str, dict[str, Any]]
) -> tuple[list[str], dict[str, Any]]:
    from graders.authoring import structure  # imports torch: only once a validation really runs

    problems: list[str] = []
    figures: dict[str, Any] = {}
    meta_file = spec.path / "validate.toml"
    lesson = meta.lesson
    if lesson.bound is not None and "cpu" in spec.sizes:
        from graders.measure.calibrate import peaks

        cpu = peaks("cpu")
        sizes = spec.sizes["cpu"].timed
        intensity = float(spec.cost_flops(sizes)) / max(float(spec.cost_bytes(sizes)), 1.0)
        ridge = cpu["flops_per_s"] / (cpu["gbps"] * 1e9)
        bound = "compute" if intensity > ridge else "memory"
        figures.update(intensity=intensity, cpu_ridge=ridge, bound=bound)
        if bound != lesson.bound:
            problems.append(
                f"{meta_file}: field 'lesson.bound': {lesson.bound!r}, but [cost] gives "
                f"{intensity:.3g} FLOP/byte at sizes.cpu.timed against a CPU ridge point of "
                f"{ridge:.3g}: {bound}-bound"
            )
    naive_path = spec.naive_path
    if not (lesson.naive_more_ops or lesson.naive_more_bytes):
        return problems, figures
    if naive_path is None:
        return [*problems, f"{meta_file}: field 'lesson': needs naive.py to compare with"], figures
    from graders.grading import trusted_code

    reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
    naive = trusted_code.load(naive_path, spec.entry, spec.content_hash)
    sizes = structure.largest_check(spec)
    ref_traffic = structure.traffic(spec, reference, sizes)
    naive_traffic = structure.traffic(spec, naive, sizes)
    ideal = float(spec.cost_bytes(sizes))
    figures.update(
        structure_sizes=sizes,
        ideal_bytes=ideal,
        reference_ops=ref_traffic.ops,
        reference_traffic_bytes=ref_traffic.bytes,
        naive_ops=naive_traffic.ops,
        naive_traffic_bytes=naive_traffic.bytes,
    )
    if lesson.naive_more_bytes and not ideal < naive_traffic.bytes:
        problems.append(
            f"{meta_file}: field 'lesson.naive_more_bytes': the ideal {ideal:.4g} bytes "
            f"([cost] bytes at {sizes}) are not below naive.py's traffic "
            f"({naive_traffic.bytes:.4g} bytes over {naive_traffic.ops} operators)"
        )
    # The engine's profiles (top operators of one call) are recorded for the report, but
    # they count nested helper calls too (sdpa shows ~19 rows of empty/transpose/...), so
    # the check counts data-moving aten operators, the kernels an eager run launches.
    for name in ("reference", "naive"):
        profile = (reports.get(name) or {}).get("profile")
        if profile:
            figures[f"{name}_profile_calls"] = sum(row["calls"] for row in profile)
    if lesson.naive_more_ops and not ref_traffic.ops < naive_traffic.ops:
        problems.append(
            f"{meta_file}: field 'lesson.naive_more_ops': reference.py runs "
            f"{ref_traffic.ops} operators, naive.py {naive_traffic.ops}: the naive version "
            "must run more"
        )
    return problems, figures


def validate_exercise(
    folder: Path,
    *,
    perf: bool = False,
    device: str = "cpu",
    jobs: int = 1,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ExerciseResult:
    began = time.monotonic()
    mode = "perf" if perf else "quick"
    result = ExerciseResult(str(folder), None, None, mode, device)
    try:
        spec = load_exercise(folder)
        meta = load_meta(spec.path)
        expectations = load_expectations(spec.path, spec.max_score)
    except SpecError as exc:
        result.problems.append(str(exc))
        return result
    result.slug, result.content_hash, result.draft = spec.slug, spec.content_hash, meta.draft
    legacy = meta.kernelbench.legacy_model if meta.kernelbench is not None else None
    if legacy is not None and spec.kernelbench is None:
        # An import from before model/seed moved: grading would no longer wrap its samples.
        result.problems.append(
            f"{spec.path / 'validate.toml'}: field 'kernelbench.model': grading reads it from "
            f"exercise.toml now; add [kernelbench] model = {legacy!r} there"
        )
        return result
    if device not in spec.devices:
        result.problems.append(
            f"{spec.path / 'exercise.toml'}: field 'devices': {device!r} not listed"
        )
        return result
    if use_cache:
        cached = _cache_get(spec.content_hash, mode, device)
        if cached is not None:
            return dataclasses.replace(cached, path=str(spec.path), cached=True)

    from graders.authoring import structure
    from graders.grading import trusted_code

    try:
        reference = trusted_code.load(spec.reference_path, spec.entry, spec.content_hash)
        if spec.naive_path is not None:
            trusted_code.load(spec.naive_path, spec.entry, spec.content_hash)
    except GraderError as exc:
        result.problems.append(str(exc))
        return result
    # A KernelBench entry builds its model per device kind, so on meta tensors it can only
    # stand for one device: the CPU's sizes (the CUDA ones are checked on a GPU worker).
    shape_devices = ("cpu",) if spec.kernelbench is not None and "cpu" in spec.devices else None
    result.problems += structure.check_shapes(spec, reference, shape_devices)
    result.problems += structure.check_real_and_degenerate(
        spec, reference
    ) + structure.check_small_values(spec, reference)
    result.problems += curve_problems(spec)
    if result.problems:  # gradings would only repeat the same failure, slowly
        store_result(result)
        return result

    items = _gradable(spec)
    if progress:
        progress(f"{spec.slug}: grading {len(items)} files ({mode}, {device})")
    reports = _grade_all(spec, items, device, perf, jobs)
    files = {name: path for name, path, _ in items}
    result.gradings = {name: _summary(report) for name, report in reports.items()}
    result.problems += _check_gradings(spec, expectations, reports, files, perf, device)
    if perf:
        result.ladder = measured_ladder(spec, device, reports)
        if result.ladder is not None:
            failed_rungs = ladder_problems(spec, result.ladder, expectations)
            # A run too busy to judge fails validate, but says nothing against the content.
            result.ladder_failed = bool(failed_rungs) and noise_problem(result.ladder) is None
            result.problems += failed_rungs
    lesson_problems, figures = _check_lesson(spec, meta, reports)
    result.problems += lesson_problems
    result.figures = figures
    result.seconds = time.monotonic() - began
    store_result(result)
    return result


def validate_path(
    path: Path,
    *,
    perf: bool = False,
    device: str = "cpu",
    jobs: int = 1,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[ExerciseResult]:
    folders = exercise_folders(path)
    notebooks = notebook_folders(path)  # their samples/ too (authoring/notebook_samples.py)
    if not folders and not notebooks:
        raise SpecError(f"{path}: no exercise.toml found (nor notebook.toml)")
    return [
        validate_exercise(
            f, perf=perf, device=device, jobs=jobs, use_cache=use_cache, progress=progress
        )
        for f in folders
    ] + [validate_notebook(folder, progress) for folder in notebooks]


# ------------------------------------------------------------------------ the cache


def _cache_path() -> Path:
    return cache_dir() / _CACHE_FILE


@contextlib.contextmanager
def _locked() -> Any:
    path = _cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield path


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _cache_get(content_hash: str, mode: str, device: str) -> ExerciseResult | None:
    entry = _read(_cache_path()).get(f"{content_hash}|{mode}|{device}")
    if not isinstance(entry, dict):
        return None
    try:
        return ExerciseResult(**{k: v for k, v in entry.items() if k != "stored_at"})
    except TypeError:
        return None  # written by an older version: validate again


def store_result(result: ExerciseResult) -> None:
    """Record a validation for its content, mode and device (what validation_status reads)."""
    if result.content_hash is None:
        return
    with contextlib.suppress(OSError), _locked() as path:
        data = _read(path)
        entry = dataclasses.asdict(result)
        entry["cached"] = False
        entry["stored_at"] = time.time()
        data[f"{result.content_hash}|{result.mode}|{result.device}"] = entry
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
        tmp.replace(path)  # atomic: readers never see half a file


def validation_status(spec: ExerciseSpec, device: str = "cpu") -> str:
    """ "passed" | "failed" | "unknown" for this exact content on ``device``.

    The quick run decides (it is what gates publishing), except that a --perf run whose
    measured ladder failed fails the content too: its rungs are ratios to the reference timed
    in the same grading, which the load of a shared machine cancels out. Otherwise a --perf
    run counts only when no quick run is recorded.
    """
    data = _read(_cache_path())
    perf_entry = data.get(f"{spec.content_hash}|perf|{device}")
    if isinstance(perf_entry, dict) and perf_entry.get("ladder_failed"):
        return "failed"
    for mode in ("quick", "perf"):
        entry = data.get(f"{spec.content_hash}|{mode}|{device}")
        if isinstance(entry, dict):
            return "failed" if entry.get("problems") else "passed"
    return "unknown"


def latest_ladder(spec: ExerciseSpec, device: str = "cpu") -> LadderRecord | None:
    """The ladder a --perf validation measured for this exact content on ``device``, if any."""
    entry = _read(_cache_path()).get(f"{spec.content_hash}|perf|{device}")
    ladder = entry.get("ladder") if isinstance(entry, dict) else None
    return cast("LadderRecord", ladder) if isinstance(ladder, dict) else None
