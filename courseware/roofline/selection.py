"""What the query string asks the page to preselect, and a note for each part it cannot honour.

The report page links here with ``?device=<device name>&ai=<arithmetic intensity>`` and
optionally ``op=<operation key>``; ``roof=<compute roof key>`` picks the precision. A bad value
never fails the page: it falls back to a default and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.http import QueryDict
from django.utils.translation import gettext as _

from courseware.roofline.devices import AI_MAX, AI_MIN, ComputeRoof, Device
from courseware.roofline.operations import OPERATIONS_BY_KEY, Operation

DEFAULT_DEVICE = "A100"
DEFAULT_AI = 1.0
# Query values are echoed in the notes; a long one is cut so that the note stays readable.
ECHO_LIMIT = 60


@dataclass
class Selection:
    device: Device
    roof: ComputeRoof | None
    ai: float
    operation: Operation | None
    notes: list[str] = field(default_factory=list)


def _echo(value: str) -> str:
    return value if len(value) <= ECHO_LIMIT else value[:ECHO_LIMIT] + "…"


def _pick_device(asked: str, devices: list[Device], notes: list[str]) -> Device:
    default = next(d for d in devices if d.name == DEFAULT_DEVICE)
    if not asked:
        return default
    wanted = asked.casefold()
    # A measured device first: a report links with the name its worker recorded.
    for kind in ("measured", "datasheet"):
        for device in devices:
            if device.kind == kind and device.name.casefold() == wanted:
                return device
    # "NVIDIA A100-SXM4-80GB" with no measurement stored: its datasheet is the next best thing.
    for device in devices:
        if device.kind == "datasheet" and device.name.casefold() in wanted:
            notes.append(
                _(
                    "No measurement of “%(asked)s” is stored here; showing the datasheet "
                    "figures of the %(device)s instead."
                )
                % {"asked": _echo(asked), "device": device.name}
            )
            return device
    notes.append(
        _(
            "There is no device called “%(asked)s” here; showing the %(device)s. Choose one of "
            "the devices listed below."
        )
        % {"asked": _echo(asked), "device": default.name}
    )
    return default


def _pick_roof(asked: str, device: Device, notes: list[str]) -> ComputeRoof | None:
    if not device.roofs:
        return None
    for roof in device.roofs:
        if roof.key == asked:
            return roof
    if asked:
        notes.append(
            _("The %(device)s has no compute roof “%(asked)s”; showing %(roof)s.")
            % {"device": device.name, "asked": _echo(asked), "roof": device.roofs[0].label}
        )
    return device.roofs[0]


def _parse_ai(asked: str, notes: list[str]) -> float | None:
    if not asked:
        return None
    try:
        value = float(asked)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        notes.append(
            _(
                "The arithmetic intensity “%(asked)s” is not a number. Enter FLOPs per byte as "
                "a positive number, for example 1.25."
            )
            % {"asked": _echo(asked)}
        )
        return None
    if value <= 0:
        notes.append(
            _(
                "The arithmetic intensity must be greater than 0 FLOP/B, not %(asked)s. Enter a "
                "positive number, for example 1.25."
            )
            % {"asked": _echo(asked)}
        )
        return None
    clamped = min(max(value, AI_MIN), AI_MAX)
    if clamped != value:
        notes.append(
            _(
                "The page shows arithmetic intensities from %(low)s to %(high)s FLOP/B; "
                "%(asked)s is outside that range, so the nearest end is shown."
            )
            % {"low": f"{AI_MIN:g}", "high": f"{AI_MAX:g}", "asked": _echo(asked)}
        )
    return clamped


def _pick_operation(asked: str, notes: list[str]) -> Operation | None:
    if not asked:
        return None
    operation = OPERATIONS_BY_KEY.get(asked)
    if operation is None:
        notes.append(
            _("There is no operation “%(asked)s” here; choose one from the list.")
            % {"asked": _echo(asked)}
        )
    return operation


def selection_from_query(query: QueryDict, devices: list[Device]) -> Selection:
    """The page's starting state. An explicit ``ai`` wins over the operation's own intensity:
    a report's link carries the student's kernel, and the operation stays as a reference."""
    notes: list[str] = []
    device = _pick_device(query.get("device", "").strip(), devices, notes)
    roof = _pick_roof(query.get("roof", "").strip(), device, notes)
    ai = _parse_ai(query.get("ai", "").strip(), notes)
    operation = _pick_operation(query.get("op", "").strip(), notes)
    if ai is None:
        ai = operation.ai if operation else DEFAULT_AI
    return Selection(device=device, roof=roof, ai=ai, operation=operation, notes=notes)
