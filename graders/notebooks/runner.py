"""Send a notebook's code cells to the sandboxed kernel one at a time and collect outputs.

The notebook never leaves the parent: the kernel only receives the cell being run.
Outputs are kept up to a per-cell budget (what is dropped is still counted), and a
cell whose output passes the flood limit, a cell past its time limit, the notebook
past its total limit, or a kernel that exits all stop the run with a :class:`Stop`;
the cells that ran keep what they produced.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq
from nbformat import NotebookNode
from nbformat.v4 import new_output

from graders.notebooks.kernel import SandboxedKernel
from graders.notebooks.wrapping import WrappedTest

# After the execute reply, outputs may still be in flight on IOPub until the kernel
# says it is idle; wait this long at most for that.
_IDLE_GRACE_S = 2.0
_POLL_MS = 100
# What a message we cannot decode counts towards the flood limit: the kernel can send
# garbage frames as fast as it likes, and each is dropped unread.
_MALFORMED_COST = 4096
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunLimits:
    cell_s: float
    total_s: float
    keep_bytes: int  # output kept per cell
    flood_bytes: int  # output per cell that stops the run


class Stop(Exception):
    """The run ended early: ``reason`` is "timeout", "died" or "flood"."""

    def __init__(self, reason: str, cell_index: int, detail: str = "") -> None:
        super().__init__(f"{reason} at cell {cell_index}: {detail}")
        self.reason, self.cell_index, self.detail = reason, cell_index, detail


@dataclass
class CellResult:
    index: int
    reply: dict[str, Any] | None = None  # execute_reply content; None when none came
    proven: bool | None = None  # test cells only: the proof came back
    total_bytes: int = 0
    dropped_bytes: int = 0


@dataclass
class RunResult:
    cells: dict[int, CellResult] = field(default_factory=dict)
    stop: Stop | None = None
    elapsed_s: float = 0.0


class OutputCollector:
    """Turns IOPub messages into nbformat outputs for one cell, within a byte budget."""

    def __init__(self, keep_bytes: int) -> None:
        self.outputs: list[NotebookNode] = []
        self.room = keep_bytes
        self.total = 0
        self.dropped = 0

    def _take(self, text: str) -> str:
        size = len(text.encode("utf-8", errors="replace"))
        self.total += size
        if size <= self.room:
            self.room -= size
            return text
        kept = text[: max(self.room, 0)]
        self.dropped += size - len(kept.encode("utf-8", errors="replace"))
        self.room = 0
        return kept

    def add(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "stream":
            name = content.get("name") if content.get("name") in ("stdout", "stderr") else "stdout"
            text = self._take(str(content.get("text", "")))
            last = self.outputs[-1] if self.outputs else None
            if last is not None and last.output_type == "stream" and last.name == name:
                last.text += text
            else:  # kept even when empty: a stderr stream alone fails an nbgrader test cell
                self.outputs.append(new_output("stream", name=name, text=text))
        elif msg_type in ("display_data", "execute_result", "update_display_data"):
            raw = content.get("data")
            data: dict[str, Any] = raw if isinstance(raw, dict) else {}
            kept = {}
            for mime, value in data.items():
                text = value if isinstance(value, str) else str(value)
                taken = self._take(text)
                if len(taken) == len(text):
                    kept[str(mime)] = value
            if not kept:
                kept = {"text/plain": "[output not kept: over the size limit]"}
            if msg_type == "execute_result":
                count = content.get("execution_count")
                self.outputs.append(
                    new_output(
                        "execute_result",
                        data=kept,
                        execution_count=count if isinstance(count, int) else None,
                    )
                )
            elif msg_type == "display_data":
                self.outputs.append(new_output("display_data", data=kept))
        elif msg_type == "error":
            traceback = content.get("traceback")
            frames = [self._take(str(f)) for f in traceback] if isinstance(traceback, list) else []
            self.outputs.append(
                new_output(
                    "error",
                    ename=self._take(str(content.get("ename", "Error"))),
                    evalue=self._take(str(content.get("evalue", ""))),
                    traceback=[f for f in frames if f],
                )
            )
        elif msg_type == "clear_output":
            self.outputs.clear()


def _message_size(content: Any) -> int:
    """Rough size of a message's content, for the flood limit."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, dict):
        return sum(_message_size(k) + _message_size(v) for k, v in content.items())
    if isinstance(content, list):
        return sum(_message_size(v) for v in content)
    return 8


