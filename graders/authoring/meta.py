"""Validation-only metadata of an exercise folder: ``validate.toml`` and ``samples/expected.toml``.

``validate.toml`` (optional; the grading engine never reads it)::

    draft = false                 # true: imported or unfinished, not to be published yet

    [lesson]                      # the structure the exercise teaches, checked by validate
    naive_more_ops = true         # naive.py runs more operator calls than reference.py
    naive_more_bytes = true       # [cost] bytes < the traffic naive.py's operators move
    bound = "memory"              # memory | compute: the timed CPU size on the roofline

    [kernelbench]                 # written by import-kernelbench (see kernelbench.py)
    source = "problem.py"         # the problem file it was imported from (provenance)

What grading needs of a KernelBench import (the model class and seed) lives in
exercise.toml's ``[kernelbench]`` table. Files written before that move may still hold
``model`` and ``seed`` here: they are read without error, and validate reports them when
exercise.toml lacks its table.

``samples/expected.toml``: one table per ``samples/<name>.py`` with ``verdict`` and
``score = [low, high]`` (inclusive, on CPU). A sample that grades otherwise on another device
kind adds a table for it, which replaces both keys on that device only::

    [triton_kernel]         # on CPU: Triton's interpreter runs it, correctness points only
    verdict = "correct"
    score = [6.0, 6.0]

    [triton_kernel.cuda]    # on a GPU: compiled and timed
    verdict = "correct"
    score = [6.0, 10.0]

The top-level keys stay required: they hold on every device without a table of its own (and
tools that read only them, written before device tables existed, still see the CPU's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graders.errors import SpecError
from graders.report.build import VERDICTS
from graders.spec.content import Table, field_error, read_toml

META_FILE = "validate.toml"
BOUNDS = ("memory", "compute")


@dataclass(frozen=True)
class Lesson:
    naive_more_ops: bool = False
    naive_more_bytes: bool = False
    bound: str | None = None


@dataclass(frozen=True)
class KernelBenchInfo:
    """Provenance of a KernelBench import. ``legacy_model``: the ``model`` key an older
    validate.toml held, which grading no longer reads (it is in exercise.toml now)."""

    source: str = ""
    legacy_model: str | None = None


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
    # The table it was read from, for messages: "fast", or "triton_kernel.cuda".
    where: str = ""
    # Per device kind: what a grading on that device must give instead (a [name.cuda] table).
    on_device: dict[str, SampleExpectation] = field(default_factory=dict)
    # The ``[rules] forbid`` entry the grading must find the sample running (``forbidden =
    # "softmax"``); None: the grading must find nothing forbidden.
    forbidden: str | None = None

    def for_device(self, device: str) -> SampleExpectation:
        """The expectation a grading on ``device`` ("cpu", "cuda") is checked against."""
        return self.on_device.get(device, self)


def _kernelbench(table: Table) -> KernelBenchInfo:
    table.only(("model", "seed", "source"))
    model = table.identifier("model", "") if "model" in table else None
    table.integer("seed", 0)  # type-checked only: an old file's seed is not used any more
    return KernelBenchInfo(source=table.get("source", str, ""), legacy_model=model)


def load_meta(folder: Path) -> AuthoringMeta:
    """Parse ``validate.toml`` (defaults when absent); SpecError names file and field."""
    path = folder / META_FILE
    if not path.is_file():
        return AuthoringMeta()
    top = read_toml(path)
    top.only(("draft", "lesson", "kernelbench"))
    lesson_table = top.sub("lesson", {})
    lesson_table.only(("naive_more_ops", "naive_more_bytes", "bound"))
    bound = lesson_table.get("bound", str, None)
    if bound is not None and bound not in BOUNDS:
        raise lesson_table.fail("bound", f"must be one of {BOUNDS}, got {bound!r}")
    lesson = Lesson(
        naive_more_ops=lesson_table.get("naive_more_ops", bool, False),
        naive_more_bytes=lesson_table.get("naive_more_bytes", bool, False),
        bound=bound,
    )
    kernelbench = _kernelbench(top.sub("kernelbench")) if "kernelbench" in top else None
    return AuthoringMeta(
        draft=top.get("draft", bool, False), lesson=lesson, kernelbench=kernelbench
    )


# The device kinds a sample may have a table of its own for (a report's device.kind).
DEVICE_KINDS = ("cpu", "cuda")


def _outcome(entry: Table, max_score: float) -> tuple[str, float, float]:
    """(verdict, low, high) of one table of expected.toml."""
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
    return verdict, float(score[0]), float(score[1])


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
    top = read_toml(path)
    expectations = []
    for name in top.data:
        entry = top.sub(name)
        entry.only(("verdict", "score", "forbidden", *DEVICE_KINDS))
        if name not in files:
            raise top.fail(name, f"no sample file samples/{name}.py")
        verdict, low, high = _outcome(entry, max_score)
        forbidden = entry.get("forbidden", str, None)
        if forbidden is not None and verdict != "correct":
            raise entry.fail(
                "forbidden", "only a correct grading is checked for forbidden operators"
            )
        on_device = {}
        for device in DEVICE_KINDS:
            if device in entry:
                table = entry.sub(device)
                table.only(("verdict", "score"))
                on_device[device] = SampleExpectation(
                    name, *_outcome(table, max_score), where=table.where
                )
        expectations.append(
            SampleExpectation(
                name,
                verdict,
                low,
                high,
                where=entry.where,
                on_device=on_device,
                forbidden=forbidden,
            )
        )
    missing = sorted(files - set(top.data))
    if missing:
        raise field_error(path, missing[0], f"samples/{missing[0]}.py has no entry")
    return expectations
