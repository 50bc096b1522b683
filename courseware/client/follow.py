"""Follow a submission until it is graded: a live line on a terminal, plain lines otherwise.

On a terminal one line is redrawn in place (a spinner, the state, the place in the queue and
the estimated wait when the server gives them, the time so far); each finished state is left
behind as a line of its own. When the output is a file or a pipe (CI logs, `| tee`), a line is
written only when something changes, with no control characters.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from courseware.client import units
from courseware.client.errors import ClientError, ExitCode, Unreachable

PENDING = ("queued", "running")
POLL_EVERY_S = 1.0
REDRAW_EVERY_S = 0.1
# A server that stops answering for this long while we follow is reported as down; a shorter
# gap (a restart, a deploy) is waited out.
GIVE_UP_AFTER_S = 60.0


def state_text(data: dict[str, Any]) -> str:
    """What the submission is doing now, in words: "queued: 2 ahead of yours, about 40 s"."""
    status = str(data.get("status") or "")
    if status == "queued":
        position = data.get("queue_position")
        if isinstance(position, int) and position > 1:
            ahead = position - 1
            where = f"{ahead} submission{'s' if ahead > 1 else ''} ahead of yours"
        elif position == 1:
            where = "next in line"
        else:
            where = "waiting for a grader"
        wait = units.wait(data.get("estimated_wait_s"))
        return f"queued: {where}, {wait}" if wait else f"queued: {where}"
    if status == "running":
        device = data.get("device")
        return f"running on {device}" if device else "running"
    return status


class PlainLines:
    """A line each time the state changes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last = ""

    def show(self, text: str, elapsed: float) -> None:
        if text != self.last:
            print(text, file=self.out, flush=True)
            self.last = text

    def tick(self, elapsed: float) -> None:
        pass

    def done(self, elapsed: float) -> None:
        pass


class LiveLine:
    """One line redrawn in place, with a spinner and a stopwatch."""

    FRAMES_UNICODE = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    FRAMES_ASCII = "-\\|/"

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.text = ""
        self.frame = 0
        self.started_at = 0.0  # when the current state began, on the elapsed clock
        encoding = getattr(out, "encoding", None) or "ascii"
        try:
            (self.FRAMES_UNICODE + "✓·").encode(encoding)
            self.frames, self.check, self.dot = self.FRAMES_UNICODE, "✓", "·"
        except (UnicodeEncodeError, LookupError):
            self.frames, self.check, self.dot = self.FRAMES_ASCII, "+", "-"

    def show(self, text: str, elapsed: float) -> None:
        if text != self.text:
            state, new_state = self.text.split(":")[0], text.split(":")[0]
            if self.text and state != new_state:
                # Leave the finished state behind as a line: "✓ queued for 0:12".
                self._draw(f"{self.check} {state} for {units.clock(elapsed - self.started_at)}")
                self.out.write("\n")
                self.started_at = elapsed
            self.text = text
        self.tick(elapsed)

    def tick(self, elapsed: float) -> None:
        if not self.text:
            return
        self.frame = (self.frame + 1) % len(self.frames)
        spent = units.clock(elapsed - self.started_at)
        self._draw(f"{self.frames[self.frame]} {self.text} {self.dot} {spent}")

    def done(self, elapsed: float) -> None:
        if self.text:
            state = self.text.split(":")[0]
            self._draw(f"{self.check} {state} for {units.clock(elapsed - self.started_at)}")
            self.out.write("\n")
            self.out.flush()

    def _draw(self, line: str) -> None:
        # A line wider than the terminal wraps, and \r would then redraw only its last part:
        # keep it to one row. \r goes back to its start, \x1b[K clears what a longer one left.
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        self.out.write(f"\r{units.clip(line, columns)}\x1b[K")
        self.out.flush()


def follow(
    fetch: Callable[[], dict[str, Any]],
    *,
    out: TextIO | None = None,
    live: bool | None = None,
    wait_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll `fetch` until the submission leaves queued/running; its last state.

    Raises ClientError(STILL_WAITING) after `wait_s` seconds, and Unreachable when the server
    stops answering for GIVE_UP_AFTER_S.
    """
    out = out or sys.stdout
    live = out.isatty() if live is None else live
    display: LiveLine | PlainLines = LiveLine(out) if live else PlainLines(out)
    start = clock()
    lost_since: float | None = None
    while True:
        try:
            data = fetch()
            lost_since = None
        except Unreachable:
            lost_since = clock() if lost_since is None else lost_since
            if clock() - lost_since > GIVE_UP_AFTER_S:
                display.done(clock() - start)
                raise
            display.show("lost contact with the server: trying again", clock() - start)
            data = {}
        if data and data.get("status") not in PENDING:
            display.done(clock() - start)
            return data
        if data:
            display.show(state_text(data), clock() - start)
        if wait_s is not None and clock() - start > wait_s:
            display.done(clock() - start)
            raise ClientError(
                f"still {data.get('status') or 'waiting'} after {units.clock(wait_s)}",
                code=ExitCode.STILL_WAITING,
            )
        # The server's hint (selectors.poll_after_s) spaces the polls out far back in a
        # long queue; this client asks at least every POLL_EVERY_S otherwise.
        hint = data.get("poll_after_s") if data else None
        every = float(hint) if isinstance(hint, (int, float)) and 0 < hint <= 60 else POLL_EVERY_S
        next_poll = clock() + every
        while clock() < next_poll:
            sleep(REDRAW_EVERY_S if live else max(0.0, next_poll - clock()))
            display.tick(clock() - start)
