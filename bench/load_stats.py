"""The load benchmark's figures, from what the driver recorded and what the database says.

Pure functions on plain records: nothing here starts a process or opens a connection, so the
unit tests (tests/bench/test_load_driver.py) check the arithmetic without the stack.

Times are wall-clock seconds (``time.time()``) unless a name says otherwise: the driver, the
web workers and the grading workers run on the same machine, so the database's timestamps and
the driver's clock are one clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A submission in one of these has been dealt with by a worker; `failed` means the grader
# itself broke (the student may resubmit at no cost): not lost, but reported on its own.
FINISHED = frozenset({"graded", "needs_review", "failed"})
GRADED = frozenset({"graded", "needs_review"})


@dataclass(frozen=True)
class Sample:
    """One HTTP request: `group` is "api" or "page"; `status` 0 for a transport error."""

    label: str
    group: str
    seconds: float
    status: int

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 400


@dataclass
class Accepted:
    """A submission the API answered 201 for, as the student's client saw it."""

    id: int
    student: str
    sent_at: float
    accepted_at: float
    first_wave: bool  # the student's first submission of the run
    seen_finished_at: float | None = None  # the student's first poll that saw it finished
    status: str | None = None  # the last status the client read
    # After the students stopped, the drain watcher's first poll that saw it finished.
    watcher_seen_at: float | None = None

    @property
    def client_finished_at(self) -> float | None:
        return self.seen_finished_at or self.watcher_seen_at


@dataclass(frozen=True)
class DbRow:
    """A submission row as the database holds it at the end (the truth)."""

    id: int
    status: str
    created_at: float
    finished_at: float | None  # when its status last changed, once finished
    grading_s: float | None = None  # the worker's own time for its grading
    worker: str | None = None
    # The grading report's seconds per phase (sandbox_start_s, check_s, timing_s, ...).
    phases: dict[str, float] = field(default_factory=dict)
    companions_reused: int = 0  # companions whose remembered median the grading reused
    verdict: str | None = None  # its first grading's


def verdict_counts(db_rows: Mapping[int, DbRow] | None, ids: Iterable[int]) -> dict[str, int]:
    """How the run's gradings ended. The bench submits samples that are correct, so any
    other verdict is the grader failing an honest student."""
    counts: dict[str, int] = {}
    for i in ids:
        row = (db_rows or {}).get(i)
        if row is not None and row.verdict:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
    return dict(sorted(counts.items()))


@dataclass
class Outcome:
    accepted: int
    graded: int
    failed: int
    lost_ids: list[int]
    unseen_ids: list[int] = field(default_factory=list)  # rows the client never heard of

    @property
    def lost(self) -> int:
        return len(self.lost_ids)


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (NumPy's
    default), or None for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be between 0 and 100, not {q}")
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    lower, upper = math.floor(position), math.ceil(position)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def latency_summary(samples: Iterable[Sample]) -> dict[str, dict[str, Any]]:
    """p50/p99/max in ms and counts per group ("api", "page") and per "group label".

    Every request counts in the latency, errors included: a slow 500 is slow for the student
    too. A transport error (status 0) has no meaningful time and is only counted.
    """
    buckets: dict[str, list[Sample]] = {}
    for sample in samples:
        buckets.setdefault(sample.group, []).append(sample)
        buckets.setdefault(f"{sample.group} {sample.label}", []).append(sample)
    summary: dict[str, dict[str, Any]] = {}
    for name, items in sorted(buckets.items()):
        timed = [s.seconds * 1000 for s in items if s.status != 0]
        p50, p99 = percentile(timed, 50), percentile(timed, 99)
        summary[name] = {
            "count": len(items),
            "errors": sum(not s.ok for s in items),
            "p50_ms": p50,
            "p99_ms": p99,
            "max_ms": max(timed) if timed else None,
        }
    return summary


def outcome(
    accepted: Sequence[Accepted], db_rows: Mapping[int, DbRow] | None, exclude: Iterable[int] = ()
) -> Outcome:
    """What became of the accepted submissions, from the database when it could be read.

    Lost: accepted (a 201 came back) and not finished at the end, including a row the
    database no longer has. A row the client never got a 201 for (its answer timed out, say)
    must be graded too: it is listed as unseen and counts as lost while unfinished.
    """
    skip = set(exclude)
    if db_rows is None:
        statuses = {a.id: a.status for a in accepted}
    else:
        statuses = {a.id: (db_rows[a.id].status if a.id in db_rows else None) for a in accepted}
    client_ids = {a.id for a in accepted}
    unseen = [] if db_rows is None else sorted(set(db_rows) - client_ids - skip)
    for row_id in unseen:
        statuses[row_id] = db_rows[row_id].status if db_rows else None
    lost = sorted(i for i, status in statuses.items() if status not in FINISHED)
    return Outcome(
        accepted=len(accepted),
        graded=sum(status in GRADED for status in statuses.values()),
        failed=sum(status == "failed" for status in statuses.values()),
        lost_ids=lost,
        unseen_ids=unseen,
    )


def rate_per_s(accepted: Sequence[Accepted]) -> float | None:
    """Submissions accepted per second: their count over the span from the first one sent to
    the last one accepted. None for fewer than two (one request has no rate)."""
    if len(accepted) < 2:
        return None
    span = max(a.accepted_at for a in accepted) - min(a.sent_at for a in accepted)
    return len(accepted) / span if span > 0 else None