def run_cells(
    nb: NotebookNode,
    kernel: SandboxedKernel,
    limits: RunLimits,
    wrap: Callable[[int, NotebookNode], WrappedTest | None],
    started: float,
) -> RunResult:
    """Run every non-empty code cell of ``nb`` in order, filling in its outputs.

    ``wrap(index, cell)`` returns the wrapped form of a test cell (or None for any
    other cell, which is sent as it is). ``started`` is when the total limit began."""
    result = RunResult()
    total_deadline = started + limits.total_s
    count = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        cell.outputs = []
        record = CellResult(index)
        result.cells[index] = record
        wrapped = wrap(index, cell)
        try:
            reply = _execute(kernel, cell, wrapped, limits, total_deadline, index, record)
        except Stop as stop:
            result.stop = stop
            break
        count += 1
        cell.execution_count = count
        record.reply = reply
        if wrapped is not None:
            record.proven = wrapped.proven(reply)
    result.elapsed_s = time.monotonic() - started
    return result


def _execute(
    kernel: SandboxedKernel,
    cell: NotebookNode,
    wrapped: WrappedTest | None,
    limits: RunLimits,
    total_deadline: float,
    index: int,
    record: CellResult,
) -> dict[str, Any]:
    client = kernel.client
    code = wrapped.code if wrapped is not None else cell.source
    msg_id = client.execute(
        code,
        store_history=True,
        allow_stdin=False,
        stop_on_error=False,
        user_expressions=wrapped.user_expressions() if wrapped is not None else None,
    )
    cell_deadline = time.monotonic() + limits.cell_s
    deadline = min(cell_deadline, total_deadline)
    collector = OutputCollector(limits.keep_bytes)
    poller = zmq.Poller()
    poller.register(client.shell_channel.socket, zmq.POLLIN)
    poller.register(client.iopub_channel.socket, zmq.POLLIN)
    for monitor in kernel.disconnect_monitors:
        poller.register(monitor, zmq.POLLIN)
    reply: dict[str, Any] | None = None
    idle = False
    idle_deadline = deadline
    try:
        while reply is None or not idle:
            now = time.monotonic()
            if now >= (deadline if reply is None else idle_deadline):
                if reply is not None:
                    break  # the reply came; late outputs are not worth waiting for
                which = "cell" if cell_deadline <= total_deadline else "notebook"
                raise Stop("timeout", index, which)
            if not kernel.alive:
                raise Stop("died", index, kernel.exit_description())
            events = dict(poller.poll(_POLL_MS))
            if any(monitor in events for monitor in kernel.disconnect_monitors):
                # ZMQ dropped the link: the kernel died (its sockets closed) or sent a
                # message over MAX_MESSAGE_BYTES; no further output can arrive either way.
                if kernel.process.wait(timeout=1.0) is not None:
                    raise Stop("died", index, kernel.exit_description())
                raise Stop("flood", index, "a message over the size limit")
            if client.iopub_channel.socket in events:
                idle = _drain_iopub(client, msg_id, collector, limits, index) or idle
            if client.shell_channel.socket in events and reply is None:
                reply = _shell_reply(client, msg_id)
                if reply is not None:
                    idle_deadline = min(time.monotonic() + _IDLE_GRACE_S, deadline)
    finally:
        cell.outputs = collector.outputs
        record.total_bytes, record.dropped_bytes = collector.total, collector.dropped
    return reply or {}


def _drain_iopub(
    client: Any, msg_id: str, collector: OutputCollector, limits: RunLimits, index: int
) -> bool:
    """Take every IOPub message waiting; True when this cell's 'idle' arrived."""
    idle = False
    while True:
        try:
            msg = client.iopub_channel.get_msg(timeout=0)
        except queue.Empty:
            return idle
        except Exception:  # a frame that fails jupyter's signature or JSON checks
            _LOG.warning("dropped a malformed IOPub message", exc_info=True)
            collector.total += _MALFORMED_COST
            continue
        content = msg.get("content") if isinstance(msg.get("content"), dict) else {}
        size = _message_size(content)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            # Output from threads of earlier cells still counts towards the flood.
            collector.total += size
        else:
            msg_type = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
            if msg_type == "status" and content.get("execution_state") == "idle":
                idle = True
            else:
                collector.add(str(msg_type), content)
        if collector.total > limits.flood_bytes:
            raise Stop("flood", index, f"{collector.total} bytes")


def _shell_reply(client: Any, msg_id: str) -> dict[str, Any] | None:
    while True:
        try:
            msg = client.shell_channel.get_msg(timeout=0)
        except queue.Empty:
            return None
        except Exception:  # never the reply we wait for: it must carry a valid signature
            _LOG.warning("dropped a malformed shell message", exc_info=True)
            continue
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            content = msg.get("content")
            return content if isinstance(content, dict) else {}
