"""The CPU: inputs copied into the sandbox's private memory, caches flushed from its core.

The sandbox's calls run on one pinned core and return when their work is done, so the
window closes on finished work without further ado; the output is read from the frozen
process's memory (graders/grading/arena.py).
"""

from __future__ import annotations

from typing import Any

import torch

from graders.devices.base import CompletionWitness, SandboxRef, WindowPlan
from graders.grading import arena
from graders.measure import calibrate
from graders.measure.flush_size import CacheFlusher
from graders.sandbox import launch as sandbox
from graders.sandbox.pin_thread import on_core


class CpuDevice:
    kind = "cpu"

    def __init__(self, slot: int, flush: bool = True) -> None:
        self.slot = slot
        self.core = sandbox.pick_core(slot)
        self.flusher = (
            CacheFlusher(calibrate.flush_bytes("cpu", slot=slot), "cpu") if flush else None
        )
        self.outputs_back = arena.ReadBuffer()

    def new_stage(self, input_bytes: int, sets: int = 1) -> arena.InputArena:
        return arena.InputArena(input_bytes)

    def sets_per_window(self, plan: WindowPlan) -> int:
        # A CPU call of a timed size takes milliseconds against a window's ~0.1 ms: one call.
        return 1

    def sandbox_memory(self, limit_mb: int) -> None:
        return None  # host memory only, bounded by the sandbox's cgroup

    def flush(self) -> None:
        """Flush from the sandbox's own core: its private caches are the ones the call uses."""
        if self.flusher is None:
            return
        # Where the thread may not use that core, the shared last-level cache is flushed anyway.
        with on_core(self.core):
            self.flusher.flush()

    def resume(self, sandbox: SandboxRef) -> None:
        return None

    def settle(self, sandbox: SandboxRef, timeout_s: float) -> None:
        return None  # a CPU call's work is done when it returns

    def forget(self, sandbox: SandboxRef) -> None:
        return None

    def completion(self) -> CompletionWitness:
        return CompletionWitness("synchronous", "a CPU call's work is done when it returns")

    def read_output(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int
    ) -> torch.Tensor:
        return arena.read_output(described, sandbox.host_pid, cap_bytes, into=self.outputs_back)

    def read_sample(
        self, described: dict[str, Any], sandbox: SandboxRef, cap_bytes: int, flat: torch.Tensor
    ) -> torch.Tensor:
        return arena.read_sample(described, sandbox.host_pid, cap_bytes, flat)

    def memory_problem(self, sandbox: SandboxRef, limit_mb: int) -> str | None:
        return None  # host memory is the cgroup's (or RLIMIT_AS's) to hold

    def containment(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        return None
