"""Validation-only metadata of an exercise folder: ``validate.toml`` and ``samples/expected.toml``.

``validate.toml`` (optional; the grading engine never reads it)::

    draft = false                 # true: imported or unfinished, not to be published yet

    [lesson]                      # the structure the exercise teaches, checked by validate
    naive_more_ops = true         # naive.py runs more operator calls than reference.py
    naive_more_bytes = true       # [cost] bytes < the traffic naive.py's operators move
    bound = "memory"              # memory | compute: the timed CPU size on the roofline

    [kernelbench]                 # written by import-kernelbench (see kernelbench.py)
    model = "ModelNew"            # the class a submission may define instead of the entry
    seed = 42                     # public seed: Model and ModelNew start with equal weights
    source = "problem.py"         # the problem file it was imported from (provenance)

``samples/expected.toml``: one table per ``samples/<name>.py`` with ``verdict`` and
``score = [low, high]`` (inclusive, on CPU).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..report import VERDICTS

META_FILE = "validate.toml"
BOUNDS = ("memory", "compute")


@dataclass(frozen=True)
class Lesson:
    naive_more_ops: bool = False
    naive_more_bytes: bool = False
    bound: str | None = None


@dataclass(frozen=True)
class KernelBenchInfo:
    model: str = "ModelNew"
    seed: int = 42
    source: str = ""


@dataclass(frozen=True)
class AuthoringMeta:
    draft: bool = False
    lesson: Lesson = field(default_factory=Lesson)
    kernelbench: KernelBenchInfo | None = None


@dataclass(frozen=True)
class SampleExpectation:
    name: str
    verdict: str
    low: float
    high: float


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None


def _only(path: Path, where: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in sorted(set(table) - set(allowed)):
        dotted = f"{where}.{key}" if where else key
        raise SpecError(
            f"{path}: field '{dotted}': unknown key (allowed: {', '.join(sorted(allowed))})"
        )


def _typed(path: Path, where: str, value: Any, kind: type) -> Any:
    # bool is an int subclass: `seed = true` is a typo, not a seed.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise SpecError(
            f"{path}: field '{where}': expected {kind.__name__}, got {type(value).__name__}"
        )
    return value


def load_meta(folder: Path) -> AuthoringMeta:
    """Parse ``validate.toml`` (defaults when absent); SpecError names file and field."""
    path = folder / META_FILE
    if not path.is_file():
        return AuthoringMeta()
    raw = _read_toml(path)
    _only(path, "", raw, ("draft", "lesson", "kernelbench"))
    draft = _typed(path, "draft", raw.get("draft", False), bool)
    lesson_raw = _typed(path, "lesson", raw.get("lesson", {}), dict)
    _only(path, "lesson", lesson_raw, ("naive_more_ops", "naive_more_bytes", "bound"))
    bound = lesson_raw.get("bound")
    if bound is not None and bound not in BOUNDS:
        raise SpecError(f"{path}: field 'lesson.bound': must be one of {BOUNDS}, got {bound!r}")
    lesson = Lesson(
        naive_more_ops=_typed(
            path, "lesson.naive_more_ops", lesson_raw.get("naive_more_ops", False), bool
        ),
        naive_more_bytes=_typed(
            path, "lesson.naive_more_bytes", lesson_raw.get("naive_more_bytes", False), bool
        ),
        bound=bound,
    )
    kernelbench = None
    if "kernelbench" in raw:
        kb = _typed(path, "kernelbench", raw["kernelbench"], dict)
        _only(path, "kernelbench", kb, ("model", "seed", "source"))
        model = _typed(path, "kernelbench.model", kb.get("model", "ModelNew"), str)
        if not model.isidentifier():
            raise SpecError(f"{path}: field 'kernelbench.model': must be a Python identifier")
        kernelbench = KernelBenchInfo(
            model=model,
            seed=_typed(path, "kernelbench.seed", kb.get("seed", 42), int),
            source=_typed(path, "kernelbench.source", kb.get("source", ""), str),
        )
    return AuthoringMeta(draft=draft, lesson=lesson, kernelbench=kernelbench)


def load_expectations(folder: Path, max_score: float) -> list[SampleExpectation]:
    """Every sample with its expected verdict and score range; checks files and entries match."""
    samples = folder / "samples"
    if not samples.is_dir():
        return []
    path = samples / "expected.toml"
    files = {p.stem for p in samples.glob("*.py")}
    if not path.is_file():
        if files:
            raise SpecError(f"{path}: required file is missing (samples/ holds {len(files)} .py)")
        return []
    raw = _read_toml(path)
    expectations = []
    for name, entry in raw.items():
        where = name
        entry = _typed(path, where, entry, dict)
        _only(path, where, entry, ("verdict", "score"))
        if name not in files:
            raise SpecError(f"{path}: field '{where}': no sample file samples/{name}.py")
        verdict = _typed(path, f"{where}.verdict", entry.get("verdict"), str)
        if verdict not in VERDICTS:
            raise SpecError(f"{path}: field '{where}.verdict': must be one of {VERDICTS}")
        score = entry.get("score")
        if (
            not isinstance(score, list)
            or len(score) != 2
            or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in score)
            or not 0 <= score[0] <= score[1] <= max_score
        ):
            raise SpecError(
                f"{path}: field '{where}.score': expected [low, high] with "
                f"0 <= low <= high <= {max_score:g}, got {score!r}"
            )
        expectations.append(SampleExpectation(name, verdict, float(score[0]), float(score[1])))
    missing = sorted(files - set(raw))
    if missing:
        raise SpecError(f"{path}: field '{missing[0]}': samples/{missing[0]}.py has no entry")
    return expectations
