"""The ladder every exercise must keep: naive version, samples, reference, on its scoring curve.

An exercise's performance points must separate the levels the lesson is about, on every
device it lists (issue 26, item 2):

* the naive version earns at most 25 % of the performance points;
* the reference earns at least 95 % of them, with a margin: its measure at least 10 % above
  ``full_at`` on an absolute curve, or a curve anchored on the reference timed in the same
  grading (``relative_to_reference`` with ``full_at <= 1 / 1.10``), whose ratio the load of the
  machine cancels out;
* each sample's score stays in its band of ``samples/expected.toml``.

:func:`curve_problems` checks what needs no timing (the curve's shape against the rule), so it
runs in quick mode; :func:`measured_ladder` reads the rungs off the gradings of a ``--perf``
validation and :func:`ladder_problems` judges them. Every function takes its figures as
arguments, so the decisions are tested with injected numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from graders.authoring.meta import SampleExpectation
from graders.spec.exercise import Curve, ExerciseSpec

NAIVE_MAX_SHARE = 0.25
REFERENCE_MIN_SHARE = 0.95
REFERENCE_MARGIN = 1.10  # the reference's measure over full_at, at least
# Measures that the reference or the naive version, timed call by call in the same grading,
# anchors: a busy machine slows both sides alike, so the ratio holds under load.
ANCHORED = ("relative_to_reference", "speedup_vs_naive")
# On a shared CPU worker an absolute figure (GB/s, FLOP/s) drops with the load on the other
# core; issue 26 measured 1.3 of 4 points lost that way. Only anchored measures score there.
ANCHORED_ONLY_DEVICES = ("cpu",)


class RungRecord(TypedDict):
    """One rung as measured by a validation: the figure on the curve's axis and its points."""

    name: str  # "naive", "reference" or "samples/<name>"
    verdict: str
    value: float | None
    points: float | None
    score: float


class LadderRecord(TypedDict):
    """What a --perf validation stores of the ladder (validation.json), and the site shows."""

    device: str
    measure: str
    full_at: float
    zero_at: float
    performance_points: float
    rungs: list[RungRecord]


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def curve_problems(spec: ExerciseSpec) -> list[str]:
    """The curve's shape against the rule, per device: what quick mode can check untimed."""
    problems: list[str] = []
    if spec.scoring.performance_points <= 0:
        return problems
    where = spec.path / "exercise.toml"
    for device, curve in sorted(spec.scoring.curves.items()):
        field = f"{where}: field 'scoring.curve.{device}"
        if device in ANCHORED_ONLY_DEVICES and curve.measure not in ANCHORED:
            problems.append(
                f"{field}.measure': ladder: {curve.measure!r} moves with the load on a shared "
                f"{device} worker; score with 'relative_to_reference' (the reference timed in "
                "the same grading) and keep the absolute figure as the report's roofline"
            )
        if curve.measure == "relative_to_reference":
            most = 1 / REFERENCE_MARGIN
            if curve.full_at > most + 1e-9:
                problems.append(
                    f"{field}.full_at': ladder: the reference measures about 1.0 against "
                    f"itself, and full_at = {curve.full_at:g} leaves it less than the "
                    f"{_percent(REFERENCE_MARGIN - 1)} margin; set full_at to {most:.2f} "
                    "or below"
                )
        if curve.measure == "speedup_vs_naive":
            # The naive version measures exactly 1.0 on this axis.
            share = _share(curve, 1.0)
            if share > NAIVE_MAX_SHARE:
                problems.append(
                    f"{field}.zero_at': ladder: the naive version measures 1.0 on "
                    f"speedup_vs_naive and earns {_percent(share)} of the performance points "
                    f"at zero_at = {curve.zero_at:g}; at most {_percent(NAIVE_MAX_SHARE)} is "
                    f"allowed: raise zero_at above {_zero_at_for(curve, 1.0):.2f}"
                )
    return problems


def _share(curve: Curve, value: float) -> float:
    """The share of the performance points that ``value`` earns on ``curve`` (0 to 1)."""
    return curve.points(value, 1.0) if curve.full_at > curve.zero_at else 0.0


def _zero_at_for(curve: Curve, naive_value: float) -> float:
    """The zero_at above which ``naive_value`` earns at most NAIVE_MAX_SHARE on ``curve``."""
    # (v - z) / (f - z) <= s  <=>  z >= (v - s f) / (1 - s)
    s = NAIVE_MAX_SHARE
    return (naive_value - s * curve.full_at) / (1 - s)


def _rung(name: str, report: Mapping[str, Any], curve: Curve, points: float) -> RungRecord:
    perf = report.get("performance") or {}
    value = perf.get("measure_value") if report.get("verdict") == "correct" else None
    return {
        "name": name,
        "verdict": str(report.get("verdict")),
        "value": value,
        # Points from the figure itself: a flag that zeroes a grading must not hide a rung.
        "points": curve.points(value, points) if value is not None else None,
        "score": float(report.get("score") or 0.0),
    }


def has_ladder(spec: ExerciseSpec, device: str) -> bool:
    """Whether performance points are scored on ``device``, so there is a ladder to keep."""
    return spec.scoring.performance_points > 0 and device in spec.scoring.curves


