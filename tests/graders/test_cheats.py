"""Known cheats and escapes must fail or be neutralised."""

from __future__ import annotations

import json
import socket
import sys
import textwrap


def test_cache_replay_is_caught_in_timed_phase(graded) -> None:
    report = graded("cache_replay.py")
    assert report["verdict"] == "wrong"
    assert "timed" in report["message"]


def test_input_mutation_is_wrong(graded) -> None:
    report = graded("mutates_input.py")
    assert report["verdict"] == "wrong"
    assert "modified its input `a`" in report["message"]


def test_monkeypatched_time_does_not_change_the_figure(graded) -> None:
    # The figure comes from the trusted side's clock; the submission's time module is its own.
    report = graded("patches_clock.py")
    assert report["verdict"] == "correct"
    perf = report["performance"]
    assert report["flags"] == [], (perf["median_s"], perf["runs"], report["flags"])
    assert perf["median_s"] > 0


def test_tampering_with_the_harness_clock_is_flagged(graded) -> None:
    report = graded("tampers_harness_clock.py")
    assert report["verdict"] == "correct"
    assert report["flags"] == ["timing_inconsistent"]
    assert report["performance"]["points"] == 0
    assert report["score"] == 6
    assert "outside clock" in report["message"]


def test_exit_zero_before_returning_is_an_error(graded) -> None:
    for name in ("exits_zero.py", "exit_early.py"):
        assert graded(name)["verdict"] == "error"


def test_lower_precision_fails(graded) -> None:
    by_dtype = graded("half_precision.py")
    assert by_dtype["verdict"] == "wrong"
    assert "float16" in by_dtype["message"]
    by_tolerance = graded("half_precision_upcast.py")
    assert by_tolerance["verdict"] == "wrong"
    assert "beyond atol" in by_tolerance["message"]


def test_forged_channel_messages_are_the_students_error(graded) -> None:
    report = graded("writes_channel.py")
    assert report["verdict"] == "error"
    assert "malformed message" in report["message"]


def test_fork_bomb_is_contained(graded) -> None:
    report = graded("forks_bomb.py")
    assert report["verdict"] == "correct", report["message"]
    assert "fork stopped after" in report["stdout"]


def test_sandbox_hides_reference_network_and_privileges(graded, quick_spec) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    reference = str(quick_spec.path / "reference.py")
    real_reference = str((quick_spec.path.parents[2] / "exercises").resolve())
    sys_prefixes = sorted({sys.prefix, sys.base_prefix})
    source = textwrap.dedent(f"""
        import json, os, socket, sys, torch
        facts = {{}}
        facts["reference_visible"] = os.path.exists({reference!r})
        facts["repo_exercises_visible"] = os.path.exists({real_reference!r})
        facts["uid"] = os.getuid()
        facts["root_listing"] = sorted(os.listdir("/root")) if os.path.isdir("/root") else []
        facts["shadow_visible"] = os.path.exists("/etc/shadow")
        facts["cores"] = len(os.sched_getaffinity(0))
        status = open("/proc/self/status").read()
        facts["cap_eff"] = [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")][0]
        facts["no_new_privs"] = [l.split()[1] for l in status.splitlines()
                                 if l.startswith("NoNewPrivs")][0]
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            facts["network"] = "connected"
        except OSError as exc:
            facts["network"] = type(exc).__name__
        facts["writable"] = {{}}
        for place in ("/tmp", os.environ["HOME"], "/scratch", "/scratch/in", "/opt/grader/harness"):
            try:
                with open(os.path.join(place, "probe"), "w") as handle:
                    handle.write("x")
                facts["writable"][place] = True
            except OSError:
                facts["writable"][place] = False
        try:
            open("/usr/owned", "w")
            facts["usr_writable"] = True
        except OSError:
            facts["usr_writable"] = False
        # System trees (and merged-/usr's links to them) hold no course files, and walking
        # them cold can outlast the import limit: prune them, do not just filter them out.
        system = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin")
        # The interpreter's trees as this process sees them too: a venv below /tmp is
        # mounted elsewhere in the sandbox (graders/sandbox/launch.py).
        prefixes = {sys_prefixes!r} + [sys.prefix, sys.base_prefix]
        found = []
        for d, subdirs, fs in os.walk("/"):
            subdirs[:] = [
                s for s in subdirs
                if not os.path.join(d, s).startswith(system)
                and not any(os.path.join(d, s).startswith(p) for p in prefixes)
            ]
            found += [os.path.join(d, f) for f in fs + [os.path.basename(d)]
                      if f in ("reference.py", "naive.py", "exercise.toml", "vector-add")]
        facts["found_reference_files"] = found
        print("FACTS" + json.dumps(facts))

        def vector_add(a, b):
            return a + b
        """)
    try:
        report = graded(source)
    finally:
        server.close()
    assert report["verdict"] == "correct", report["message"]
    line = next(x for x in report["stdout"].splitlines() if x.startswith("FACTS"))
    facts = json.loads(line[5:])
    assert facts["reference_visible"] is False
    assert facts["repo_exercises_visible"] is False
    assert facts["found_reference_files"] == []
    assert facts["network"] != "connected"
    assert facts["usr_writable"] is False
    assert facts["writable"] == {
        "/tmp": True,
        "/scratch/home": True,
        "/scratch": False,
        "/scratch/in": False,
        "/opt/grader/harness": False,
    }
    assert facts["cores"] == 1
    assert facts["shadow_visible"] is False
    assert int(facts["cap_eff"], 16) == 0
    if facts["uid"] != 0:  # started as root: dropped to a per-slot uid
        assert facts["uid"] >= 64000
        assert facts["no_new_privs"] == "1"
        assert facts["root_listing"] in ([], [".pyenv"])


def test_background_work_cannot_slow_the_companions(graded, roomy_spec) -> None:
    # The busy thread is frozen with the rest of the sandbox while reference and naive are
    # timed, so it costs only its own calls and the relative figures are measured.
    report = graded("background_thread.py", spec=roomy_spec, compare=True)
    assert report["verdict"] == "correct", report["message"]
    # Its thread fights its own calls for the GIL and the core, which may make the
    # harness's clock disagree with ours; nothing of it runs outside a window.
    assert set(report["flags"]) <= {"timing_inconsistent"}
    assert report["performance"]["relative_to_reference"] is not None