def finish_times(
    accepted: Sequence[Accepted], db_rows: Mapping[int, DbRow] | None
) -> dict[int, float]:
    """When each finished submission finished: the database's time, else the client's."""
    times: dict[int, float] = {}
    for a in accepted:
        row = db_rows.get(a.id) if db_rows else None
        if row is not None and row.status in FINISHED and row.finished_at is not None:
            times[a.id] = row.finished_at
        elif db_rows is None and a.client_finished_at is not None:
            times[a.id] = a.client_finished_at
    return times


def drain_s(accepted: Sequence[Accepted], finished: Mapping[int, float], lost: int) -> float | None:
    """From the last submission accepted to the last one finished; None if any was lost (the
    queue never drained) or nothing was accepted."""
    if lost or not accepted or not finished:
        return None
    return max(0.0, max(finished.values()) - max(a.accepted_at for a in accepted))


def gradings_per_minute_per_slot(
    accepted: Sequence[Accepted], finished: Mapping[int, float], slots: int
) -> float | None:
    """Finished gradings per minute per grading slot, from the first submission accepted to
    the last one finished (the slots were busy, or had work waiting, all that time)."""
    if not finished or slots < 1:
        return None
    span = max(finished.values()) - min(a.accepted_at for a in accepted)
    return len(finished) / (span / 60) / slots if span > 0 else None


def submit_to_graded(
    accepted: Sequence[Accepted], db_rows: Mapping[int, DbRow] | None
) -> dict[str, Any]:
    """Seconds from submit to graded, p50/p90/max, over the submissions graded.

    From the database (the row's created_at to its last status change) when it could be read;
    else from the client (the 201 to the first poll that saw it finished, late by up to one
    poll interval). `source` says which.
    """
    if db_rows is None:
        return submit_to_seen(accepted)
    seconds = []
    for a in accepted:
        row = db_rows.get(a.id)
        if row is not None and row.status in GRADED and row.finished_at is not None:
            seconds.append(row.finished_at - row.created_at)
    return spread(seconds, "database")


def submit_to_seen(accepted: Sequence[Accepted]) -> dict[str, Any]:
    """Seconds from the 201 to the student's first poll that saw the result: the wait as the
    exercise page shows it (only the submissions a student's own polls saw finish)."""
    seconds = [
        a.seen_finished_at - a.accepted_at
        for a in accepted
        if a.seen_finished_at is not None and a.status in GRADED
    ]
    return spread(seconds, "client polls")


def spread(seconds: Sequence[float], source: str) -> dict[str, Any]:
    return {
        "source": source,
        "count": len(seconds),
        "p50_s": percentile(seconds, 50),
        "p90_s": percentile(seconds, 90),
        "max_s": max(seconds) if seconds else None,
    }


def grading_seconds(db_rows: Mapping[int, DbRow] | None, ids: Iterable[int]) -> dict[str, Any]:
    """The workers' own time per grading (the Grading row's duration), and per worker."""
    if db_rows is None:
        return {"mean_s": None, "p50_s": None, "per_worker": {}}
    rows = [db_rows[i] for i in ids if i in db_rows and db_rows[i].grading_s is not None]
    per_worker: dict[str, int] = {}
    for row in rows:
        per_worker[row.worker or "?"] = per_worker.get(row.worker or "?", 0) + 1
    seconds = [row.grading_s for row in rows if row.grading_s is not None]
    return {
        "mean_s": sum(seconds) / len(seconds) if seconds else None,
        "p50_s": percentile(seconds, 50),
        "per_worker": per_worker,
    }


# The parts of submit-to-graded, in the order they happen, with the report's names.
SPLIT_PHASES = (
    ("runner wait", "sandbox_start_s"),
    ("load", "setup_s"),
    ("checks", "check_s"),
    ("timed calls", "timing_s"),
)


def submit_to_graded_split(
    db_rows: Mapping[int, DbRow] | None, ids: Iterable[int]
) -> dict[str, Any]:
    """Where submit-to-graded went, per graded submission: the report's phases, and the rest
    (queueing, the task's database work, the report written), p50 and p90 of each.

    ``reused_both``: gradings that reused both companions' remembered medians (the others
    timed at least one of them in full)."""
    if db_rows is None:
        return {"count": 0, "parts": {}, "reused_both": 0}
    rows = [
        db_rows[i]
        for i in ids
        if i in db_rows
        and db_rows[i].status in GRADED
        and db_rows[i].finished_at is not None
        and db_rows[i].phases.get("timing_s") is not None
    ]
    parts: dict[str, list[float]] = {label: [] for label, _ in SPLIT_PHASES}
    parts["the rest"] = []
    for row in rows:
        assert row.finished_at is not None  # filtered above; for mypy
        spent = 0.0
        for label, key in SPLIT_PHASES:
            value = row.phases.get(key) or 0.0
            parts[label].append(value)
            spent += value
        parts["the rest"].append(max(0.0, row.finished_at - row.created_at - spent))
    return {
        "count": len(rows),
        "parts": {
            label: {"p50_s": percentile(values, 50), "p90_s": percentile(values, 90)}
            for label, values in parts.items()
        },
        "reused_both": sum(1 for row in rows if row.companions_reused >= 2),
    }
