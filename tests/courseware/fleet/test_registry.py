"""The fleet registry: a worker registers with its peaks, its heartbeat thread keeps it live,
and its state reads idle, busy or gone. A second worker on a core already timed on is refused."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
from django.db import connection
from django.utils import timezone
from pytest_django.fixtures import Settings

from courseware.fleet import worker_hooks
from courseware.fleet.heartbeat import Heartbeat
from courseware.fleet.models import Worker, WorkerState
from courseware.fleet.peaks import cached_peaks
from courseware.fleet.registry import CoreTaken, worker_grading, worker_idle, worker_register
from courseware.fleet.selectors import live_worker_counts, worker_state
from tests.conftest import Cast
from tests.courseware.fleet.helpers import identity, registered, silent_for, submit


def state(name: str) -> WorkerState:
    return worker_state(Worker.objects.get(name=name))


def test_a_worker_is_idle_then_busy_then_idle_then_gone(cast: Cast, settings: Settings) -> None:
    settings.FLEET_GONE_AFTER_S = 30
    registered("cpu-0@node-a")
    assert state("cpu-0@node-a") == WorkerState.IDLE
    work = submit(cast.alice)
    worker_grading(name="cpu-0@node-a", submission_id=work.pk)
    assert state("cpu-0@node-a") == WorkerState.BUSY
    worker_idle(name="cpu-0@node-a", submission_id=work.pk)
    assert state("cpu-0@node-a") == WorkerState.IDLE
    silent_for("cpu-0@node-a", 29)
    assert state("cpu-0@node-a") == WorkerState.IDLE
    silent_for("cpu-0@node-a", 31)
    assert state("cpu-0@node-a") == WorkerState.GONE
    assert live_worker_counts() == {}


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_keeps_a_worker_live_until_it_stops() -> None:
    me = identity("cpu-0@node-a")
    worker_register(me, peaks=None)
    silent_for(me.name, 3600)
    assert state(me.name) == WorkerState.GONE
    heartbeat = Heartbeat(me, every_s=0.05)
    heartbeat.start()
    try:
        deadline = time.monotonic() + 30
        while state(me.name) == WorkerState.GONE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state(me.name) == WorkerState.IDLE
    finally:
        heartbeat.stop()
        heartbeat.join(timeout=30)
    assert not heartbeat.is_alive()


def test_a_second_worker_on_the_same_core_of_a_machine_is_refused(
    settings: Settings, db: None
) -> None:
    settings.FLEET_GONE_AFTER_S = 30
    worker_register(identity("cpu-0@node-a", slot=0, core=1), peaks=None)
    worker_register(identity("cpu-1@node-a", slot=1, core=0), peaks=None)  # its own core
    worker_register(identity("cpu-0@node-b", slot=0, core=1, hostname="node-b"), peaks=None)
    with pytest.raises(CoreTaken) as taken:
        worker_register(identity("cpu-2@node-a", slot=2, core=1), peaks=None)
    assert "cpu-0@node-a" in str(taken.value) and "GRADERS_SLOT" in str(taken.value)
    # The same worker starting again is not in its own way; a gone one is in nobody's.
    worker_register(identity("cpu-0@node-a", slot=0, core=1), peaks=None)
    silent_for("cpu-0@node-a", 31)
    worker_register(identity("cpu-2@node-a", slot=2, core=1), peaks=None)


def test_a_worker_on_a_taken_core_stops_at_start_with_the_message(db: None) -> None:
    worker_register(identity("cpu-0@node-a", core=1), peaks=None)
    clash = identity("cpu-5@node-a", slot=5, core=1)
    sender = SimpleNamespace(hostname=clash.name)
    with (
        mock.patch("courseware.fleet.worker_hooks.this_worker", return_value=clash),
        pytest.raises(SystemExit, match="already uses"),
    ):
        worker_hooks.register_worker(sender=sender)
    assert not Worker.objects.filter(name=clash.name).exists()


def test_a_worker_of_a_kind_that_is_not_one_stops_at_start(settings: Settings, db: None) -> None:
    settings.GRADERS_WORKER_KIND = "H100"
    with pytest.raises(SystemExit, match="cuda-<model>"):
        worker_hooks.register_worker(sender=SimpleNamespace(hostname="H100-0@node-a"))


def test_a_worker_registers_with_the_peaks_cached_on_its_machine(
    db: None, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    settings.GRADERS_WORKER_KIND, settings.GRADERS_SLOT = "cpu", 0
    with mock.patch("graders.measure.calibrate.peaks", side_effect=AssertionError("never measure")):
        assert cached_peaks("cpu") is None  # not calibrated yet: nothing, and no calibration
        measured = {
            "gbps": 12.5,
            "flops_per_s": 3.0e10,
            "memory": "private",
            "timestamp": 1.0,
            "measured_at": "2026-11-30T10:00:00Z",
            "method": "triad",
        }
        key = "cpu|Some CPU @ 2.0GHz|threads=1|torch=2.13.0"
        (tmp_path / "peaks.json").write_text(
            json.dumps({key: {"format": 2, "history": [measured]}})
        )
        worker_hooks.register_worker(sender=SimpleNamespace(hostname="cpu-0@node-a"))
    peaks = Worker.objects.get(name="cpu-0@node-a").peaks
    assert (
        peaks is not None and peaks["gbps"] == 12.5 and peaks["device_name"] == "Some CPU @ 2.0GHz"
    )
    assert cached_peaks("cuda") is None
    assert Worker.objects.get(name="cpu-0@node-a").heartbeat_at <= timezone.now()


@pytest.mark.django_db(transaction=True)
def test_a_worker_starts_and_stops_in_the_registry_holding_no_connection(
    settings: Settings,
) -> None:
    settings.GRADERS_WORKER_KIND, settings.GRADERS_SLOT = "cpu", 0
    sender = SimpleNamespace(hostname="cpu-0@node-a")
    worker_hooks.register_worker(sender=sender)
    assert connection.connection is None  # the pool forks from this process: nothing open
    assert state("cpu-0@node-a") == WorkerState.IDLE
    worker_hooks.mark_stopped(sender=sender)
    assert connection.connection is None
    assert state("cpu-0@node-a") == WorkerState.GONE
