"""A worker's life in the registry, wired to Celery's worker signals: it registers as it
starts (and refuses to start on a core another worker of its machine times on), beats from a
thread while it runs, and says so when it stops cleanly. Connected in FleetConfig.ready()."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, connection

from courseware.fleet import registry
from courseware.fleet.heartbeat import Heartbeat
from courseware.fleet.identity import this_worker
from courseware.fleet.peaks import cached_peaks

logger = logging.getLogger(__name__)

_heartbeats: list[Heartbeat] = []


def _let_go_of_connection() -> None:
    """The worker's main process keeps no database connection between its signals (the pool
    forks from it); inside a transaction (a test calling a hook) the connection stays."""
    if not connection.in_atomic_block:
        connection.close()


def _node_name(sender: Any) -> str | None:
    # worker_init's sender is the WorkController, worker_ready's its Consumer: both have it.
    name = getattr(sender, "hostname", None)
    return str(name) if name else None


def grades(sender: Any) -> bool:
    """Whether this worker consumes its kind's grading queue. A worker for other queues only
    (the LMS score sends on `lti`) is no grading worker: it neither registers nor beats, so
    it never holds a slot or a core in the fleet."""
    queues = getattr(getattr(getattr(sender, "app", None), "amqp", None), "queues", None)
    consumed = getattr(queues, "consume_from", None)
    if not consumed:
        return True  # nothing to tell from (no -Q: every queue): count it, as before
    return str(settings.GRADERS_WORKER_KIND) in consumed


@worker_init.connect
def register_worker(sender: Any = None, **_kwargs: Any) -> None:
    """Register before consuming anything. A worker kind that is not one, or a core already
    timed on by another live worker of this machine, stops the worker with a message saying
    what to change (SystemExit passes through Celery's signal dispatch)."""
    if not grades(sender):
        return
    try:
        identity = this_worker(_node_name(sender))
        peaks = cached_peaks(identity.device)
    except ValueError as exc:
        raise SystemExit(f"GRADERS_WORKER_KIND: {exc}") from exc
    try:
        registry.worker_register(identity, peaks=peaks)
    except registry.CoreTaken as exc:
        raise SystemExit(str(exc)) from exc
    except DatabaseError:  # the heartbeat registers it once the database answers
        logger.exception("Could not register worker %s; the heartbeat will", identity.name)
    finally:
        _let_go_of_connection()


@worker_ready.connect
def start_heartbeat(sender: Any = None, **_kwargs: Any) -> None:
    # worker_ready's sender is the Consumer; its controller knows the queues.
    if not grades(getattr(sender, "controller", sender)):
        return
    heartbeat = Heartbeat(this_worker(_node_name(sender)), float(settings.FLEET_HEARTBEAT_S))
    heartbeat.start()
    _heartbeats.append(heartbeat)


@worker_shutdown.connect
def mark_stopped(sender: Any = None, **_kwargs: Any) -> None:
    """A clean stop: the worker is gone at once, not after its heartbeat ages."""
    for heartbeat in _heartbeats:
        heartbeat.stop()
    if not grades(sender):
        return
    try:
        registry.worker_stopped(name=this_worker(_node_name(sender)).name)
    except DatabaseError:
        logger.exception("Could not record that the worker stopped")
    finally:
        _let_go_of_connection()
