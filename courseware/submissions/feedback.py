"""Feedback that teaches: what the report's own figures say, and the next step to take.

Built only from a stored report (its verdict, correctness figures, timings, profile and byte
count), so it reads a report of any age the same way. It never touches the score: it is advice
beside the grade, and a function of the report alone (plus whether the code is the exercise's
own naive version, which only the page can tell).

The next step depends on where the submission stands:

- ``fast``: near the roof, or as fast as the reference: what is left is to move fewer bytes;
- ``slow``: faster than the naive version yet far from the roof: merge the remaining passes;
- ``naive_like``: as fast as the naive version: it makes the same passes over memory;
- ``slower_than_naive``: something added costs time (a float64 detour, a copy, a loop);
- ``naive_itself``: the exercise's naive version unchanged: the baseline, not an answer;
- ``wrong`` / ``error`` / ``timeout`` / ``rejected``: what to check before any speed matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from courseware.submissions import readable_units as units

# Near the roof: beyond this fraction of it, the only gain left is fewer bytes or FLOPs.
NEAR_ROOF = 0.6
# As fast as the reference, within timing noise and a little more.
ON_PAR_WITH_REFERENCE = 0.85
# Within this factor of the naive version's time, it is "as fast as naive".
NAIVE_BAND = 1.15
# An operator below this share of the profiled time forwards to others (aten::to, linear...).
WORK_SHARE = 0.02
# Operators that only allocate or re-view memory: no pass over the data, no kernel of note.
_BOOKKEEPING = frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::as_strided",
        "aten::view",
        "aten::reshape",
        "aten::_reshape_alias",
        "aten::_unsafe_view",
        "aten::transpose",
        "aten::t",
        "aten::expand",
        "aten::permute",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::select",
        "aten::slice",
        "aten::detach",
        "aten::alias",
        "aten::resize_",
        "aten::lift_fresh",
        "aten::result_type",
    }
)


@dataclass(frozen=True)
class WorkOperator:
    name: str
    calls: int
    self_time_s: float
    share: float  # of the profiled self time


@dataclass
class Feedback:
    kind: str
    findings: list[str] = field(default_factory=list)  # what the figures say, with the figures
    next_step: str = ""


def work_operators(profile: list[Mapping[str, Any]] | None) -> list[WorkOperator]:
    """The profiled operators that did the work: no bookkeeping, no thin forwarding wrappers."""
    rows = [row for row in profile or [] if isinstance(row, Mapping)]
    total = sum(float(row.get("self_time_s") or 0) for row in rows)
    if total <= 0:
        return []
    found = []
    for row in rows:
        name, seconds = str(row.get("name", "")), float(row.get("self_time_s") or 0)
        if name in _BOOKKEEPING or seconds / total < WORK_SHARE:
            continue
        found.append(WorkOperator(name, int(row.get("calls") or 0), seconds, seconds / total))
    return sorted(found, key=lambda op: op.self_time_s, reverse=True)


def feedback_for(report: Mapping[str, Any], *, is_naive_source: bool = False) -> Feedback | None:
    """Feedback for a code exercise's report; None for a notebook or a grader failure."""
    if report.get("cells") or report.get("kind") == "notebook":
        return None
    verdict = report.get("verdict")
    if verdict == "correct":
        return _correct(report, is_naive_source=is_naive_source)
    if verdict == "wrong":
        return _wrong(report)
    if verdict == "error":
        return Feedback(
            "error",
            [report["message"]] if report.get("message") else [],
            _(
                "Next step: run your function on your own machine with the sizes named above "
                "and fix the line the traceback points to; a result that raises earns nothing "
                "until it runs."
            ),
        )
    if verdict == "timeout":
        return Feedback(
            "timeout",
            [report["message"]] if report.get("message") else [],
            _(
                "Next step: look for a Python loop over elements or rows: each iteration costs "
                "microseconds, so millions of them miss any time limit. Let one tensor "
                "operation do the whole loop."
            ),
        )
    if verdict == "rejected":
        return Feedback(
            "rejected",
            [report["message"]] if report.get("message") else [],
            _("Next step: fix what the message names and submit again; it cost you nothing."),
        )
    return None


