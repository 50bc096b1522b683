"""The input layout of one correctness or timed call: what the harness allocates and fills.

A layout is a list of plain dicts (the form that crosses the pipe to the harness and that
:func:`graders.harness.inputs.fill_` reads): ``name``, ``shape`` (concrete), ``dtype``,
``dist``, ``scale``, plus ``spread`` or ``shift`` when a check case sets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graders.spec.exercise import CheckCase, ExerciseSpec


def input_layout(
    spec: ExerciseSpec, sizes: Mapping[str, int], case: CheckCase | None = None
) -> list[dict[str, Any]]:
    """One dict per input of ``spec`` at ``sizes``, in call order, with ``case``'s
    per-input overrides (dist, scale, spread, shift) applied over the ``[inputs]`` ones.

    ``sizes`` is the caller's choice (for a case, usually ``case.sizes[device]``) so that
    the same function serves check sizes, the timed size and cases alike.
    """
    layout: list[dict[str, Any]] = []
    for item in spec.inputs:
        entry: dict[str, Any] = {
            "name": item.name,
            "shape": list(item.concrete_shape(sizes)),
            "dtype": item.dtype,
            "dist": item.dist,
            "scale": item.scale,
        }
        if case is not None:
            entry.update(case.overrides.get(item.name, {}))
        layout.append(entry)
    return layout
