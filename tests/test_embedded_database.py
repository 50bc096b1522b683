"""The embedded default's database (SQLite, `make run`): a transaction takes the write lock
when it begins, so a second writer waits for it instead of failing at once (issue 26).
tests/bench/test_load_stack.py checks that make run's settings carry the option."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import OperationalError, connections, transaction
from django.db.utils import ConnectionHandler
from pytest_django import DjangoDbBlocker

from config.settings import base


@pytest.fixture
def locked_sqlite(tmp_path: Path) -> Iterator[Path]:
    """A SQLite file another connection is writing to (it holds the write lock throughout)."""
    path = tmp_path / "db.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE t (x INTEGER)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    try:
        yield path
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_the_write_lock_is_asked_for_when_the_transaction_begins(
    locked_sqlite: Path,
    django_db_blocker: DjangoDbBlocker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deferred, the block below would begin and read, and its first write would then fail
    with "database is locked" at once, the timeout unused (two students submitting at once
    got a 503). Immediate, BEGIN itself waits for the lock: here it gives up after its
    (short) timeout, since the other writer never finishes."""
    if base.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        mode = base.DATABASES["default"]["OPTIONS"]["transaction_mode"]
    else:  # this run is on PostgreSQL: check the option the SQLite branch sets
        mode = "IMMEDIATE"
    assert mode == "IMMEDIATE"
    embedded = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(locked_sqlite),
        "OPTIONS": {"timeout": 0.2, "transaction_mode": mode},
    }
    # A handler of its own fills in Django's defaults for the alias.
    alone = ConnectionHandler({"default": embedded, "embedded": embedded})
    monkeypatch.setitem(connections.settings, "embedded", alone.settings["embedded"])
    with django_db_blocker.unblock():
        try:
            # No statement at all inside: only BEGIN, which asks for the write lock.
            with pytest.raises(OperationalError, match="locked"), transaction.atomic("embedded"):
                pass
        finally:
            connections["embedded"].close()
            del connections["embedded"]
