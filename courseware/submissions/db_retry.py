"""A grading worker waits for the database instead of failing or dropping a submission.

While PostgreSQL is unreachable every database call in the task raises `OperationalError` or
`InterfaceError`. Letting that escape would end the task: Celery acknowledges the message (late
acknowledgement acknowledges failures too), so the wake-up call is gone, and a submission that
was already `running` would wait for the stale sweep; a grading the engine had finished would be
thrown away. None of that is the student's doing, so nothing may be marked failed.

Instead the task calls each service through `until_database_answers`, which retries the call with
a growing pause until the database answers. The task keeps its message (unacknowledged, so a
worker that dies meanwhile still hands it back) and whatever it already holds, such as a finished
report. Retrying a whole service call is safe because each is one transaction that the broken
connection rolled back, and the ones a worker makes are idempotent: a claim is a conditional
UPDATE, a grading is keyed by its delivery.

The wait ends when the database answers or when the task's time limit interrupts it (Celery
raises `SoftTimeLimitExceeded`, which is not caught here); then the row, still `queued` or
`running`, is the sweep's to send again.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable
from time import sleep
from typing import ParamSpec, TypeVar

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

DATABASE_ERRORS = (OperationalError, InterfaceError)
# The pause doubles from the first to the longest: a blip costs half a second, and once the
# database is back a waiting worker notices within a few seconds, while a long outage costs it
# one connection attempt every few seconds.
FIRST_PAUSE_S = 0.5
LONGEST_PAUSE_S = 5.0

P = ParamSpec("P")
T = TypeVar("T")


def pause_before_try(attempt: int) -> float:
    """Seconds to wait before try number `attempt + 1` (attempt >= 1), with a little jitter so
    that a fleet of workers waiting on one database does not knock in step."""
    base = min(FIRST_PAUSE_S * 2 ** (attempt - 1), LONGEST_PAUSE_S)
    return base * random.uniform(0.8, 1.0)


def forget_connection() -> None:
    """Drop the broken connection so that the next call opens a new one; Django would otherwise
    keep using a connection the server or the network already closed."""
    # Closing a connection that is already gone may itself complain.
    with contextlib.suppress(*DATABASE_ERRORS):
        connection.close()


def until_database_answers(
    what: str,
    call: Callable[P, T],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`call(*args, **kwargs)`, tried again after a pause for as long as the database is
    unreachable. `what` names the step in the log ("recording submission 12")."""
    attempt = 0
    while True:
        try:
            result = call(*args, **kwargs)
        except DATABASE_ERRORS as exc:
            attempt += 1
            pause = pause_before_try(attempt)
            text = str(exc).strip()
            logger.warning(
                "Database unavailable while %s (try %d: %s); retrying in %.1f s",
                what,
                attempt,
                text.splitlines()[0] if text else type(exc).__name__,
                pause,
            )
            forget_connection()
            sleep(pause)
            continue
        if attempt:
            logger.warning("Database answered again while %s, after %d tries", what, attempt + 1)
        return result
