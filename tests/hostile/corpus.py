"""The hostile corpus: load the cases, build the quick exercises they run on, grade and judge.

Shared by tests/hostile/test_hostile.py and scripts/reliability.py. Every case is a file
``cases/<class>/<name>.py`` (a submission) or ``.ipynb`` (a notebook submission) whose module
docstring (first markdown cell for a notebook) starts with a TOML block:

    class = "forged_times"            # the folder it lives in
    attack = "one line: what it tries"
    verdict = "correct"               # what the report must say
    points = 0                        # performance points it must get ("any": not asserted)
    message = "substring"             # optional: the report's message must contain it
    flags = ["timing_inconsistent"]   # optional: these must all be in the report's flags
    stdout = "substring"              # optional: the sandbox's stdout must contain it
    exercise = "vector-add"           # optional: vector-add (default), layernorm, softmax,
                                      #   gelu-residual, softmax-pool, attention,
                                      #   fusion-notebook
    zero_cells = ["test-fused"]       # optional (notebooks): these cells must score 0
    compare = true                    # optional: time the reference and naive alongside (the
                                      #   CPU curves of layernorm, softmax and gelu-residual
                                      #   are relative to the reference: without it a correct
                                      #   grading of them is a GraderError)
    profile = true                    # optional: take the informative profile after the grade
    warm = true                       # optional: grade with warm runners (GRADERS_WARM=1),
                                      #   right after an honest vector-add grading on the
                                      #   same slot: two students in a row

Each attack that also does work does it slowly (a few milliseconds a call), so an honest
measurement of it earns no performance points: any point a case gets is unearned credit.

``softmax-pool`` is softmax at a timed size whose input (16 MiB) is large enough for the
grader's window pool (graders/grading/arena.py); gelu-residual's quick copy is too (2 x 8 MiB).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders import ExerciseSpec, GraderError, grade, load_exercise
from graders.grading import warm
from graders.notebooks import NotebookExerciseSpec, load_notebook_exercise

REPO = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"
EXERCISES = REPO / "exercises" / "ch15"
HONEST = EXERCISES / "vector-add" / "samples" / "fast.py"
# Flags that say the trusted side caught tampering: an honest grading must have none.
TAMPER_FLAGS = {"implausible_speed", "second_core", "cpu_outside_calls", "timing_inconsistent"}

# Small sizes and short limits: one grading takes a few seconds on a 2-core machine.
_CODE = {
    r"setup_s = 60": "setup_s = 20",
    r"timed_s = 30": "timed_s = 6",
    r"warmup = 2": "warmup = 1",
    r"min_runs = 7": "min_runs = 5",
    r"max_runs = 25": "max_runs = 8",
    r"memory_mb = 4096": "memory_mb = 1024",
}
# The CUDA timed sizes (scripts/gpu_check.sh grades the corpus on a GPU): the exercises' own
# (1-3 GiB) would not let one case a second; a quarter of a GiB or less, still far past any
# GPU's L2 (50-60 MB), so a kernel is timed against memory, not the cache.
_CUDA_SOFTMAX = {r"timed = \{ rows = 65536, cols = 4096 \}": "timed = { rows = 8192, cols = 4096 }"}
_TIMED = {
    "vector-add": {
        r"timed = \{ n = 16777216 \}": "timed = { n = 4194304 }",
        r"timed = \{ n = 268435456 \}": "timed = { n = 67108864 }",
        # Its cases are graded without companions (compare is off unless a case asks), so its
        # quick copy keeps an absolute curve on each device, as the exercise had before issue
        # 26: a forged time would earn points on it at once, with no reference to hold it
        # back (and the engine cannot score a relative curve without the companions).
        r'\[scoring.curve.cpu\]\nmeasure = "relative_to_reference"': (
            '[scoring.curve.cpu]\nmeasure = "fraction_of_peak_bandwidth"'
        ),
        r'\[scoring.curve.cuda\]\nmeasure = "relative_to_reference"': (
            '[scoring.curve.cuda]\nmeasure = "fraction_of_peak_bandwidth"'
        ),
    },
    "layernorm": {
        r"timed = \{ rows = 4096, cols = 2048 \}": "timed = { rows = 256, cols = 512 }",
        **_CUDA_SOFTMAX,
    },
    "softmax": {
        r"timed = \{ rows = 4096, cols = 2048 \}": "timed = { rows = 256, cols = 512 }",
        **_CUDA_SOFTMAX,
    },
    # Inputs of 16 MiB in all: the least a memory-bound exercise's timed phase takes windows
    # of one pool for (arena.WINDOW_POOL_MIN_BYTES), so the cases of repeated_inputs see it.
    "gelu-residual": {
        r"timed = \{ rows = 2048, cols = 2048 \}": "timed = { rows = 2048, cols = 1024 }",
        r"timed = \{ rows = 16384, cols = 16384 \}": "timed = { rows = 4096, cols = 4096 }",
    },
    "softmax-pool": {
        r"timed = \{ rows = 4096, cols = 2048 \}": "timed = { rows = 2048, cols = 2048 }",
        **_CUDA_SOFTMAX,
    },
    "attention": {
        r"timed = \{ batch = 1, heads = 2, seq = 4096, dim = 16 \}": (
            "timed = { batch = 1, heads = 2, seq = 512, dim = 16 }"
        )
    },
}
# Quick copies that are a variant of another exercise (the folder they are copied from).
_SLUG = {"softmax-pool": "softmax"}
_NOTEBOOK = {r"cell_s = 60": "cell_s = 8", r"total_s = 180": "total_s = 60"}
KEYS = {"class", "attack", "verdict", "points", "message", "flags", "stdout", "exercise",
        "zero_cells", "compare", "profile", "warm"}  # fmt: skip


@dataclass(frozen=True)
class Case:
    path: Path
    klass: str
    attack: str
    verdict: str
    points: float | None  # None: not asserted
    message: str | None = None
    flags: tuple[str, ...] = ()
    stdout: str | None = None
    exercise: str = "vector-add"
    zero_cells: tuple[str, ...] = ()
    compare: bool = False
    profile: bool = False
    warm: bool = False

    @property
    def name(self) -> str:
        return f"{self.klass}/{self.path.name}"

    def expected(self) -> str:
        points = "any" if self.points is None else f"{self.points:g}"
        extra = f" {list(self.flags)}" if self.flags else ""
        if self.warm:
            extra += " (warm, after another student)"
        return f"{self.verdict}/{points}{extra}"


def _header(path: Path) -> str:
    if path.suffix == ".ipynb":
        import nbformat

        first = nbformat.read(path, as_version=4).cells[0]
        return str(first.source)
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    if docstring is None:
        raise ValueError(f"{path}: no module docstring")
    return docstring


def load_case(path: Path) -> Case:
    text = _header(path)
    block = text.split("\n\n", 1)[0]  # the TOML block ends at the first blank line
    data: dict[str, Any] = tomllib.loads(block)
    unknown = set(data) - KEYS
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    if data["class"] != path.parent.name:
        raise ValueError(f"{path}: class {data['class']!r} but folder {path.parent.name!r}")
    points = data["points"]
    return Case(
        path=path,
        klass=data["class"],
        attack=data["attack"],
        verdict=data["verdict"],
        points=None if points == "any" else float(points),
        message=data.get("message"),
        flags=tuple(data.get("flags", ())),
        stdout=data.get("stdout"),
        exercise=data.get(
            "exercise", "fusion-notebook" if path.suffix == ".ipynb" else "vector-add"
        ),
        zero_cells=tuple(data.get("zero_cells", ())),
        compare=bool(data.get("compare", False)),
        profile=bool(data.get("profile", False)),
        warm=bool(data.get("warm", False)),
    )


def case_files() -> list[Path]:
    return sorted(p for p in CASES.glob("*/*") if p.suffix in (".py", ".ipynb"))


def load_cases() -> list[Case]:
    return [load_case(path) for path in case_files()]


def _copy(target: Path, slug: str, replacements: dict[str, str], toml_name: str) -> Path:
    folder = target / "ch15" / slug
    shutil.copytree(EXERCISES / slug, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / toml_name
    text = toml.read_text()
    for pattern, replacement in replacements.items():
        text, count = re.subn(pattern, replacement, text)
        if count != 1:
            raise ValueError(f"{slug}: {pattern} matched {count} times")
    toml.write_text(text)
    return folder


class Exercises:
    """The quick copies of the exercises the cases run on, built once under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._specs: dict[str, ExerciseSpec | NotebookExerciseSpec] = {}

    def get(self, slug: str) -> ExerciseSpec | NotebookExerciseSpec:
        if slug not in self._specs:
            where = self.root / slug
            if slug == "fusion-notebook":
                folder = _copy(where, slug, _NOTEBOOK, "notebook.toml")
                self._specs[slug] = load_notebook_exercise(folder)
            else:
                original = _SLUG.get(slug, slug)
                folder = _copy(where, original, {**_CODE, **_TIMED[slug]}, "exercise.toml")
                self._specs[slug] = load_exercise(folder)
        return self._specs[slug]