def _wrong(report: Mapping[str, Any]) -> Feedback:
    correctness = report.get("correctness") or {}
    findings: list[str] = []
    fraction = correctness.get("mismatch_fraction")
    first = correctness.get("first_mismatch")
    index = (
        ", ".join(str(i) for i in first.get("index") or []) if isinstance(first, Mapping) else ""
    )
    if isinstance(fraction, int | float):
        findings.append(
            _("%(share)s of the output values were outside the tolerance.")
            % {"share": units.percent(fraction)}
        )
    if isinstance(first, Mapping):
        got, expected = _distinct(first.get("got"), first.get("expected"))
        findings.append(
            _(
                "The first wrong value is at index (%(index)s): you returned %(got)s, the "
                "reference %(expected)s."
            )
            % {"index": index, "got": got, "expected": expected}
        )
    abs_err, rel_err = correctness.get("max_abs_err"), correctness.get("max_rel_err")
    if isinstance(abs_err, int | float):
        findings.append(
            _("The largest error is %(abs)s (relative: %(rel)s).")
            % {"abs": _number(abs_err), "rel": _number(rel_err)}
        )
    if isinstance(first, Mapping) and _not_finite(first.get("got")):
        step = _(
            "Next step: your code returned %(value)s where the reference has a number: look "
            "for a division by zero, the square root or logarithm of a negative number, or "
            "exp of a large value (subtract the maximum first); print the intermediate values "
            "for one small input."
        ) % {"value": first.get("got")}
    elif isinstance(fraction, int | float) and fraction < 0.5:
        step = _(
            "Next step: most values are right, so the formula is; check the edges: the last "
            "partial block of an odd size, the first and last row, a size of 0 or 1. Index "
            "%(index)s is where to start."
        ) % {"index": f"({index})" if index else "—"}
    elif isinstance(rel_err, int | float) and rel_err < 1e-2:
        step = _(
            "Next step: the values are close but not within the tolerance: an approximate "
            "formula (such as the tanh form of GELU) or a lower precision (float16, bfloat16) "
            "gives that. Compute in float32 with the exact formula the prompt gives."
        )
    else:
        step = _(
            "Next step: nearly every value is wrong, so check the formula and the layout: the "
            "axis of each reduction, a transposed dimension, broadcasting of a (rows, 1) "
            "tensor. Compare with the reference on the smallest size by hand."
        )
    return Feedback("wrong", findings, step)


def _distinct(got: Any, expected: Any) -> tuple[str, str]:
    """Both values with enough digits to tell them apart (1.9003 and 1.9001, not 1.90 twice)."""
    for digits in range(3, 9):
        pair = _number(got, digits), _number(expected, digits)
        if pair[0] != pair[1]:
            break
    return pair


def _not_finite(value: Any) -> bool:
    # Stored reports write NaN and infinity as text ("nan", "inf", "-inf").
    return isinstance(value, str) and value.lstrip("-").lower() in ("nan", "inf", "infinity")


