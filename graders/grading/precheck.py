"""Checks done on the trusted side before anything runs: size, UTF-8, syntax, entry point,
and whether this worker's device can run the submission's language at all.

A failure here is ``rejected``: nothing ran, so it costs the student no attempt.

The languages a submission may be written in (:func:`language`):

* ``"python"``: PyTorch (or plain Python) code;
* ``"triton"``: a ``@triton.jit`` kernel and a Python wrapper with the exercise's entry name.
  On a CUDA worker it is compiled for the GPU; on a CPU worker the sandbox sets
  ``TRITON_INTERPRET=1`` (graders/sandbox/launch.py), so it runs under Triton's interpreter:
  its results are checked as usual, its timings mean nothing and earn no points (the report
  says so, graders/report/build.py). On a CPU this reading is only a first guess: the grading
  counts a submission as Triton once it launched a kernel (graders/grading/interpreted.py);
* ``"cuda_cpp"``: CUDA C++ built by ``torch.utils.cpp_extension.load_inline`` with
  ``cuda_sources``. It needs a GPU (and nvcc), so a CPU worker rejects it here, with a message
  that says so, rather than letting the build fail inside the sandbox.

Detection reads the syntax tree only; it is deliberately plain (an import of ``triton`` and a
decorator from it; a ``load_inline`` call given CUDA sources). Hiding either gains nothing: a
Triton kernel is still counted as it is launched, and a hidden CUDA build (or
``cpp_extension.load`` of a file written at import) fails in the sandbox, as an ``error``
instead of this rejection. Nor does any word buy time: the longer budget for compiling is
the time a compiler was seen running (graders/grading/compile_clock.py).
"""

from __future__ import annotations

import ast
import threading
from typing import Literal

Language = Literal["python", "triton", "cuda_cpp"]

# CPython 3.11's AST construction keeps its recursion depth in interpreter-wide state, and
# two threads parsing at once (the validator grades in parallel lanes) can trip
# "SystemError: AST constructor recursion depth mismatch": parse one source at a time.
_PARSING = threading.Lock()


def find_problem(
    source: str | bytes, entry: str, max_bytes: int, *, device: str = "cpu"
) -> tuple[str | None, str]:
    """(message or None, decoded text); ``device`` is the one the grading would run on."""
    raw = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    if len(raw) > max_bytes:
        return (
            f"Your file is {len(raw)} bytes; the limit is {max_bytes} bytes. "
            "Remove unused code and resubmit."
        ), ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"Your file is not UTF-8 text (bad byte at offset {exc.start}). "
            "Save it as UTF-8 and resubmit."
        ), ""
    if "\x00" in text:
        return "Your file contains NUL bytes; save it as plain text and resubmit.", ""
    try:
        with _PARSING:
            tree = ast.parse(text, filename="submission.py")
            compile(tree, "submission.py", "exec")
    except (RecursionError, MemoryError):
        return (
            "Your file nests expressions too deeply for Python to compile. Flatten the "
            "deepest expression and resubmit; this submission did not count as an attempt."
        ), text
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        line = (exc.text or "").strip()
        snippet = f" ({line[:120]}{'...' if len(line) > 120 else ''})" if line else ""
        return (
            f"Syntax error at {where}: {exc.msg}{snippet}. Fix it and resubmit; "
            "this submission did not count as an attempt."
        ), text
    if not defines(tree, entry):
        return (
            f"No top-level function named `{entry}` was found. Define "
            f"`def {entry}(...)` at the top level of your file (not inside a class or "
            "`if` block) and resubmit."
        ), text
    if device == "cpu" and _language(tree) == "cuda_cpp":
        return CUDA_CPP_ON_CPU, text
    return None, text


CUDA_CPP_ON_CPU = (
    "This is a CUDA C++ submission (torch.utils.cpp_extension.load_inline with cuda_sources); "
    "it needs a GPU worker, and it was sent to a CPU worker, which has no GPU to build it for "
    "or run it on, so it was not run. For this exercise, write the kernel in PyTorch or in "
    "Triton (which a CPU worker runs under its interpreter, for correctness only), or ask your "
    "instructor for a GPU version of the exercise. This submission did not count as an attempt."
)


# Decorators that make a Triton kernel (or wrap one), as attributes of the triton module.
_TRITON_DECORATORS = ("jit", "autotune", "heuristics")


def language(text: str) -> Language:
    """The submission's language (see the module docstring); "python" when it does not parse."""
    tree = _parsed(text)
    return "python" if tree is None else _language(tree)


def _parsed(text: str) -> ast.Module | None:
    """The submission's syntax tree, or None when it does not parse."""
    try:
        with _PARSING:
            return ast.parse(text, filename="submission.py")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _language(tree: ast.Module) -> Language:
    if any(_builds_cuda(node) for node in ast.walk(tree) if isinstance(node, ast.Call)):
        return "cuda_cpp"
    if _uses_triton_jit(tree):
        return "triton"
    return "python"


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _builds_cuda(call: ast.Call) -> bool:
    """``load_inline(...)`` (under any prefix) given CUDA sources, by keyword or as its third
    positional argument (``load_inline(name, cpp_sources, cuda_sources, ...)``)."""
    name = _dotted(call.func)
    if name is None or name.rsplit(".", 1)[-1] != "load_inline":
        return False
    given = [kw.value for kw in call.keywords if kw.arg == "cuda_sources"]
    if len(call.args) >= 3:
        given.append(call.args[2])
    return any(not (isinstance(v, ast.Constant) and v.value is None) for v in given)


def _uses_triton_jit(tree: ast.Module) -> bool:
    """An import of triton, and a function decorated with ``triton.jit`` (or autotune /
    heuristics), under whatever name the import bound."""
    modules, decorators = _bound_names(tree, "triton", _TRITON_DECORATORS)
    if not modules and not decorators:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = _dotted(target) or ""
                head, _, attr = name.rpartition(".")
                if (head in modules and attr in _TRITON_DECORATORS) or name in decorators:
                    return True
    return False


def _bound_names(
    tree: ast.Module, package: str, attributes: tuple[str, ...]
) -> tuple[set[str], set[str]]:
    """(names bound to ``package``, names bound to its ``attributes`` by ``from`` imports)."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package:
                    modules.add(alias.asname or package)
                elif alias.name.startswith(package + ".") and alias.asname is None:
                    modules.add(package)  # `import triton.language` binds triton too
        elif isinstance(node, ast.ImportFrom) and node.module == package:
            functions.update(
                alias.asname or alias.name for alias in node.names if alias.name in attributes
            )
    return modules, functions


def defines(tree: ast.Module, name: str) -> bool:
    """Some def/assignment/import binding ``name``.

    Deliberately lenient (any nesting level): this only spares a sandbox start for the
    obvious mistake; the harness checks the real module attribute after import.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return True
    return False
