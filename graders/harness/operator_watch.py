"""The harness's side of ``[rules] forbid``: every call of a watched operator, on any thread.

Before the submission is imported, each operator whose name matches one of the exercise's
patterns (its ``forbid`` names and their routes, graders/grading/forbidden_ops.py) gets a
kernel of ours in PyTorch's dispatcher, in front of the library's own: it counts the call
and hands it to the kernel it replaced, unchanged. The dispatcher's tables are the process's,
not a thread's, so a call from any thread of the submission is counted, and so is a call in
any of its calls, timed or not, at any size: there is no profiled call to tell apart from the
others, no session to detect and wait out. Nothing else is touched, so an operator the
exercise allows costs exactly what it did: the watch costs only calls that lose their
performance points anyway. What it keeps is one counter per watched operator, whatever the
number of calls (a profiler's record per call grew to 4.9 GiB for a column-by-column online
softmax).

Where a wrapper goes, so that no route to the library's kernel passes around it:

- an operator with a kernel of its own for a backend (``aten::_softmax`` on CPU, on MKL-DNN
  or nested tensors, ``aten::logsumexp``'s composite for every backend): wrapped there, the
  last step of every dispatch, under autograd, ``inference_mode`` or ``torch.jit.fork``;
- an operator that decomposes into others (``aten::rms_norm``, ``aten::softmax.int``): its
  composite kernel (``CompositeImplicitAutograd``) is wrapped, so the call is counted whether
  or not what it decomposes into is watched, and autograd still sees the decomposition.

This is a teaching rule, not a security boundary: the submission shares this process and can
unregister what it finds. ``intact`` tells whether every wrapper is still the kernel the
dispatcher runs, which catches that short of the submission re-registering ours.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

# The keys where a library kernel can run the operator's computation: dense, MKL-DNN,
# quantized, sparse and nested tensors, on a CPU or a GPU; and Python, where a mode or tensor
# subclass receives it, as torch.compile's tracing does (a compiled ``torch.logsumexp``
# decomposes there and never reaches a backend's kernel). A key the build lacks is skipped.
BACKEND_KEYS = (
    "CPU",
    "CUDA",
    "MkldnnCPU",
    "QuantizedCPU",
    "QuantizedCUDA",
    "SparseCPU",
    "SparseCUDA",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "Python",
)
COMPOSITE_KEY = "CompositeImplicitAutograd"
MAX_PROBLEMS = 5  # problems kept for the report: the first few say enough


def words(name: str) -> list[str]:
    """An operator's name (without namespace or overload) as words: ``_native_batch_norm_legit``
    is ``["native", "batch", "norm", "legit"]``."""
    return [word for word in name.lstrip("_").split("_") if word]


def name_matches(name: str, pattern: str) -> bool:
    """Whether ``pattern``'s words appear in ``name``'s words, in order: ``batch_norm`` matches
    ``_native_batch_norm_legit``, ``softmax`` matches ``log_softmax``, not ``softmin``."""
    remaining = iter(words(name))
    return all(any(word == want for word in remaining) for want in words(pattern))


def operator_name(qualified: str) -> str | None:
    """``aten::_softmax`` for ``aten::_softmax.out``; None for a name without a namespace (a
    ``record_function`` range, a Python frame: not an operator)."""
    namespace, sep, rest = qualified.partition("::")
    name = rest.split(".")[0]
    if not sep or not namespace or not name:
        return None
    return f"{namespace}::{name}"


class OperatorWatch:
    """Counts of the watched operators' calls since ``install``, per operator name."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(pattern for pattern in patterns if words(pattern))
        self.calls: dict[str, int] = {}
        self.wrapped = 0  # kernels wrapped
        self.problems: list[str] = []
        # (operator, key) -> the kernel the dispatcher ran for it once wrapped, for ``intact``.
        self._ours: dict[tuple[str, str], str] = {}
        self._libraries: dict[str, Any] = {}  # kept alive: a Library unregisters on deletion

    def install(self) -> None:
        """Wrap every matching operator; what fails is kept in ``problems``, never raised: a
        watch that could not be set must not keep the submission from being graded."""
        if not self.patterns:
            return
        try:
            import torch

            operators = sorted(torch._C._dispatch_get_all_op_names())
        except Exception as exc:  # an API this torch lacks: no watch, and the report says so
            self._problem(f"the operators could not be listed ({exc!r})")
            return
        with warnings.catch_warnings():
            # "Overriding a previously registered kernel": what we mean to do.
            warnings.simplefilter("ignore")
            for qualified in operators:
                name = operator_name(qualified)
                if name is None:
                    continue
                if not any(name_matches(name.partition("::")[2], p) for p in self.patterns):
                    continue
                try:
                    self._wrap_operator(qualified, name)
                except Exception as exc:  # one operator this torch will not say how to wrap
                    self._problem(f"{qualified}: {exc!r}")
        if not self.wrapped:
            self._problem(f"no operator matched {', '.join(self.patterns)}")

    def report(self) -> dict[str, Any]:
        """The ``operators`` message's fields (graders/sandbox/protocol.py)."""
        return {
            "calls": dict(self.calls),
            "wrapped": self.wrapped,
            "intact": self.intact(),
            "problems": list(self.problems),
        }

    def intact(self) -> bool:
        """Whether every kernel wrapped is still the one the dispatcher runs."""
        return all(self._kernel(op, key) == ours for (op, key), ours in self._ours.items())

    def close(self) -> None:
        """Unregister every wrapper, restoring the library's kernels. The harness never
        does (its process ends with its submission); a process that watches for a while
        does."""
        for library in self._libraries.values():
            library._destroy()
        self._libraries.clear()
        self._ours.clear()

    def _problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text[:300])

    def _wrap_operator(self, qualified: str, name: str) -> None:
        import torch

        has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
        composite = has_kernel(qualified, COMPOSITE_KEY)
        if composite:
            # The decomposition itself, as every key without a kernel of its own computes it.
            self._wrap(qualified, name, COMPOSITE_KEY, torch._C.DispatchKey.Undefined)
        for key_name in BACKEND_KEYS:
            key = torch._C._dispatch_key_parse(key_name)
            if has_kernel(qualified, key_name) or (
                not composite
                and torch._C._dispatch_has_computed_kernel_for_dispatch_key(qualified, key_name)
            ):
                self._wrap(qualified, name, key_name, key)

    def _wrap(self, qualified: str, name: str, key_name: str, original_key: Any) -> None:
        import torch

        try:
            original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
                qualified, original_key
            )
        except Exception:
            return  # a computed entry with nothing behind it (a CUDA key on a CPU build)
        namespace, _, overload_name = qualified.partition("::")
        try:
            library = self._libraries.get(namespace)
            if library is None:
                library = self._libraries[namespace] = torch.library.Library(namespace, "IMPL")
            library.impl(overload_name, self._counting(name, original), key_name, with_keyset=True)
        except Exception as exc:
            self._problem(f"{qualified} on {key_name}: {exc!r}")
            return
        self.wrapped += 1
        runtime_key = "CPU" if key_name == COMPOSITE_KEY else key_name
        self._ours[(qualified, runtime_key)] = self._kernel(qualified, runtime_key)

    def _counting(self, name: str, original: Any) -> Callable[..., Any]:
        calls = self.calls

        def counted(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return original.call_boxed(keyset, *args, **kwargs)

        return counted

    @staticmethod
    def _kernel(qualified: str, key_name: str) -> str:
        """Where the kernel the dispatcher runs for ``key_name`` was registered."""
        import torch

        try:
            key = torch._C._dispatch_key_parse(key_name)
            kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(qualified, key)
        except Exception as exc:
            return f"unreadable: {exc!r}"
        return repr(kernel)
