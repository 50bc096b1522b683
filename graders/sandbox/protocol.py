"""The schema of every message the sandbox may send, checked before any field is used.

Everything on the results pipe was written by a process the student controls. A message that
does not fit its schema is the student's ``error`` (``Malformed``), never an exception in the
trusted process: a grader failure costs the student nothing, so letting malformed input raise
would turn any failing attempt into a free retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.harness.inputs import DTYPES

_MAX_DIMS = 16
_MAX_INT = 1 << 62
MAX_CALLS_PER_WINDOW = 64  # calls timed in one window (CUDA, for short kernels)


class Malformed(Exception):
    """A message from the sandbox that breaks the protocol; the text names the field."""


Check = Callable[[Any], bool]


def _string(limit: int) -> Check:
    return lambda value: isinstance(value, str) and len(value) <= limit


def _integer(low: int, high: int = _MAX_INT) -> Check:
    return lambda value: type(value) is int and low <= value <= high


def _optional(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _int_list(low: int) -> Check:
    return lambda value: (
        isinstance(value, list) and len(value) <= _MAX_DIMS and all(_integer(low)(v) for v in value)
    )


_TEXT = _string(20_000)

# op -> {field: check}; a field not listed is refused, so nothing unexpected travels on.
SCHEMAS: dict[str, dict[str, Check]] = {
    "hello": {
        "torch": _string(100),
        "device_name": _string(300),
        "pid": _integer(1),
        "inputs_address": _integer(1),
        "pool_address": _integer(1),  # CUDA: where the device memory pool is mapped
    },
    "loaded": {},
    "rejected": {"reason": _string(500)},
    "exited": {"phase": _string(20), "code": _optional(_string(200))},
    "raised": {
        "phase": _string(20),
        "type": _string(200),
        "message": _TEXT,
        "line": _optional(_integer(0)),
        "code": _optional(_string(1000)),
        "traceback": _TEXT,
    },
    "done": {
        "ns": _integer(-_MAX_INT),
        "outs": lambda value: (
            isinstance(value, list)
            and 1 <= len(value) <= MAX_CALLS_PER_WINDOW
            and all(isinstance(out, dict) for out in value)
        ),
        # Triton kernels launched so far, and of those through @triton.autotune: counted by
        # the harness under Triton's interpreter (graders/harness/triton_interpreter.py).
        "triton_launches": _integer(0),
        "triton_autotuned": _integer(0),
    },
    "profiled": {"ops": lambda value: isinstance(value, list) and len(value) <= 100},
    "traced": {},
    "canary": {"best_s": lambda value: isinstance(value, float) and 0 < value < 60},
    # The operator watch's counts ([rules] forbid), checked name by name by
    # graders/grading/forbidden_ops.py; bounded here so that no reply is large.
    "operators": {
        "calls": lambda value: isinstance(value, dict) and len(value) <= 5000,
        "wrapped": _integer(0),
        "intact": lambda value: isinstance(value, bool),
        "problems": lambda value: (
            isinstance(value, list) and len(value) <= 5 and all(_string(300)(v) for v in value)
        ),
    },
}

_TENSOR_FIELDS: dict[str, Check] = {
    "type": lambda value: value == "Tensor",
    "shape": _int_list(0),
    "strides": _int_list(0),
    "dtype": lambda value: value in DTYPES,
    "device": lambda value: value in ("cpu", "cuda"),
    "address": _integer(0),
}


def validate(message: dict[str, Any], expect: tuple[str, ...]) -> dict[str, Any]:
    """``message`` if its op is one of ``expect`` (or a failure report) and it fits its schema."""
    op = message.get("op")
    allowed = (*expect, "raised", "exited", "rejected")
    if op not in allowed:
        raise Malformed(f"a {op!r} message arrived where {' or '.join(expect)} was expected")
    schema = SCHEMAS[str(op)]
    for name, value in message.items():
        if name == "op":
            continue
        check = schema.get(name)
        if check is None:
            raise Malformed(f"the {op} message has an unknown field `{name}`")
        if not check(value):
            raise Malformed(f"the {op} message has a bad `{name}`: {str(value)[:80]!r}")
    missing = [name for name in schema if name not in message and name not in _OPTIONAL]
    if missing:
        raise Malformed(f"the {op} message lacks `{missing[0]}`")
    if op == "done":
        for out in message["outs"]:
            _validate_output(out)
    return message


_OPTIONAL = {"line", "code", "pool_address", "triton_launches", "triton_autotuned"}


def _validate_output(out: dict[str, Any]) -> None:
    if out.get("type") != "Tensor":
        if set(out) != {"type"} or not _string(100)(out.get("type")):
            raise Malformed("the output description is not one the harness writes")
        return
    for name, check in _TENSOR_FIELDS.items():
        if name not in out or not check(out[name]):
            raise Malformed(f"the output description has a bad `{name}`")
    if set(out) != set(_TENSOR_FIELDS):
        raise Malformed("the output description has unknown fields")
    if len(out["shape"]) != len(out["strides"]):
        raise Malformed("the output's shape and strides differ in length")
