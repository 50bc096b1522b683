"""Checks done on the trusted side before anything runs: size, UTF-8, syntax, entry point.

A failure here is ``rejected``: nothing ran, so it costs the student no attempt.
"""

from __future__ import annotations

import ast
import threading

# CPython 3.11's AST construction keeps its recursion depth in interpreter-wide state, and
# two threads parsing at once (the validator grades in parallel lanes) can trip
# "SystemError: AST constructor recursion depth mismatch": parse one source at a time.
_PARSING = threading.Lock()


def find_problem(source: str | bytes, entry: str, max_bytes: int) -> tuple[str | None, str]:
    """(message or None, decoded text)."""
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
    return None, text


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
