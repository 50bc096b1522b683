"""The whole path from the terminal: `submit` sends a real vector-add sample, a real Celery
worker grades it in the real sandbox, and the client follows the grading live on a terminal
(a pseudo-terminal here) while a second client follows it into a pipe, in plain lines."""

from __future__ import annotations

import codecs
import os
import pty
import re
import subprocess
import threading
import time
from collections.abc import Callable

import pytest

from courseware.submissions.models import Status, Submission
from tests.celery_worker import Worker
from tests.client.conftest import ROOT, Student, Terminal

pytestmark = pytest.mark.e2e

SAMPLE = next(ROOT.glob("exercises/*/vector-add/samples/fast.py"))
GRADING_TIMEOUT_S = 300  # a generous bound on a slow, busy machine; never a measured figure


class Captured:
    """A process's output, read as it comes by a thread, to wait on what it has said."""

    def __init__(self, read: Callable[[], str], *, close: Callable[[], None] | None = None) -> None:
        self.text = ""
        self._close = close
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, args=(read,), daemon=True)
        self._thread.start()

    def _pump(self, read: Callable[[], str]) -> None:
        while True:
            try:
                chunk = read()
            except OSError:  # EIO: the terminal's other side closed
                return
            if not chunk:
                return
            with self._lock:
                self.text += chunk

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = re.search(pattern, self.text)
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never came; the output so far:\n{self.text}")

    def finish(self) -> str:
        self._thread.join(timeout=30)
        if self._close is not None:
            self._close()
        return self.text


def on_a_terminal(
    command: list[str], env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], Captured]:
    """Start the command with a pseudo-terminal as its stdin, stdout and stderr."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdin=terminal, stdout=terminal, stderr=terminal
    )
    os.close(terminal)
    # Incremental: a read may end inside a character (the spinner's, the ✓).
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return process, Captured(
        lambda: decoder.decode(os.read(controller, 4096)), close=lambda: os.close(controller)
    )


def into_a_pipe(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], Captured]:
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
    )
    assert process.stdout is not None
    return process, Captured(process.stdout.readline)


def test_submit_follows_the_grading_live_and_prints_the_report(
    student: Student, terminal: Terminal, worker: Worker
) -> None:
    live, shown = on_a_terminal(terminal.command("submit", "vector-add", str(SAMPLE)), terminal.env)
    submission_id = int(shown.wait_for(r"submission (\d+)\.", timeout=60).group(1))
    # No worker yet: both clients must see it waiting, first in line.
    shown.wait_for("queued: next in line", timeout=60)
    plain, written = into_a_pipe(terminal.command("follow", str(submission_id)), terminal.env)
    written.wait_for("queued: next in line\n", timeout=60)

    worker.start()
    assert live.wait(timeout=GRADING_TIMEOUT_S) == 0, shown.text + worker.log()
    assert plain.wait(timeout=GRADING_TIMEOUT_S) == 0, written.text + worker.log()
    on_screen, in_pipe = shown.finish(), written.finish()

    submission = Submission.objects.get(pk=submission_id)
    assert submission.status == Status.GRADED
    grading = submission.current_grading
    assert grading is not None and grading.score is not None
    score = grading.score

    # On the terminal: one line redrawn in place, each finished state left behind.
    assert "\r" in on_screen and "\x1b[K" in on_screen
    assert re.search(r"✓ queued for \d+:\d\d", on_screen), on_screen
    # In the pipe: a line per change, nothing but text.
    assert in_pipe.startswith("queued: next in line\n"), in_pipe
    assert "\r" not in in_pipe and "\x1b" not in in_pipe
    for output in (on_screen.replace("\r\n", "\n"), in_pipe):
        assert f"Submission {submission_id} · vector-add · graded" in output
        assert "Verdict     correct" in output
        assert re.search(r"Bandwidth   [\d.]+ GB/s, [\d.]+ % of the measured peak", output)
        # The grade is shown as soon as it is stored; the profile follows it.
        assert "Profile of one call" in output
        assert "Feedback" in output and "Next step:" in output

    # The same report afterwards, and the list shows it as the best score.
    latest = terminal.run("report", "latest", "vector-add")
    assert latest.code == 0 and "Verdict     correct" in latest.out, latest
    deadline = time.monotonic() + GRADING_TIMEOUT_S
    while "aten::add" not in latest.out and time.monotonic() < deadline:
        time.sleep(0.5)  # the worker attaches the profile just after the grade
        latest = terminal.run("report", "latest", "vector-add")
    assert "Profile of one call" in latest.out and "aten::add" in latest.out, latest.out
    listed = terminal.run("exercises")
    line = next(r for r in listed.out.splitlines() if r.startswith("vector-add "))
    best = f"{float(score):.3f}".rstrip("0").rstrip(".")
    assert line.split()[-3:] == [best, "/", "10"], listed
