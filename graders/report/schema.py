"""``report.schema.json``: generated from the report's types, and a small validator for it.

``python -m graders.report.schema`` rewrites the file from :mod:`graders.report.types`; a test
checks that the committed file equals what the types generate. The validator covers the subset
of JSON Schema the generated file uses (type, enum, required, properties, items,
additionalProperties, minimum), so checking a report needs no dependency.

Reports stored before a field existed still validate: :func:`upgrade` fills what they lack.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from graders.report import types as report_types
from graders.report.types import Minimum, Report

SCHEMA_PATH = Path(__file__).resolve().parent / "report.schema.json"
_JSON_TYPES: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _schema_for(hint: Any) -> dict[str, Any]:
    """The JSON Schema node for one type hint of report_types."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *extras = get_args(hint)
        node = _schema_for(base)
        for extra in extras:
            if isinstance(extra, Minimum):
                node["minimum"] = extra.value
        return node
    if origin is NotRequired:
        return _schema_for(get_args(hint)[0])
    if origin in (Union, types.UnionType):
        return _union(get_args(hint))
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if origin is list:
        return {"type": "array", "items": _schema_for(get_args(hint)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_for(get_args(hint)[1])}
    if is_typeddict(hint):
        return _object(hint)
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _union(members: tuple[Any, ...]) -> dict[str, Any]:
    literals = [m for m in members if get_origin(m) is Literal]
    if literals:
        # A Literal or None: one enum (null joins it), as JSON Schema readers expect.
        others = [m for m in members if get_origin(m) is not Literal]
        if any(m is not type(None) for m in others):
            raise TypeError(f"a Literal may only be joined with None: {members!r}")
        return {"enum": [v for m in literals for v in get_args(m)] + [None] * len(others)}
    merged: dict[str, Any] = {}
    kinds: list[str] = []
    for node in (_schema_for(member) for member in members):
        kind = node.pop("type")
        kinds += [name for name in ([kind] if isinstance(kind, str) else kind) if name not in kinds]
        merged.update(node)
    return {"type": kinds if len(kinds) > 1 else kinds[0], **merged}


def _object(typed: type) -> dict[str, Any]:
    hints = get_type_hints(typed, include_extras=True)
    required = [name for name in hints if name in typed.__required_keys__]  # type: ignore[attr-defined]  # TypedDict classes have it; type does not declare it
    return {
        "type": "object",
        "required": required,
        "properties": {name: _schema_for(hint) for name, hint in hints.items()},
    }


def generate() -> dict[str, Any]:
    """The whole schema, from report_types.Report."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gpu-courseware.example/graders/report/report.schema.json",
        "title": "Grading report",
        "description": "Generated from graders/report/types.py by python -m graders.report.schema",
        **_object(report_types.Report),
    }


def render() -> str:
    return json.dumps(generate(), indent=2, ensure_ascii=False) + "\n"


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


def _is(instance: Any, kind: str) -> bool:
    # bool is an int to Python, never a number to JSON.
    if kind in ("integer", "number") and isinstance(instance, bool):
        return False
    return isinstance(instance, _TYPES[kind])


def validate(instance: Any, node: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """Errors (empty when valid) for the subset of JSON Schema the schema uses."""
    node = schema() if node is None else node
    errors: list[str] = []
    kinds = node.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(instance, kind) for kind in kinds):
            return [f"{path}: expected {kinds}, got {type(instance).__name__}"]
    if "enum" in node and instance not in node["enum"]:
        errors.append(f"{path}: {instance!r} not in {node['enum']}")
    if "minimum" in node and _is(instance, "number") and instance < node["minimum"]:
        errors.append(f"{path}: {instance} < minimum {node['minimum']}")
    if isinstance(instance, dict):
        errors += _validate_object(instance, node, path)
    if isinstance(instance, list) and "items" in node:
        for index, item in enumerate(instance):
            errors += validate(item, node["items"], f"{path}[{index}]")
    return errors


def _validate_object(instance: dict[str, Any], node: dict[str, Any], path: str) -> list[str]:
    errors = [
        f"{path}: missing required key {key!r}"
        for key in node.get("required", [])
        if key not in instance
    ]
    properties = node.get("properties", {})
    for key, sub in properties.items():
        if key in instance:
            errors += validate(instance[key], sub, f"{path}.{key}")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in instance.items():
            if key not in properties:
                errors += validate(value, extra, f"{path}.{key}")
    return errors


# Reports stored by earlier versions lack these keys; they meant "not measured".
_ENVELOPE_DEFAULTS: dict[str, Any] = {
    "exercise_hash": None,
    "message": None,
    "flags": [],
    "correctness": None,
    "performance": None,
    "peak": None,
    "profile": None,
    "stderr": None,
    "stdout": None,
    "traceback": None,
}
_TIMING_KEYS = ("sandbox_start_s", "setup_s", "check_s", "timing_s", "total_s")
_PERFORMANCE_DEFAULTS: dict[str, Any] = {
    "sizes": {},
    "fraction_of_peak_flops": None,
    "reference_median_s": None,
    "naive_median_s": None,
    "disturbed_runs": None,
    "claimed_s": None,
    "observed_s": None,
}


def upgrade(stored: Mapping[str, Any], *, exercise: str = "", max_score: float = 0.0) -> Report:
    """A stored report in today's shape: every key the types require, old values kept.

    The site stores reports as JSON and never rewrites them; it reads them through this so a
    report graded a year ago renders like one graded today. ``exercise``/``max_score`` fill
    the two identity fields an early grader-failure record did not carry.
    """
    report: dict[str, Any] = {**_ENVELOPE_DEFAULTS, **stored}
    report.setdefault("exercise", exercise)
    report.setdefault("verdict", None)
    report.setdefault("gradable", report["verdict"] not in (None, "rejected"))
    report.setdefault("score", 0.0)
    report.setdefault("max_score", max_score)
    device = stored.get("device")
    report["device"] = {"kind": "cpu", "name": None, **(device if isinstance(device, dict) else {})}
    timings = stored.get("timings")
    report["timings"] = {
        **dict.fromkeys(_TIMING_KEYS),
        **(timings if isinstance(timings, dict) else {}),
    }
    for name in [k for k, v in report["timings"].items() if isinstance(v, str)]:
        # Early reports kept a companion's failure among the timings.
        report.setdefault("companion_errors", {})[name.removesuffix("_error")] = report[
            "timings"
        ].pop(name)
    performance = stored.get("performance")
    if isinstance(performance, dict):
        report["performance"] = {**_PERFORMANCE_DEFAULTS, **performance}
    return cast(Report, report)


def main() -> int:
    """Rewrite report.schema.json from the types (run after changing report_types.py)."""
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
