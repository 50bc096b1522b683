"""Who this worker process is: its Celery node name, its worker kind, its slot and core."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from django.conf import settings

from graders.sandbox.launch import pick_core
from graders.spec.exercise import worker_kind_device


@dataclass(frozen=True)
class WorkerIdentity:
    name: str  # the Celery node name, unique in the fleet: "<kind>-<slot>@<host>"
    kind: str  # its queue: "cpu", "cuda-h100"...
    slot: int  # picks the sandbox uid and the timing core (GRADERS_SLOT)
    hostname: str
    pid: int  # this process
    core: int | None  # the core its gradings are timed on

    @property
    def device(self) -> str:
        """The engine's device for this kind ("cpu" or "cuda")."""
        return worker_kind_device(self.kind)


def this_worker(node_name: str | None) -> WorkerIdentity:
    """This process as a worker. `node_name` is Celery's (`--hostname`); a task run eagerly
    (tests, a shell) has none and gets one naming its process, so it never passes for a real
    worker of the fleet."""
    hostname = socket.gethostname()
    kind = str(settings.GRADERS_WORKER_KIND)
    slot = int(settings.GRADERS_SLOT)
    return WorkerIdentity(
        name=node_name or f"local-{os.getpid()}@{hostname}",
        kind=kind,
        slot=slot,
        hostname=hostname,
        pid=os.getpid(),
        core=pick_core(slot),
    )
