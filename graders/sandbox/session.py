"""The trusted end of the channel to the sandbox: what harness/main.py calls ``Channel``.

``TrustedChannel`` holds the sandboxed child and the two pipes to it: commands go out on the
control pipe, messages come back on the results pipe, one JSON object per line. Everything that
arrives is untrusted; ``receive`` only frames and parses it, and the phases check the fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from typing import Any

from graders.sandbox.launch import SandboxedProcess

_MAX_LINE = 1 << 20


class ChannelClosed(Exception):
    """The child closed the results pipe (it exited or was killed)."""


class ChannelTimeout(Exception):
    """No message before the deadline."""


class ChannelCorrupt(Exception):
    """Something that is not our protocol arrived (e.g. the submission wrote to our fd)."""


class TrustedChannel:
    """A sandboxed harness process and the trusted ends of its control and results pipes."""

    def __init__(self, process: SandboxedProcess, results_r: int, control_w: int) -> None:
        self.process = process
        self._results_r, self._control_w = results_r, control_w
        self._buffer = b""

    def send(self, op: str, **fields: Any) -> None:
        data = (json.dumps({"op": op, **fields}) + "\n").encode()
        try:
            while data:
                written = os.write(self._control_w, data)
                data = data[written:]
        except (BrokenPipeError, OSError) as exc:
            raise ChannelClosed(str(exc)) from None

    def receive(self, deadline: float) -> dict[str, Any]:
        """Next message, waiting at most until ``deadline`` (time.monotonic())."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([self._results_r], [], [], remaining)
            if not ready:
                raise ChannelTimeout()
            chunk = os.read(self._results_r, 65536)
            if not chunk:
                raise ChannelClosed("results pipe closed")
            self._buffer += chunk
            if len(self._buffer) > _MAX_LINE:
                raise ChannelCorrupt("oversized message")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting thousands deep
            raise ChannelCorrupt(f"not JSON: {line[:80]!r}") from None
        if not isinstance(message, dict) or not isinstance(message.get("op"), str):
            raise ChannelCorrupt(f"not a protocol message: {line[:80]!r}")
        return message

    def close(self) -> int | None:
        # Thawed to exit by itself: a frozen process could not flush what it printed.
        # Every figure is taken by now, so what it does in this last second earns nothing.
        self.process.containment.thaw()
        with contextlib.suppress(ChannelClosed):
            self.send("exit")
        # Give it a moment to exit by itself, then take the whole tree down regardless.
        self.process.wait(timeout=1.0)
        returncode = self.process.close()
        for fd in (self._results_r, self._control_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        return returncode
