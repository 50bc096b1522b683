"""The submission rows at the end of a load run, read straight from the stack's database.

The database is the truth (contract of issue 14): what a row says decides whether a
submission was lost. This reads the tables by their Django names with plain SQL, so the
benchmark does not import the models another engineer is changing; if their shape changed
beyond reading, `read_rows` returns None with the reason and the figures fall back to what
the students' polls saw. PostgreSQL (the default stack) or SQLite (`--embedded`, make run's).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.load_stats import FINISHED, DbRow

SUBMISSIONS = """
SELECT id, status, created_at, status_changed_at FROM submissions_submission
"""
# The first grading of each submission: its duration and which worker made it.
GRADINGS = """
SELECT DISTINCT ON (submission_id) submission_id, duration_s, worker, report->'timings',
       report->'performance'->'companions_reused', verdict
FROM submissions_grading ORDER BY submission_id, id
"""
# The same on SQLite: no DISTINCT ON, and the JSON comes back as text (json_extract).
SQLITE_GRADINGS = """
SELECT submission_id, duration_s, worker, json_extract(report, '$.timings'),
       json_extract(report, '$.performance.companions_reused'), verdict
FROM submissions_grading
WHERE id IN (SELECT MIN(id) FROM submissions_grading GROUP BY submission_id)
"""
SQLITE_PREFIX = "sqlite:///"


def fetch(database_url: str) -> tuple[list[Any], dict[int, Any]]:
    """The submission rows and each one's first grading (id -> its other columns)."""
    if database_url.startswith(SQLITE_PREFIX):
        path = database_url.removeprefix(SQLITE_PREFIX)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            submissions = [
                (i, status, sqlite_time(created), sqlite_time(changed))
                for i, status, created, changed in conn.execute(SUBMISSIONS).fetchall()
            ]
            gradings = {
                row[0]: (*row[1:3], from_json(row[3]), from_json(row[4]), row[5])
                for row in conn.execute(SQLITE_GRADINGS).fetchall()
            }
        finally:
            conn.close()
        return submissions, gradings
    with psycopg.connect(database_url) as pg:
        submissions = pg.execute(SUBMISSIONS).fetchall()
        gradings = {row[0]: row[1:] for row in pg.execute(GRADINGS).fetchall()}
    return submissions, gradings


def sqlite_time(text: str) -> datetime:
    """Django keeps an aware datetime in SQLite as UTC text without its offset."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def from_json(text: object) -> object:
    return json.loads(text) if isinstance(text, str) else text


def read_rows(database_url: str) -> dict[int, DbRow] | None:
    try:
        submissions, gradings = fetch(database_url)
    except (psycopg.Error, sqlite3.Error) as exc:
        print(f"load bench: could not read the submission rows ({exc}); using the polls")
        sys.stdout.flush()
        return None
    rows: dict[int, DbRow] = {}
    for row_id, status, created_at, changed_at in submissions:
        duration, worker, timings, reused, verdict = gradings.get(row_id, (None,) * 5)
        rows[int(row_id)] = DbRow(
            id=int(row_id),
            status=str(status),
            created_at=created_at.timestamp(),
            finished_at=changed_at.timestamp() if status in FINISHED else None,
            grading_s=float(duration) if duration is not None else None,
            worker=str(worker) if worker else None,
            phases=phases_of(timings),
            companions_reused=len(reused) if isinstance(reused, dict) else 0,
            verdict=str(verdict) if verdict else None,
        )
    return rows


def phases_of(timings: object) -> dict[str, float]:
    """The report's per-phase seconds that are numbers (a rejected submission has few)."""
    if not isinstance(timings, dict):
        return {}
    return {
        key: float(value)
        for key, value in timings.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
