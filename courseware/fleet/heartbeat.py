"""The heartbeat: a thread in each worker's main process that says, every FLEET_HEARTBEAT_S,
"still here", and meanwhile looks after the fleet's lost work (recovery.py).

It runs in the main process, not in the pool child that grades: a grading that takes minutes
does not silence it, and a child killed mid-grading is noticed by its parent's thread.
"""

from __future__ import annotations

import logging
import threading

from django.db import connection

from courseware.fleet import recovery, registry
from courseware.fleet.identity import WorkerIdentity

logger = logging.getLogger(__name__)


def beat_once(identity: WorkerIdentity) -> None:
    """One heartbeat and one round of looking after lost work."""
    registry.worker_beat(identity)
    recovery.reclaim_from_dead_processes(identity)
    recovery.reclaim_from_lost_workers()
    recovery.wake_if_idle(identity)


class Heartbeat(threading.Thread):
    def __init__(self, identity: WorkerIdentity, every_s: float) -> None:
        super().__init__(name=f"heartbeat-{identity.name}", daemon=True)
        self.identity = identity
        self.every_s = every_s
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.every_s):
            try:
                beat_once(self.identity)
            except Exception:  # a database blip must not end the heartbeat for good
                logger.exception("Heartbeat of %s failed; trying again", self.identity.name)
            finally:
                # Hold no connection between beats: none is open when the pool forks a child,
                # and an idle fleet keeps no PostgreSQL connections.
                connection.close()

    def stop(self) -> None:
        self.stopping.set()
