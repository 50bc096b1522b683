"""The DRAM bytes a submission's kernels move, counted by Nsight Compute in an untimed call.

After the grade is final (like the informative profile), a fresh sandbox of the bench runs
the harness under ``ncu`` and makes one call of the timed size inside an NVTX range; ncu
profiles only the kernels launched in it, replaying each to read its DRAM counters, and
writes one CSV row per kernel (graders/measure/hardware_bytes.py parses and summarises it).

ncu runs inside the sandbox, with the harness, as the sandbox's user: run outside, it would
need the sandbox to share the host's network namespace to reach it. So its figures are
informative only, like the profile: the submission could tamper with them, and they earn
and cost nothing. Where the driver keeps the counters for administrators
(``NVreg_RestrictProfilingToAdminUsers=1``, the default) or the runtime cannot profile
(gVisor), the report says the bytes were not measured, and why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path

from graders.grading import warm
from graders.grading.phases import Outcome, Run
from graders.harness.main import TRACE_RANGE
from graders.measure import hardware_bytes
from graders.report.types import HardwareBytes
from graders.sandbox import launch as sandbox
from graders.spec.layouts import input_layout

_CSV_CAP = 4 << 20  # more than any one call's kernels write; the file is the sandbox's
_PATIENCE = 6.0  # ncu makes a process's start and its first kernels several times slower


def measure(bench: warm.Bench, text: str) -> HardwareBytes:
    """``text``'s DRAM bytes for one call of the timed size, against the exercise's ideal."""
    reason = hardware_bytes.ncu_unavailable_reason(slot=bench.slot)
    if reason is not None:
        return hardware_bytes.not_measured(reason)
    uid = sandbox.slot_uid(bench.slot) if sandbox.mode() == "root" else None
    with sandbox.Scratch(uid) as scratch:
        traces = scratch.root / "trace"
        traces.mkdir(mode=0o700)
        if uid is not None:
            os.chown(traces, uid, uid)
        inside = Path(sandbox.SCRATCH_MOUNT) / "trace" / "ncu.csv"
        prefix = tuple(hardware_bytes.ncu_command(inside, nvtx_range=TRACE_RANGE))
        run = bench.start_run(scratch, text, uid=uid, command_prefix=prefix)
        try:
            _one_traced_call(bench, run)
        except Outcome as failed:
            return hardware_bytes.not_measured(f"the profiling call failed: {failed.message}")
        finally:
            stderr = run.session.process.stderr.text(tail=2000, settle_s=0.5)
            run.close()
        csv = _read_capped(traces / "ncu.csv")
    if csv is None:
        why = hardware_bytes.probe_failure(stderr, 1) or "ncu wrote no figures in the sandbox"
        return hardware_bytes.not_measured(why)
    spec = bench.spec
    minimum = float(spec.cost_bytes(spec.sizes[bench.device].timed))
    return hardware_bytes.summarize(hardware_bytes.parse_ncu_csv(csv), minimum, calls=1)


def _one_traced_call(bench: warm.Bench, run: Run) -> None:
    grader = bench.grader
    grader.await_hello(run, patience=_PATIENCE)
    grader.load(run)
    layout = input_layout(bench.spec, bench.spec.sizes[bench.device].timed)
    bench.arena.fill(layout, secrets.randbits(63))
    grader.place_inputs(run, layout, "while counting DRAM bytes")
    run.deadline = time.monotonic() + bench.spec.limits.setup_s * _PATIENCE
    grader.thaw(run, "while counting DRAM bytes")
    run.session.send("trace", inputs=bench.arena.placements(layout))
    grader.receive(run, ("traced",), "while counting DRAM bytes", "setup_s")
    grader.pause(run, "after counting DRAM bytes")


def _read_capped(path: Path) -> str | None:
    """The sandbox's file, if it is a plain file of at most the cap: never through a link
    the sandbox put there."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with contextlib.closing(os.fdopen(descriptor, "rb")) as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _CSV_CAP:
            return None
        return handle.read(_CSV_CAP).decode("utf-8", errors="replace")
