"""Every byte, FLOP, intensity and time figure an exercise prompt states is recomputed.

The markup (graders/README.md, "Prompt figures"): beside its prompts an exercise keeps
`prompt.figures.toml`, one `[[figure]]` per stated figure:

    [[figure]]
    en = "12.6 MB"                 # exactly as prompt.en.md writes it
    zh = "12.6 MB"                 # exactly as prompt.zh.md writes it
    sizes = { m = 1024, k = 1024, n = 1024 }
    value = "bytes"                # what it is, in the unit's base (bytes, FLOP, s, FLOP/byte)

`value` is a formula in the grammar of exercise.toml's formulas (graders/spec/formula.py) over
the size names and `bytes` and `flops`, the exercise's own [cost] at those sizes. A figure is
right when its number equals the value rounded to the significant figures it is written with
(the quiz's honest-rounding rule): "0.64 ms" must be 0.635 to 0.645 ms, "1.0 ms" cannot stand
for 0.96 ms. And a prompt may state no figure with such a unit (B, KB, MB, GB, MiB, GiB,
FLOP, GFLOP, FLOP/byte, ms, and their Chinese spellings) that the file does not list.
"""

from __future__ import annotations

import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from courseware.quizzes.marking import round_significant
from graders.spec.exercise import ExerciseSpec, iter_exercises
from graders.spec.formula import Formula

REPO = Path(__file__).resolve().parents[2]
EXERCISES = iter_exercises(REPO / "exercises")
LANGS = ("en", "zh")

# Unit as written -> factor to the base unit of its kind.
UNITS: dict[str, float] = {
    "B": 1, "byte": 1, "bytes": 1, "字节": 1,
    "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30,
    "FLOP": 1, "MFLOP": 1e6, "GFLOP": 1e9, "TFLOP": 1e12,
    "FLOP/byte": 1, "FLOP/字节": 1,
    "ms": 1e-3, "毫秒": 1e-3, "µs": 1e-6, "微秒": 1e-6,
}  # fmt: skip
_UNIT = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
# A number and a unit, not part of a longer word or a rate ("3.35 TB/s", "67 TFLOP/s").
FIGURE = re.compile(
    rf"(?<![A-Za-z0-9_.])(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>{_UNIT})(?![A-Za-z0-9_/])"
)


def significant_figures(number: str) -> int:
    """As written: "0.083" has 2, "1.0" has 2, "200" has 1 (trailing zeros of an integer are
    not significant), "171" has 3."""
    digits = number.replace(".", "").lstrip("0")
    if "." not in number:
        digits = digits.rstrip("0")
    return max(len(digits), 1)


def figures_file(spec: ExerciseSpec) -> Path:
    return spec.path / "prompt.figures.toml"


def declared(spec: ExerciseSpec) -> list[dict[str, Any]]:
    with figures_file(spec).open("rb") as fh:
        figures = tomllib.load(fh).get("figure", [])
    assert figures, f"{figures_file(spec)}: no [[figure]]"
    return list(figures)


def value_of(spec: ExerciseSpec, figure: dict[str, Any]) -> float:
    """The figure's value; without sizes it is a constant (a device's ridge, the chapter's
    count) and may not name bytes or flops."""
    sizes = {k: float(v) for k, v in figure["sizes"].items()}
    known = dict(sizes)
    if sizes:
        known.update(bytes=spec.cost_bytes(sizes), flops=spec.cost_flops(sizes))
    return Formula(figure["value"])(known)


def plain(number: float) -> str:
    """A tolerance as a prompt writes it: 1e-06 -> "1e-6", 0.001 -> "1e-3"."""
    mantissa, exponent = f"{number:e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def ids(spec: ExerciseSpec) -> str:
    return spec.slug


@pytest.mark.parametrize("spec", EXERCISES, ids=ids)
def test_every_exercise_lists_its_prompts_figures(spec: ExerciseSpec) -> None:
    assert figures_file(spec).is_file(), f"{spec.slug}: add prompt.figures.toml"
    for lang in LANGS:
        assert (spec.path / f"prompt.{lang}.md").is_file()


