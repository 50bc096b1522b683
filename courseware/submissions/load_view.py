"""What the report page says of how busy the machine was while the code was timed.

Built from the report's ``load`` block (graders/measure/load.py) in the reader's language, not
from the engine's English sentence: the canary's readings, the calls timed again, what was done,
and, for provisional points, when they will be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from courseware.submissions import provisional
from courseware.submissions.models import Grading


@dataclass(frozen=True)
class LoadRow:
    label: str
    value: str


@dataclass
class LoadView:
    provisional: bool
    # While true, another grading is on its way (tries remain); false once patience ran out.
    regrade_coming: bool
    action: str  # one sentence: what was done about the load
    rows: list[LoadRow] = field(default_factory=list)


def _percent(share: Any) -> str:
    return f"{float(share) * 100:.0f} %"


def _action_text(load: dict[str, Any]) -> str:
    action = load.get("action")
    if action == "ratio":
        return _(
            "The memory bus was shared while your code was timed. Your points come from your "
            "speed relative to the reference, timed in the same rounds on the same inputs, "
            "which the load slows alike: they stand."
        )
    if action == "provisional":
        return _(
            "The machine stayed busy while your code was timed, twice, so your performance "
            "points are provisional."
        )
    if action == "remeasured" and load.get("measured_twice"):
        return _(
            "The machine was busy during the first timing, so your code was timed again once "
            "it was quiet: these figures are from the second timing."
        )
    if action == "remeasured":
        return _("Calls that had to wait for their core were timed again; none was scored.")
    return _("Nothing disturbed the timing of your code.")


def load_view_for(report: dict[str, Any], grading: Grading | None) -> LoadView | None:
    load = report.get("load")
    if not isinstance(load, dict):
        return None
    is_provisional = bool(load.get("provisional"))
    rows = []
    shares = load.get("bus_canary") or []
    if shares:
        rows.append(
            LoadRow(
                _("Memory-bus canary"),
                _("%(shares)s of this machine's quiet bandwidth (before and after)")
                % {"shares": ", ".join(_percent(share) for share in shares)},
            )
        )
    else:
        rows.append(LoadRow(_("Memory-bus canary"), _("not read here (a GPU, or no reference)")))
    retaken = int(load.get("stalled_calls_retaken") or 0)
    kept = int(load.get("stalled_calls_kept") or 0)
    rows.append(
        LoadRow(
            _("Calls that waited for their core"),
            ngettext(
                "%(retaken)d timed again, %(kept)d scored anyway",
                "%(retaken)d timed again, %(kept)d scored anyway",
                retaken,
            )
            % {"retaken": retaken, "kept": kept},
        )
    )
    coming = False
    if is_provisional and grading is not None:
        coming = provisional.provisional_tries(grading.submission_id) <= provisional.TRIES
    return LoadView(is_provisional, coming, _action_text(load), rows)