def measured_ladder(
    spec: ExerciseSpec, device: str, reports: Mapping[str, Mapping[str, Any]]
) -> LadderRecord | None:
    """The rungs as graded (reports by name: "reference", "naive", "samples/<name>")."""
    if not has_ladder(spec, device):
        return None
    curve = spec.scoring.curves[device]
    points = spec.scoring.performance_points
    order = ["naive", "reference", *sorted(n for n in reports if n.startswith("samples/"))]
    return {
        "device": device,
        "measure": curve.measure,
        "full_at": curve.full_at,
        "zero_at": curve.zero_at,
        "performance_points": points,
        "rungs": [_rung(name, reports[name], curve, points) for name in order if name in reports],
    }


def _naive_problem(ladder: LadderRecord, curve: Curve, naive: RungRecord) -> str | None:
    full = ladder["performance_points"]
    if naive["value"] is None or naive["points"] is None:
        return None  # not correct: the verdict check says so
    share = naive["points"] / full
    if share <= NAIVE_MAX_SHARE + 1e-9:
        return None
    return (
        f"ladder: the naive version earns {naive['points']:.1f} of {full:g} performance points "
        f"({_percent(share)}, {ladder['measure']} {naive['value']:.3g}); at most "
        f"{_percent(NAIVE_MAX_SHARE)} ({NAIVE_MAX_SHARE * full:.1f}) is allowed: raise zero_at "
        f"above {_zero_at_for(curve, naive['value']):.2f} or make the naive version slower"
    )


def _reference_problem(ladder: LadderRecord, curve: Curve, ref: RungRecord) -> str | None:
    full = ladder["performance_points"]
    if ref["value"] is None or ref["points"] is None:
        return None
    measure, value = ladder["measure"], ref["value"]
    if measure == "relative_to_reference":
        # Anchored: the margin is the static full_at <= 1/1.10; the figure must still earn.
        share = ref["points"] / full
        if share + 1e-9 >= REFERENCE_MIN_SHARE:
            return None
        return (
            f"ladder: the reference earns {ref['points']:.1f} of {full:g} performance points "
            f"({_percent(share)}, {measure} {value:.3g} against itself); at least "
            f"{_percent(REFERENCE_MIN_SHARE)} ({REFERENCE_MIN_SHARE * full:.1f}) is required: "
            f"lower full_at to {min(value, 1.0) / REFERENCE_MARGIN:.2f} or below"
        )
    needed = REFERENCE_MARGIN * curve.full_at
    if value + 1e-12 >= needed:
        return None
    return (
        f"ladder: the reference measures {value:.3g} on {measure}, "
        f"{_percent(1 - value / needed)} short of {REFERENCE_MARGIN:.2f} x full_at = "
        f"{needed:.3g}: lower full_at to {value / REFERENCE_MARGIN:.3g} or below, or anchor "
        "the curve on the reference (relative_to_reference)"
    )


def _band_problem(ladder: LadderRecord, rung: RungRecord, want: SampleExpectation) -> str | None:
    score = rung["score"]
    if want.low - 1e-9 <= score <= want.high + 1e-9:
        return None
    side, by = ("below", want.low - score) if score < want.low else ("above", score - want.high)
    figure = (
        f" ({ladder['measure']} {rung['value']:.3g}, {rung['points']:.1f} of "
        f"{ladder['performance_points']:g} performance points)"
        if rung["value"] is not None and rung["points"] is not None
        else ""
    )
    return (
        f"ladder: sample {want.where!r} scores {score:g}, {by:.2g} {side} its band "
        f"[{want.low:g}, {want.high:g}] in samples/expected.toml{figure}: move the band or the "
        "curve"
    )


def noise_problem(ladder: LadderRecord) -> str | None:
    """Why this run's rungs cannot be judged, if the reference says so.

    The reference graded as a submission is timed against itself in the same rounds: on an
    anchored axis it must measure 1.0. Seen on the shared 2-core machine while others ran
    their tests (docs/BENCHMARKS.md, "The ladder"): 0.72 and 0.90 of itself. A run that far
    off judges no rung, in either direction; it says so and asks for another run.
    """
    if ladder["measure"] != "relative_to_reference":
        return None
    ref = next((r for r in ladder["rungs"] if r["name"] == "reference"), None)
    value = ref["value"] if ref is not None else None
    if value is None or 1 / REFERENCE_MARGIN <= value <= REFERENCE_MARGIN:
        return None
    return (
        f"ladder: not judged: the reference measured {value:.3g} against itself (1.0 within "
        f"{_percent(REFERENCE_MARGIN - 1)} expected), so this machine was too busy for the "
        "figures to mean anything; validate --perf again when it is quiet"
    )


def ladder_problems(
    spec: ExerciseSpec, ladder: LadderRecord, expectations: list[SampleExpectation]
) -> list[str]:
    """Every rung that fails, each saying which and by how much; [] when the ladder holds.

    A run too noisy to judge (:func:`noise_problem`) gives that one problem instead.
    """
    noisy = noise_problem(ladder)
    if noisy is not None:
        return [noisy]
    curve = Curve(ladder["measure"], ladder["full_at"], ladder["zero_at"])
    rungs = {rung["name"]: rung for rung in ladder["rungs"]}
    problems: list[str] = []
    if "naive" in rungs:
        problems.append(_naive_problem(ladder, curve, rungs["naive"]) or "")
    if "reference" in rungs:
        problems.append(_reference_problem(ladder, curve, rungs["reference"]) or "")
    for sample in expectations:
        rung = rungs.get(f"samples/{sample.name}")
        want = sample.for_device(ladder["device"])
        # A wrong verdict is the verdict check's to report; the band is about the score.
        if rung is not None and rung["verdict"] == want.verdict:
            problems.append(_band_problem(ladder, rung, want) or "")
    return [p for p in problems if p]