@pytest.mark.parametrize("spec", EXERCISES, ids=ids)
def test_each_stated_figure_is_its_cost_rounded_as_written(spec: ExerciseSpec) -> None:
    for figure in declared(spec):
        expected = value_of(spec, figure)
        for lang in LANGS:
            text = figure[lang]
            match = FIGURE.fullmatch(text)
            assert match, f"{spec.slug}: '{text}' is not a number and a unit we know"
            prompt = (spec.path / f"prompt.{lang}.md").read_text(encoding="utf-8")
            assert text in prompt, f"{spec.slug}: prompt.{lang}.md does not say '{text}'"
            in_unit = expected / UNITS[match["unit"]]
            digits = significant_figures(match["number"])
            rounded = round_significant(in_unit, digits)
            assert float(match["number"]) == pytest.approx(rounded, rel=1e-9), (
                f"{spec.slug} ({lang}): '{text}' but {figure['value']} at {figure['sizes']} is "
                f"{in_unit:.6g} {match['unit']}, {Decimal(repr(rounded)).normalize()} to "
                f"{digits} figures"
            )


@pytest.mark.parametrize("spec", EXERCISES, ids=ids)
def test_a_prompt_states_no_figure_that_is_not_checked(spec: ExerciseSpec) -> None:
    for lang in LANGS:
        listed = {figure[lang] for figure in declared(spec)}
        prompt = (spec.path / f"prompt.{lang}.md").read_text(encoding="utf-8")
        stated = {m[0] for m in FIGURE.finditer(prompt)}
        assert stated <= listed, (
            f"{spec.slug} prompt.{lang}.md: unchecked {sorted(stated - listed)}"
        )


@pytest.mark.parametrize("spec", EXERCISES, ids=ids)
def test_the_prompts_state_the_scoring_curve_and_tolerance(spec: ExerciseSpec) -> None:
    """The thresholds and tolerances a student is graded by, as exercise.toml sets them."""
    data = tomllib.loads((spec.path / "exercise.toml").read_text(encoding="utf-8"))
    for lang in LANGS:
        prompt = (spec.path / f"prompt.{lang}.md").read_text(encoding="utf-8")
        for device, curve in data["scoring"]["curve"].items():
            for key in ("full_at", "zero_at"):
                share = curve[key]
                shown = (
                    f"{share:g}x"
                    if curve["measure"] == "relative_to_reference"
                    else (f"{share * 100:g}%")
                )
                shown_zh = shown.replace("x", " 倍") if lang == "zh" else shown
                assert shown_zh in prompt, f"{spec.slug} {lang} {device}.{key}: '{shown_zh}'"
        for tolerance in data["tolerance"].values():
            for key in ("atol", "rtol", "small_rtol"):
                if key not in tolerance:
                    continue  # small_rtol is optional
                shown = plain(tolerance[key])
                assert shown in prompt, f"{spec.slug} {lang} {key}: '{shown}'"


@pytest.mark.parametrize("spec", EXERCISES, ids=ids)
def test_the_prompts_name_the_operators_the_exercise_forbids(spec: ExerciseSpec) -> None:
    """An exercise that asks students to write an operator themselves ([rules] forbid) says so
    in both languages: one paragraph names the operator and the performance points it costs."""
    data = tomllib.loads((spec.path / "exercise.toml").read_text(encoding="utf-8"))
    costs = {"en": "no performance points", "zh": "性能分"}
    for operator in data.get("rules", {}).get("forbid", []):
        for lang in LANGS:
            prompt = (spec.path / f"prompt.{lang}.md").read_text(encoding="utf-8")
            paragraphs = [" ".join(p.split()) for p in prompt.split("\n\n")]
            assert any(operator in p and costs[lang] in p for p in paragraphs), (
                f"{spec.slug} prompt.{lang}.md: say that running {operator} costs the "
                "performance points"
            )


def test_significant_figures_as_written() -> None:
    assert [significant_figures(n) for n in ("0.083", "1.0", "200", "171", "12.6", "0.64")] == [
        2, 2, 1, 3, 3, 2,
    ]  # fmt: skip
