"""``[rules] forbid``: the operators an exercise asks the student to write themselves.

The check reads what the submission's call actually ran, not its source text: one untimed
call under torch.profiler inside the sandbox (the harness's ``operators`` message) on the
largest check size, after the timed phase, so that the timed calls' spot checks still catch
an answer replayed from a cache. Matching is on operator names, so
an alias (``getattr(torch, "soft" + "max")``, ``torch.ops.aten._softmax``, ``F.softmax``)
is caught like the plain call. A finding keeps the correctness points and gives no
performance points; the figures stay in the report, for the student to compare.

This is a teaching rule, not a security boundary: the sandbox writes the list, so code
determined to hide an operator from the profiler can. The list is still checked as the
untrusted input it is before a name of it is believed.

How a name matches: the operator's namespace is dropped (``aten::``, ``mkldnn::``), then
leading underscores; the forbidden name's words (split at ``_``) must appear in the
operator's words in order. So ``softmax`` matches ``aten::softmax``, ``aten::_softmax`` and
``aten::log_softmax``; ``layer_norm`` matches ``aten::native_layer_norm``;
``scaled_dot_product_attention`` matches
``aten::_scaled_dot_product_flash_attention_for_cpu``. Only names with a namespace count: a
student's own ``record_function("my_softmax")`` range is not an operator.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from graders.grading.phases import Grader, Outcome, Run
from graders.spec.layouts import input_layout

MAX_NAMES = 5000  # also the protocol's cap (graders/sandbox/protocol.py)
MAX_NAME_CHARS = 200
_CHECK_S = 60.0  # the profiled call's budget, at most; setup_s when that is shorter


@dataclass(frozen=True)
class Finding:
    """What a submission ran that its exercise forbids: (rule, operator) pairs, in order."""

    matches: tuple[tuple[str, str], ...]

    @property
    def rules(self) -> list[str]:
        return sorted({rule for rule, _ in self.matches})

    @property
    def operators(self) -> list[str]:
        return sorted({operator for _, operator in self.matches})

    def message(self) -> str:
        rule, operator = self.matches[0]
        return (
            f"Your result is correct, so the correctness points count, but your code ran "
            f"{operator}, the library's {rule}, which this exercise asks you to write yourself "
            f"([rules] forbid = {rule!r}). It gets no performance points: write {rule} from "
            "simpler operations and resubmit."
        )


def operator_names(raw: object) -> list[str]:
    """The sandbox's list of operator names, checked; ValueError saying what is wrong."""
    if not isinstance(raw, list):
        raise ValueError("the operator list is not a list")
    if len(raw) > MAX_NAMES:
        raise ValueError(f"the operator list holds {len(raw)} names, more than {MAX_NAMES}")
    names = []
    for name in raw:
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise ValueError(f"{str(name)[:40]!r} is not an operator name")
        names.append(name)
    return names


def _words(name: str) -> list[str]:
    return [word for word in name.lstrip("_").split("_") if word]


def _contains_in_order(words: list[str], wanted: list[str]) -> bool:
    remaining = iter(words)
    return all(any(word == want for word in remaining) for want in wanted)


def matches(forbid: tuple[str, ...], names: list[str]) -> Finding | None:
    """The forbidden operators among ``names`` (profiler keys such as ``aten::_softmax``)."""
    found = []
    for name in names:
        namespace, sep, operator = name.partition("::")
        if not sep or not namespace or not operator:
            continue  # a record_function range, or a Python frame: not an operator
        words = _words(operator.split(".")[0])
        for rule in forbid:
            if _contains_in_order(words, _words(rule)):
                found.append((rule, name))
    return Finding(tuple(found)) if found else None


def check(grader: Grader, run: Run) -> Finding | None:
    """Run one untimed call of the loaded submission on the largest check size under the
    profiler, and match what it ran against the exercise's ``forbid``. Raises the phases'
    Outcome for what the submission did wrong (it raised, hung, or sent a malformed list)."""
    spec = grader.spec
    if not spec.forbid:
        return None
    # The largest check size, not the timed one: the profiler keeps a record of every operator
    # call, and a correct row-by-row loop at the timed size made it outgrow the sandbox's
    # memory (softmax, 1 GiB: hostile case work_after_check/watch_padding_faults.py).
    sizes = max(spec.sizes[grader.device].check, key=lambda size: spec.cost_bytes(size))
    layout = input_layout(spec, sizes)
    grader.arena.fill(layout, secrets.randbits(63))
    run.deadline = time.monotonic() + min(_CHECK_S, spec.limits.setup_s)
    where = "in the call profiled for the exercise's forbidden operators"
    grader.place_inputs(run, layout, where)
    grader.thaw(run, where)
    run.session.send("operators", inputs=grader.arena.placements(layout))
    raw = grader.receive(run, ("operators",), where, "setup_s")["names"]
    grader.pause(run, where)
    try:
        names = operator_names(raw)
    except ValueError as exc:
        raise Outcome(
            "error",
            f"The sandbox sent the grader a malformed list of operators ({exc}). Do not patch "
            "the grader's harness or its profiler; return your result from your function.",
        ) from None
    return matches(spec.forbid, names)
