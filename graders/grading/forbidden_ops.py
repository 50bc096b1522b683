"""``[rules] forbid``: the operators an exercise asks the student to write themselves.

The rule holds in the calls that are scored. Before the submission is imported, the harness
wraps every operator whose name matches the exercise's patterns in PyTorch's dispatcher
(graders/harness/operator_watch.py): each call of one, in any call of the submission, timed
or not, at any size, from any thread, is counted, and the dispatcher then runs the library's
kernel as before. After the timed phase the engine asks for the counts (the ``operators``
message); no extra call is made. There is no profiled call for a submission to recognise and
behave in, no thread the watch does not see, and no size it skips: code that runs the
library's kernel only where it believes itself unobserved runs it where it is counted. What
the harness keeps is one counter per operator, so a loop of a million small operators costs
the watch nothing it has to store. An operator the exercise allows is not touched, so honest
code's timed calls cost what they did.

Matching is on what an operator computes, by name: the operator's namespace and overload are
dropped, then leading underscores; a pattern's words (split at ``_``) must appear among the
operator's words in order. The patterns are each ``forbid`` name and its ``[rules] routes``,
the library's other operators for the same math (softmax: ``logsumexp``; layernorm:
``group_norm``, ``batch_norm``, ...). So ``softmax`` matches ``aten::softmax``,
``aten::_softmax`` and ``aten::log_softmax``; ``batch_norm`` matches
``aten::_native_batch_norm_legit``; ``scaled_dot_product_attention`` matches
``aten::_scaled_dot_product_flash_attention_for_cpu``.

A finding keeps the correctness points and gives no performance points; the figures stay in
the report, for the student to compare. The counts come from the sandbox and are checked
before they are believed. When the watch could not be set (a torch without the dispatcher
API it needs) the grade stands and the report says the rule was not checked. When the
sandbox does not answer, answers out of schema, or the watch was unhooked, the grade cannot
be shown to follow the rule: the correctness points stand, the performance points do not.

This is a teaching rule, not a security boundary: the submission shares the harness's
process and could unregister the watch and restore it; what ``intact`` checks catches the
plain ways of removing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from graders.grading.phases import Grader, Outcome, Run
from graders.harness.operator_watch import name_matches, operator_name
from graders.sandbox.session import ChannelClosed
from graders.spec.exercise import ExerciseSpec

MAX_NAMES = 5000  # also the protocol's cap (graders/sandbox/protocol.py)
MAX_NAME_CHARS = 200
# The ``operators`` reply runs no student code: the harness only reads its counters.
_ANSWER_S = 20.0


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
            f"{operator}, which computes the library's {rule}, which this exercise asks you to "
            f"write yourself ([rules] forbid = {rule!r}). It gets no performance points: "
            f"write {rule} from simpler operations and resubmit."
        )


@dataclass(frozen=True)
class Unverified:
    """The watch's answer cannot be believed (no answer, out of schema, unhooked): what
    earns the performance points cannot be shown to follow the rule."""

    rules: tuple[str, ...]
    reason: str

    def message(self) -> str:
        return (
            "Your result is correct, so the correctness points count, but the grader could "
            f"not read which operators your code ran ({self.reason}), so it cannot show that "
            f"you wrote {', '.join(self.rules)} yourself, and gives no performance points. "
            "Do not patch PyTorch's dispatcher or the grader's harness; resubmit."
        )


@dataclass(frozen=True)
class Unwatched:
    """The watch could not be set in the sandbox: the grader's failure, not the student's.
    The grade stands; the report says the rule was not checked."""

    reason: str

    def note(self) -> str:
        return (
            "The grader could not watch which operators your code ran "
            f"({self.reason}), so this exercise's rule about writing the operator yourself "
            "was not checked; your grade does not depend on it."
        )


Result = Finding | Unverified | Unwatched | None


def watch_patterns(spec: ExerciseSpec) -> tuple[str, ...]:
    """The name patterns the harness wraps before the import: each forbid name and route."""
    return tuple(dict.fromkeys(pattern for _, pattern in spec.forbidden_patterns()))


def operator_calls(raw: object) -> dict[str, int]:
    """The sandbox's counts per operator, checked; ValueError saying what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError("the operator counts are not a table")
    if len(raw) > MAX_NAMES:
        raise ValueError(f"the operator counts hold {len(raw)} names, more than {MAX_NAMES}")
    calls = {}
    for name, count in raw.items():
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise ValueError(f"{str(name)[:40]!r} is not an operator name")
        if type(count) is not int or count < 1:
            raise ValueError(f"{name[:40]!r} has a count of {str(count)[:20]!r}")
        calls[name] = count
    return calls


def matches(patterns: tuple[tuple[str, str], ...], names: list[str]) -> Finding | None:
    """The forbidden operators among ``names`` (``aten::_softmax``, with or without an
    overload), by (rule, pattern) pairs as ``ExerciseSpec.forbidden_patterns`` gives them."""
    found = []
    for name in names:
        operator = operator_name(name)
        if operator is None:
            continue  # a record_function range, or a Python frame: not an operator
        for rule, pattern in patterns:
            if name_matches(operator.partition("::")[2], pattern):
                found.append((rule, operator))
                break
    return Finding(tuple(found)) if found else None


def check(grader: Grader, run: Run) -> Result:
    """Ask the loaded submission's sandbox what the watch counted since the load, and match
    it against the exercise's rules. Never raises for what the sandbox did: a sandbox that
    does not answer or answers out of schema is ``Unverified``."""
    spec = grader.spec
    patterns = spec.forbidden_patterns()
    if not patterns:
        return None
    where = "while the grader read which operators your code ran"
    run.deadline = time.monotonic() + _ANSWER_S
    try:
        grader.thaw(run, where)
        run.session.send("operators")
        reply = grader.receive(run, ("operators",), where, "setup_s")
        grader.pause(run, where)
    except ChannelClosed:  # the request could not be written: the harness closed its end
        return Unverified(spec.forbid, "the sandbox closed the grader's channel")
    except Outcome as failure:
        if failure.verdict == "timeout":  # its budget's message would name another budget
            return Unverified(spec.forbid, f"the sandbox did not answer in {_ANSWER_S:g} s")
        return Unverified(spec.forbid, _first_sentence(failure.message))
    try:
        calls = operator_calls(reply["calls"])
    except ValueError as exc:
        return Unverified(spec.forbid, f"the sandbox sent a malformed list: {exc}")
    finding = matches(patterns, sorted(calls))
    if finding is not None:
        return finding  # whatever else is wrong with the watch, this operator ran
    if not reply["intact"]:
        return Unverified(spec.forbid, "the grader's watch on operators was unhooked")
    if not reply["wrapped"]:
        problems = "; ".join(reply["problems"]) or "no operator could be watched"
        return Unwatched(problems)
    return None


def _first_sentence(text: str | None) -> str:
    sentence = (text or "the sandbox did not answer").split(". ")[0].rstrip(".")
    return sentence[:300]
