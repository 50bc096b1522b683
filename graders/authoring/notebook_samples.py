"""Validate a notebook exercise's samples: each submitted notebook graded as a student's.

A notebook exercise (a folder with notebook.toml) may hold ``samples/*.ipynb`` and
``samples/expected.toml`` with a table per sample, as code exercises do::

    [numpy_fused]            # samples/numpy_fused.ipynb
    verdict = "wrong"        # what grade_notebook must say
    score = [4.0, 4.0]       # the autograded points, inclusive range

so that a hidden test meant to tell two answers apart is proved to, on every validation.
Gradings are not timed, so the score is always checked. Results are not cached: a notebook
exercise has a few samples, each graded in seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from graders.errors import SpecError
from graders.spec.content import field_error, read_toml

if TYPE_CHECKING:
    from graders.authoring.validate import ExerciseResult

TOML_NAME = "notebook.toml"
VERDICTS = ("correct", "wrong", "error", "timeout", "rejected")


@dataclass(frozen=True)
class NotebookSample:
    name: str
    verdict: str
    low: float
    high: float


def notebook_folders(path: Path) -> list[Path]:
    """The folder itself when it holds notebook.toml, else every notebook exercise below it."""
    if (path / TOML_NAME).is_file():
        return [path]
    return sorted(
        p.parent for p in path.rglob(TOML_NAME) if "samples" not in p.relative_to(path).parts
    )


def load_samples(folder: Path, max_score: float) -> list[NotebookSample]:
    """Every ``samples/*.ipynb`` with its expectation; SpecError names file and field."""
    samples = folder / "samples"
    files = {p.stem for p in samples.glob("*.ipynb")} if samples.is_dir() else set()
    path = samples / "expected.toml"
    if not path.is_file():
        if files:
            raise SpecError(
                f"{path}: required file is missing (samples/ holds {len(files)} .ipynb)"
            )
        return []
    top = read_toml(path)
    found = []
    for name in top.data:
        entry = top.sub(name)
        entry.only(("verdict", "score"))
        if name not in files:
            raise top.fail(name, f"no sample file samples/{name}.ipynb")
        verdict = entry.get("verdict", str)
        if verdict not in VERDICTS:
            raise entry.fail("verdict", f"must be one of {VERDICTS}")
        score = entry.get("score", list)
        if (
            len(score) != 2
            or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in score)
            or not 0 <= score[0] <= score[1] <= max_score
        ):
            raise entry.fail(
                "score",
                f"expected [low, high] with 0 <= low <= high <= {max_score:g}, got {score!r}",
            )
        found.append(NotebookSample(name, verdict, float(score[0]), float(score[1])))
    missing = sorted(files - set(top.data))
    if missing:
        raise field_error(path, missing[0], f"samples/{missing[0]}.ipynb has no entry")
    return found


def validate_notebook(
    folder: Path, progress: Callable[[str], None] | None = None
) -> ExerciseResult:
    """Grade every sample of one notebook exercise and compare with expected.toml."""
    from graders.authoring.validate import ExerciseResult  # it imports this module
    from graders.notebooks import load_notebook_exercise
    from graders.notebooks.grading import grade_notebook

    began = time.monotonic()
    result = ExerciseResult(
        path=str(folder), slug=None, content_hash=None, mode="quick", device="cpu"
    )
    try:
        spec = load_notebook_exercise(folder)
        result.slug, result.content_hash = spec.slug, spec.content_hash
        samples = load_samples(folder, spec.max_score)
    except SpecError as exc:
        result.problems.append(str(exc))
        return result
    if progress:
        progress(f"{spec.slug}: grading {len(samples)} notebook samples")
    expected_toml = folder / "samples" / "expected.toml"
    for sample in samples:
        ipynb = folder / "samples" / f"{sample.name}.ipynb"
        report = cast("dict[str, Any]", grade_notebook(spec, ipynb.read_bytes()))
        result.gradings[sample.name] = {
            "verdict": report["verdict"],
            "score": report["score"],
            "message": report.get("message"),
        }
        if report["verdict"] != sample.verdict:
            result.problems.append(
                f"{expected_toml}: field '{sample.name}.verdict': expected {sample.verdict!r}, "
                f"graded {report['verdict']!r} ({report.get('message')})"
            )
        elif not sample.low <= report["score"] <= sample.high:
            result.problems.append(
                f"{expected_toml}: field '{sample.name}.score': expected "
                f"[{sample.low:g}, {sample.high:g}], graded {report['score']:g}"
            )
    result.seconds = time.monotonic() - began
    return result