@dataclass
class Outcome:
    """What one grading gave: the report, or the grader failure it raised, and its wall time."""

    report: dict[str, Any] | None
    grader_error: str | None
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "GraderError" if self.report is None else str(self.report["verdict"])

    @property
    def points(self) -> float:
        return performance_points(self.report)

    @property
    def flags(self) -> list[str]:
        return list(self.report.get("flags") or []) if self.report else []


def performance_points(report: dict[str, Any] | None) -> float:
    performance = (report or {}).get("performance") or {}
    return float(performance.get("points") or 0.0)


# scripts/gpu_check.sh sets it to "cuda" to run the corpus on a GPU; notebooks stay on CPU.
DEVICE = os.environ.get("GRADERS_HOSTILE_DEVICE", "cpu")


def run_grading(
    spec: ExerciseSpec | NotebookExerciseSpec,
    source: str | bytes,
    *,
    compare: bool = False,
    profile: bool = False,
) -> Outcome:
    """Grade ``source``; ``compare`` times the companions alongside, ``profile`` takes the
    informative profile after the grade (both off unless a case asks)."""
    began = time.monotonic()
    device = DEVICE if isinstance(spec, ExerciseSpec) and DEVICE in spec.devices else "cpu"
    try:
        report = dict(grade(spec, source, device=device, compare=compare, profile=profile))
    except GraderError as exc:
        return Outcome(None, str(exc), time.monotonic() - began)
    return Outcome(report, None, time.monotonic() - began)


