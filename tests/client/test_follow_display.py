"""The follow display on its own: what each state reads as, the live line's redraws and the
plain lines, driven by a scripted series of API answers and a stepped clock."""

from __future__ import annotations

import io
from typing import Any

import pytest

from courseware.client.errors import ClientError, ExitCode, Unreachable
from courseware.client.follow import GIVE_UP_AFTER_S, follow, state_text


class Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


class Script:
    """The API's answers in order (the last one repeats), and a clock that sleep advances."""

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)
        self.now = 0.0

    def fetch(self) -> dict[str, Any]:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


QUEUED_3 = {"status": "queued", "queue_position": 3, "estimated_wait_s": 95}
QUEUED_1 = {"status": "queued", "queue_position": 1}
RUNNING = {"status": "running", "queue_position": None, "device": "cpu"}
GRADED = {"status": "graded", "verdict": "correct"}


def test_each_state_reads_as_words() -> None:
    assert state_text(QUEUED_3) == "queued: 2 submissions ahead of yours, about 2 min"
    assert state_text({**QUEUED_1, "estimated_wait_s": 12.4}) == "queued: next in line, about 12 s"
    assert state_text(QUEUED_1) == "queued: next in line"
    assert state_text({"status": "queued", "queue_position": 2}).endswith(
        "1 submission ahead of yours"
    )
    assert state_text(RUNNING) == "running on cpu"


def test_plain_lines_say_each_change_once() -> None:
    script = Script(QUEUED_3, QUEUED_3, QUEUED_1, RUNNING, RUNNING, GRADED)
    out = io.StringIO()
    last = follow(script.fetch, out=out, clock=script.clock, sleep=script.sleep)
    assert last == GRADED
    assert out.getvalue().splitlines() == [
        "queued: 2 submissions ahead of yours, about 2 min",
        "queued: next in line",
        "running on cpu",
    ]


def test_the_live_line_redraws_in_place_and_leaves_each_finished_state() -> None:
    script = Script(QUEUED_1, QUEUED_1, RUNNING, RUNNING, RUNNING, GRADED)
    out = Tty()
    follow(script.fetch, out=out, clock=script.clock, sleep=script.sleep)
    screen = out.getvalue()
    assert screen.count("\r") > 10  # the spinner and the stopwatch move between polls
    finished = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in screen.split("\n")]
    assert finished[:2] == ["✓ queued for 0:02", "✓ running on cpu for 0:03"]


def test_a_terminal_that_cannot_show_unicode_gets_ascii() -> None:
    class Latin1Tty(Tty):
        encoding = "latin-1"

    script = Script(QUEUED_1, GRADED)
    out = Latin1Tty()
    follow(script.fetch, out=out, clock=script.clock, sleep=script.sleep)
    out.getvalue().encode("latin-1")  # nothing it cannot print
    assert "+ queued for" in out.getvalue()


def test_a_short_outage_is_waited_out_and_a_long_one_reported() -> None:
    down = Unreachable("http://x", "connection refused")
    script = Script(QUEUED_1, down, down, GRADED)
    assert follow(script.fetch, out=io.StringIO(), clock=script.clock, sleep=script.sleep)
    forever = Script(QUEUED_1, down)
    with pytest.raises(Unreachable):
        follow(forever.fetch, out=io.StringIO(), clock=forever.clock, sleep=forever.sleep)
    assert forever.now > GIVE_UP_AFTER_S


def test_wait_gives_up_with_its_own_exit_code() -> None:
    script = Script(QUEUED_1)
    with pytest.raises(ClientError) as stopped:
        follow(script.fetch, out=io.StringIO(), wait_s=5, clock=script.clock, sleep=script.sleep)
    assert stopped.value.code == ExitCode.STILL_WAITING


def test_the_live_line_never_wraps_on_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "20")
    script = Script(QUEUED_3, GRADED)
    out = Tty()
    follow(script.fetch, out=out, clock=script.clock, sleep=script.sleep)
    drawn = [part.replace("\x1b[K", "") for part in out.getvalue().replace("\n", "\r").split("\r")]
    assert max(len(part) for part in drawn) <= 19
    assert any(part.endswith("…") for part in drawn)
