"""The worker's wait for the database: retried with growing pauses, other errors untouched.

The real outage (a worker grading while the proxy to PostgreSQL is cut) is in
test_database_outage.py; these pin the policy without waiting for it.
"""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from courseware.submissions import db_retry


class Flaky:
    """Fails with the given errors, in order, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls: list[dict[str, object]] = []

    def __call__(self, **kwargs: object) -> str:
        self.calls.append(kwargs)
        if self.errors:
            raise self.errors.pop(0)
        return "recorded"


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(db_retry, "sleep", slept.append)
    return slept


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    closes: list[bool] = []
    monkeypatch.setattr(db_retry, "forget_connection", lambda: closes.append(True))
    return closes


def test_it_retries_until_the_database_answers_and_keeps_the_arguments(
    pauses: list[float], closed: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    call = Flaky(*(OperationalError("connection refused") for _ in range(6)), InterfaceError("x"))
    result = db_retry.until_database_answers("recording submission 7", call, submission_id=7)
    assert result == "recorded"
    assert len(call.calls) == 8 and all(c == {"submission_id": 7} for c in call.calls)
    assert len(pauses) == 7 and len(closed) == 7  # a fresh connection for every try
    # Growing pauses, never longer than the longest.
    assert pauses[0] <= db_retry.FIRST_PAUSE_S
    assert pauses[3] > pauses[0]
    assert max(pauses) <= db_retry.LONGEST_PAUSE_S
    assert "recording submission 7" in caplog.text and "connection refused" in caplog.text
    assert "answered again" in caplog.text


def test_an_answer_at_once_costs_no_pause(pauses: list[float], closed: list[bool]) -> None:
    assert db_retry.until_database_answers("claiming", Flaky()) == "recorded"
    assert pauses == [] and closed == []


def test_errors_that_are_not_the_database_being_away_are_raised_at_once(
    pauses: list[float],
) -> None:
    call = Flaky(ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        db_retry.until_database_answers("claiming", call)
    assert pauses == [] and len(call.calls) == 1


def test_the_task_time_limit_ends_the_wait(
    monkeypatch: pytest.MonkeyPatch, closed: list[bool]
) -> None:
    def time_is_up(_seconds: float) -> None:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(db_retry, "sleep", time_is_up)
    with pytest.raises(SoftTimeLimitExceeded):
        db_retry.until_database_answers("recording", Flaky(OperationalError("down")))


def test_forgetting_a_dead_connection_does_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    def close() -> None:
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(db_retry.connection, "close", close)
    db_retry.forget_connection()