def grade_case(case: Case, exercises: Exercises) -> Outcome:
    spec = exercises.get(case.exercise)
    source: str | bytes = (
        case.path.read_bytes() if case.path.suffix == ".ipynb" else case.path.read_text()
    )
    if case.warm:
        outcome = _after_another_student(exercises, spec, source, case)
    else:
        outcome = run_grading(spec, source, compare=case.compare, profile=case.profile)
    outcome.problems = judge(case, outcome)
    return outcome


def _after_another_student(
    exercises: Exercises,
    spec: ExerciseSpec | NotebookExerciseSpec,
    source: str | bytes,
    case: Case,
) -> Outcome:
    """Grade ``source`` with warm runners, right after an honest student on the same slot:
    its runner was started ahead while the other student's grading ran (issue 29, class 7)."""
    previous = os.environ.get("GRADERS_WARM")
    os.environ["GRADERS_WARM"] = "1"
    try:
        run_grading(exercises.get("vector-add"), HONEST.read_text())
        return run_grading(spec, source, compare=case.compare, profile=case.profile)
    finally:
        warm.close_all()
        if previous is None:
            del os.environ["GRADERS_WARM"]
        else:
            os.environ["GRADERS_WARM"] = previous


def judge(case: Case, outcome: Outcome) -> list[str]:
    """What is wrong with ``outcome`` for ``case``; empty when it is as the case states."""
    if outcome.report is None:
        return [f"grader failure (GraderError) caused by a submission: {outcome.grader_error}"]
    report, problems = outcome.report, []
    message = report.get("message") or ""
    if report["verdict"] != case.verdict:
        problems.append(f"verdict {report['verdict']!r}, expected {case.verdict!r} ({message})")
    if case.points is not None and outcome.points != case.points:
        problems.append(f"{outcome.points:g} performance points, expected {case.points:g}")
    if case.message is not None and case.message not in message:
        problems.append(f"message lacks {case.message!r}: {message!r}")
    missing = [flag for flag in case.flags if flag not in outcome.flags]
    if missing:
        problems.append(f"flags {outcome.flags} lack {missing}")
    if case.stdout is not None and case.stdout not in (report.get("stdout") or ""):
        problems.append(f"stdout lacks {case.stdout!r}: {(report.get('stdout') or '')[-300:]!r}")
    for grade_id in case.zero_cells:
        cells = [c for c in report.get("cells") or [] if c.get("grade_id") == grade_id]
        if any(c.get("score") for c in cells):
            problems.append(f"cell {grade_id} scored {[c.get('score') for c in cells]}")
    return problems


def unearned_credit(case: Case, outcome: Outcome) -> bool:
    """Credit the case should not have: points where none are due, or a pass that should fail."""
    if outcome.report is None:
        return False
    if case.points is not None and outcome.points > case.points:
        return True
    return case.verdict != "correct" and outcome.report["verdict"] == "correct"


def grade_honest(exercises: Exercises) -> list[str]:
    """Problems with an honest vector-add grading right after a case (none when it is sound)."""
    outcome = run_grading(exercises.get("vector-add"), HONEST.read_text())
    if outcome.report is None:
        return [f"honest grading failed: {outcome.grader_error}"]
    problems = []
    if outcome.report["verdict"] != "correct":
        problems.append(f"honest grading: {outcome.report['verdict']}: {outcome.report['message']}")
    tampered = TAMPER_FLAGS & set(outcome.flags)
    if tampered:
        problems.append(f"honest grading flagged {sorted(tampered)}")
    return problems


def iter_graded(exercises: Exercises) -> Iterator[tuple[Case, Outcome, list[str]]]:
    for case in load_cases():
        outcome = grade_case(case, exercises)
        yield case, outcome, grade_honest(exercises)
