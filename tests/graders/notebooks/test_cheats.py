"""Student code that tries to turn failing tests into passes, or to read hidden tests.

Every submission here has a wrong ``add`` (so every test must fail) plus one student
cell, placed before the first test, that attacks the way errors are reported.
"""

from __future__ import annotations

import json

import pytest

from .conftest import CORRECT, HIDDEN_CALL, HIDDEN_MARKER, WRONG, cell, fill, student_visible

CHEATS = {
    "showtraceback_none": """
import IPython.core.interactiveshell
IPython.core.interactiveshell.InteractiveShell.showtraceback = None
""",
    "showtraceback_and_excepthook_print_ok": """
import sys
import IPython.core.interactiveshell as shell
shell.InteractiveShell.showtraceback = lambda *args, **kwargs: print("ok")
shell.InteractiveShell.showsyntaxerror = lambda *args, **kwargs: print("ok")
sys.excepthook = lambda *args: print("Success!")
""",
    "custom_exception_handler": """
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: print("All tests passed"))
""",
    "reply_forced_to_ok": """
import ipykernel.ipkernel
_original = ipykernel.ipkernel.IPythonKernel.do_execute
async def do_execute(self, *args, **kwargs):
    reply = await _original(self, *args, **kwargs)
    reply["status"] = "ok"
    for key in ("ename", "evalue", "traceback"):
        reply.pop(key, None)
    reply.setdefault("user_expressions", {})
    return reply
ipykernel.ipkernel.IPythonKernel.do_execute = do_execute
""",
    "ast_transformer_swallows_errors": """
import ast
class Swallow(ast.NodeTransformer):
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=None, name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=[s], handlers=[handler], orelse=[], finalbody=[])
                     for s in node.body]
        return ast.fix_missing_locations(node)
get_ipython().ast_transformers.append(Swallow())
""",
    "exec_swallows_errors": """
import builtins
_exec = builtins.exec
def exec(code, *args):
    try:
        _exec(code, *args)
    except BaseException:
        print("ok")
builtins.exec = exec
""",
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_error_hiding_cheats_score_nothing(graded, tiny_spec, name: str) -> None:
    report = graded(fill(tiny_spec, WRONG, before_tests=[CHEATS[name]]))
    assert report["verdict"] == "wrong", report["message"]
    for grade_id in ("test-add", "test-hidden", "test-late"):
        assert cell(report, grade_id)["score"] == 0, grade_id
        assert cell(report, grade_id)["passed"] is False
    assert report["score"] == 0


def test_the_cheats_do_not_break_honest_code(graded, tiny_spec) -> None:
    """The same cells with a correct ``add``: the proof still comes back."""
    for name in ("custom_exception_handler", "ast_transformer_swallows_errors"):
        report = graded(fill(tiny_spec, CORRECT, before_tests=[CHEATS[name]]))
        assert report["score"] == 6, name


def test_deleted_and_edited_test_cells_are_restored(graded, tiny_spec) -> None:
    deleted = graded(fill(tiny_spec, WRONG, drop=("test-add", "test-hidden")))
    assert cell(deleted, "test-add")["score"] == 0
    assert cell(deleted, "test-hidden")["score"] == 0
    edited = graded(fill(tiny_spec, WRONG, replace={"test-add": "pass", "test-late": "1"}))
    assert edited["score"] == 0


def test_test_cell_turned_into_an_ordinary_cell_is_restored(graded, tiny_spec) -> None:
    import nbformat

    nb = nbformat.reads(fill(tiny_spec, WRONG).decode(), as_version=4)
    for c in nb.cells:
        meta = c.metadata.get("nbgrader", {})
        if meta.get("grade_id") == "test-add":
            meta.update(grade=False, locked=False, points=0)
            c.source = "print('Success!')"
    report = graded(nbformat.writes(nb).encode())
    assert cell(report, "test-add")["score"] == 0
    assert report["max_score"] == 7


def test_fake_success_output_does_not_pass(graded, tiny_spec) -> None:
    faker = WRONG.replace("return", "print('add works')\n    return")
    report = graded(fill(tiny_spec, faker))
    assert cell(report, "test-add")["score"] == 0


SPY = """
import base64, marshal, types
_seen = []
get_ipython().events.register("pre_run_cell", lambda info: _seen.append(info.raw_cell))

def _constants(code):
    for value in code.co_consts:
        if isinstance(value, types.CodeType):
            yield from _constants(value)
        else:
            yield repr(value)

def _leak():
    for raw in _seen:
        print(raw)
        if "b64decode('" in raw:
            payload = raw.split("b64decode('")[1].split("'")[0]
            print(" ".join(_constants(marshal.loads(base64.b64decode(payload)))))

def add(a, b):
    _leak()
    raise ValueError(" ".join(_seen))
"""


def test_hidden_tests_never_reach_student_visible_fields(graded, tiny_spec) -> None:
    for submission in (
        fill(tiny_spec, WRONG),  # the hidden assertion fails with its message
        fill(tiny_spec, SPY),  # code that records and prints every cell it is sent
    ):
        report = graded(submission)
        visible = student_visible(report)
        for secret in (HIDDEN_MARKER, HIDDEN_CALL, "BEGIN HIDDEN TESTS"):
            assert secret not in visible
            assert secret not in json.dumps(report)
        assert cell(report, "test-hidden")["output"] == "failed"
        assert cell(report, "test-late")["output"].startswith("failed (details withheld")


def test_visible_output_before_hidden_tests_is_shown(graded, tiny_spec) -> None:
    report = graded(fill(tiny_spec, SPY))
    assert "ValueError" in cell(report, "test-add")["output"]


def test_partial_credit_over_the_maximum_scores_nothing(tmp_path) -> None:
    """nbgrader would stop autograding on a displayed value above the cell's points."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from graders.notebooks import grade_notebook

    from .conftest import SLOT, nbgrader_cell

    source = new_notebook(
        cells=[
            nbgrader_cell(new_code_cell("### BEGIN SOLUTION\nv = 1\n### END SOLUTION"), "a",
                          solution=True),
            nbgrader_cell(new_code_cell("v"), "partial", grade=True, points=2),
        ]
    )  # fmt: skip
    path = tmp_path / "partial.ipynb"
    nbformat.write(source, path)
    for value, score in (("1", 1.0), ("0.5", 0.5), ("100", 0.0)):
        submission = source.copy()
        submission.cells = [new_code_cell(f"v = {value}"), source.cells[1]]
        submission.cells[0].metadata = source.cells[0].metadata
        report = grade_notebook(path, nbformat.writes(submission), slot=SLOT)
        assert report["score"] == score, (value, report)
