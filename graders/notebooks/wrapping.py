"""Wrap a test cell so that the parent can tell it ran to its end.

The parent compiles the test cell itself (IPython syntax turned into Python by
IPython's own transformer), appends one assignment that stores a per-cell random
proof in the user namespace, and sends the kernel a one-line loader that executes
that code object. The execute request asks for the proof back as a user expression;
ipykernel only evaluates user expressions when the cell ended without an exception.
See graders.notebooks.grading for the threat model.
"""

from __future__ import annotations

import ast
import base64
import marshal
import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class WrappedTest:
    code: str  # what the kernel is sent
    proof_name: str  # the user-namespace name holding the proof after a clean run
    proof: str
    payload: str  # the base64 text inside ``code``, scrubbed from what students see

    def user_expressions(self) -> dict[str, str]:
        return {"proof": self.proof_name}

    def proven(self, reply_content: dict) -> bool:
        """True when the reply is ``ok`` and carries exactly this cell's proof."""
        if reply_content.get("status") != "ok":
            return False
        found = (reply_content.get("user_expressions") or {}).get("proof")
        if not isinstance(found, dict) or found.get("status") != "ok":
            return False
        data = found.get("data")
        return isinstance(data, dict) and data.get("text/plain") == repr(self.proof)


def _python_source(cell_source: str) -> str:
    """IPython syntax (magics, ``!cmd``) as plain Python, the way the kernel would see it."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell_source)


def wrap_test(cell_source: str, label: str, *, show_source: bool) -> WrappedTest:
    """Build the loader for one test cell. ``label`` names it in tracebacks; with
    ``show_source`` the cell text is registered in linecache so tracebacks show lines
    (never for cells holding hidden tests)."""
    filename = f"<test {label}>"
    proof_name = f"_nbgrader_proof_{secrets.token_hex(8)}"
    value_name = f"_nbgrader_value_{secrets.token_hex(8)}"
    proof = secrets.token_hex(16)
    try:
        source = _python_source(cell_source)
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        # Let the kernel raise it, so the cell fails the way it would under nbgrader.
        message = f"{exc.msg} ({filename}, line {exc.lineno})"
        return WrappedTest(f"raise SyntaxError({message!r})", proof_name, proof, "")

    # Keep the cell's displayed value (nbgrader reads partial credit from it), unless
    # the cell ends with ';', which silences it in IPython.
    shows_value = (
        bool(tree.body)
        and isinstance(tree.body[-1], ast.Expr)
        and not cell_source.rstrip().endswith(";")
    )
    if shows_value:
        last = tree.body[-1]
        assert isinstance(last, ast.Expr)
        tree.body[-1] = ast.Assign(targets=[ast.Name(value_name, ast.Store())], value=last.value)
    # Reached only when every statement above completed without raising.
    tree.body.append(
        ast.Assign(targets=[ast.Name(proof_name, ast.Store())], value=ast.Constant(proof))
    )
    if show_source:  # registered by the code itself: the loader stays one line
        entry = (len(source), None, source.splitlines(keepends=True), filename)
        register = ast.parse(f"__import__('linecache').cache[{filename!r}] = {entry!r}")
        for node in ast.walk(register):  # line 0 keeps it out of the cell's own lines
            if isinstance(node, ast.stmt | ast.expr):  # the only located nodes in that line
                node.lineno = node.end_lineno = 0
        tree.body[:0] = register.body
    ast.fix_missing_locations(tree)
    code = compile(tree, filename, "exec", dont_inherit=True)
    payload = base64.b64encode(marshal.dumps(code)).decode("ascii")

    lines = [
        f"exec(__import__('marshal').loads(__import__('base64').b64decode('{payload}')), globals())"
    ]
    if shows_value:
        lines.append(value_name)
    return WrappedTest("\n".join(lines), proof_name, proof, payload)