def _number(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return units.significant(float(value), digits)


def _correct(report: Mapping[str, Any], *, is_naive_source: bool) -> Feedback:
    perf = report.get("performance")
    if not isinstance(perf, Mapping) or not perf.get("median_s"):
        return Feedback(
            "untimed",
            [],
            _(
                "Next step: your result is correct; it was not timed, so there is no speed to "
                "improve yet. Read the prompt's performance section for what is measured."
            ),
        )
    findings = _speed_findings(perf)
    operators = work_operators(report.get("profile"))
    findings += _profile_findings(operators, perf)
    if report.get("flags"):
        findings.append(
            _("The timing could not be trusted (%(flags)s), so it earned no performance points.")
            % {"flags": ", ".join(str(flag) for flag in report["flags"])}
        )
    kind = _correct_kind(perf, is_naive_source=is_naive_source)
    return Feedback(kind, findings, _next_step(kind, perf, operators))


def _correct_kind(perf: Mapping[str, Any], *, is_naive_source: bool) -> str:
    roofline = perf.get("fraction_of_roofline") or 0.0
    reference = perf.get("relative_to_reference")
    naive = perf.get("speedup_vs_naive")
    if is_naive_source:
        return "naive_itself"
    if roofline >= NEAR_ROOF or (reference is not None and reference >= ON_PAR_WITH_REFERENCE):
        return "fast"
    if naive is not None and naive < 1 / NAIVE_BAND:
        return "slower_than_naive"
    if naive is not None and naive <= NAIVE_BAND:
        return "naive_like"
    return "slow"


def _speed_findings(perf: Mapping[str, Any]) -> list[str]:
    findings = []
    if perf.get("roof") == "compute" and perf.get("fraction_of_peak_flops") is not None:
        findings.append(
            _(
                "One call took %(time)s and reached %(flops)s: %(share)s of the measured compute "
                "peak. The exercise is bound by compute on this device."
            )
            % {
                "time": units.duration(perf["median_s"]),
                "flops": units.si(perf.get("achieved_flops_per_s"), "FLOP/s"),
                "share": units.percent(perf["fraction_of_peak_flops"]),
            }
        )
    elif perf.get("achieved_gbps") is not None:
        findings.append(
            _(
                "One call took %(time)s and moved the %(bytes)s the exercise needs at "
                "%(gbps)s: %(share)s of the measured peak bandwidth (%(peak)s). The exercise "
                "is bound by memory on this device."
            )
            % {
                "time": units.duration(perf["median_s"]),
                "bytes": units.data_size(perf.get("bytes")),
                "gbps": units.bandwidth(perf["achieved_gbps"]),
                "share": units.percent(perf.get("fraction_of_peak")),
                "peak": units.bandwidth(perf.get("peak_gbps")),
            }
        )
    ratios = []
    if perf.get("speedup_vs_naive") is not None:
        ratios.append(
            _("%(ratio)s the naive version's speed")
            % {"ratio": units.ratio(perf["speedup_vs_naive"])}
        )
    if perf.get("relative_to_reference") is not None:
        ratios.append(
            _("%(ratio)s the reference's speed")
            % {"ratio": units.ratio(perf["relative_to_reference"])}
        )
    if ratios:
        findings.append(_("That is %(ratios)s.") % {"ratios": _(" and ").join(ratios)})
    return findings


def passes_over_memory(perf: Mapping[str, Any]) -> float | None:
    """How many times the exercise's bytes the memory could have moved in one call's time.

    A memory-bound call at the peak bandwidth moves its bytes once; a call ten times slower
    behaves as if it made ten passes over the data (intermediates written and read back).
    """
    nbytes, seconds, peak = perf.get("bytes"), perf.get("median_s"), perf.get("peak_gbps")
    if perf.get("roof") != "memory" or not (nbytes and seconds and peak):
        return None
    return float(seconds) * float(peak) * 1e9 / float(nbytes)


def _profile_findings(operators: list[WorkOperator], perf: Mapping[str, Any]) -> list[str]:
    findings = []
    if operators:
        calls = sum(op.calls for op in operators)
        listed = ", ".join(f"{op.name} ×{op.calls}" for op in operators[:4])
        top = operators[0]
        findings.append(
            ngettext(
                "Your code ran %(calls)d operator call that did the work (%(listed)s); it "
                "took %(time)s of self time (%(share)s).",
                "Your code ran %(calls)d operator calls that did the work (%(listed)s); the "
                "largest, %(top)s, took %(time)s of self time (%(share)s).",
                calls,
            )
            % {
                "calls": calls,
                "listed": listed,
                "top": top.name,
                "time": units.duration(top.self_time_s),
                "share": units.percent(top.share),
            }
        )
    passes = passes_over_memory(perf)
    if passes is not None and passes >= 1.5:
        findings.append(
            _(
                "In %(time)s the memory could have moved %(could)s; a single fused pass moves "
                "%(bytes)s, so your call takes as long as %(passes)s passes over the data."
            )
            % {
                "time": units.duration(perf["median_s"]),
                "could": units.data_size(passes * float(perf["bytes"])),
                "bytes": units.data_size(perf["bytes"]),
                "passes": units.significant(passes, 2),
            }
        )
    return findings


def _next_step(kind: str, perf: Mapping[str, Any], operators: list[WorkOperator]) -> str:
    top = operators[0].name if operators else _("the largest operator")
    calls = sum(op.calls for op in operators)
    if kind == "fast":
        if (perf.get("fraction_of_roofline") or 0) >= NEAR_ROOF:
            if perf.get("roof") == "compute":
                return _(
                    "Next step: at %(share)s of the compute peak, only less arithmetic makes it "
                    "faster: skip work the result does not need, or use a lower precision "
                    "where the tolerance allows it."
                ) % {"share": units.percent(perf.get("fraction_of_roofline"))}
            return _(
                "Next step: at %(share)s of peak bandwidth, fewer passes over memory is the "
                "only way left to go faster: read each input once and write the output once."
            ) % {"share": units.percent(perf.get("fraction_of_roofline"))}
        return _(
            "Next step: you run as fast as the reference (%(ratio)s), so the library's own "
            "tricks are matched; the roof is still %(gap)s away. Find out what %(top)s spends "
            "its time on per byte, or try the exercise on a GPU, where the roof is reachable."
        ) % {
            "ratio": units.ratio(perf.get("relative_to_reference")),
            "gap": units.ratio(1 / perf["fraction_of_roofline"])
            if perf.get("fraction_of_roofline")
            else "—",
            "top": top,
        }
    if kind == "naive_itself":
        return _(
            "Next step: this is the exercise's naive version, unchanged: the baseline every "
            "speed-up is measured against, not an answer. Replace its %(calls)s separate "
            "operator calls by fewer passes (one fused operation, or the library call that "
            "does the whole computation) and submit again."
        ) % {"calls": calls or "—"}
    compute_bound = perf.get("roof") == "compute"
    if kind == "naive_like" and compute_bound:
        return _(
            "Next step: your code runs at the naive version's speed (%(ratio)s): it does the "
            "same arithmetic in the same pieces. Give the library fewer, larger operations "
            "(one batched call instead of %(calls)s small ones), so the core's vector units "
            "stay busy; %(top)s is where the time goes."
        ) % {"ratio": units.ratio(perf.get("speedup_vs_naive")), "calls": calls or "—", "top": top}
    if kind == "naive_like":
        return _(
            "Next step: your code runs at the naive version's speed (%(ratio)s), so it most "
            "likely makes the same passes over memory. Each of its %(calls)s operator calls "
            "writes a full-size intermediate; merge them, starting with %(top)s."
        ) % {"ratio": units.ratio(perf.get("speedup_vs_naive")), "calls": calls or "—", "top": top}
    if kind == "slower_than_naive":
        return _(
            "Next step: your code is slower than the naive version (%(ratio)s). Look for what "
            "you added: a float64 detour, a .contiguous() or .clone() copy, a Python loop. "
            "The profile's largest operator, %(top)s, is where to look first."
        ) % {"ratio": units.ratio(perf.get("speedup_vs_naive")), "top": top}
    if compute_bound:
        return _(
            "Next step: you beat the naive version (%(ratio)s) but reach %(share)s of the "
            "compute peak. Find which of the %(calls)s operator calls does not use the "
            "library's fast path (a small matrix, a strided view, float64) and reshape the "
            "work so it does."
        ) % {
            "ratio": units.ratio(perf.get("speedup_vs_naive")),
            "share": units.percent(perf.get("fraction_of_roofline")),
            "calls": calls or "—",
        }
    return _(
        "Next step: you beat the naive version (%(ratio)s) but reach %(share)s of the roof. "
        "Merge the remaining %(calls)s operator calls into fewer passes, so no intermediate "
        "goes out to memory and back."
    ) % {
        "ratio": units.ratio(perf.get("speedup_vs_naive")),
        "share": units.percent(perf.get("fraction_of_roofline")),
        "calls": calls or "—",
    }
