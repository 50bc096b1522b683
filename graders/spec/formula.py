"""Safe evaluation of the small arithmetic formulas used in exercise.toml.

Formulas (``[cost]`` bytes/flops, symbolic shapes) are parsed with :mod:`ast` and
only a tiny whitelist is evaluated: numbers, size names, ``+ - * / // % **``,
unary minus, and the helper ``elem("float32")`` which returns the size in bytes
of one element of that dtype. Nothing else (attributes, subscripts, other calls)
is accepted, so a formula can never run arbitrary code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

# Bytes per element; kept here (not via torch) so specs parse without importing torch.
DTYPE_SIZES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}

_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_POW = 64  # keeps ``2 ** 10**9`` from freezing the loader


class FormulaError(ValueError):
    """The formula is not in the allowed grammar or cannot be evaluated."""


def _elem(dtype: str) -> int:
    if dtype not in DTYPE_SIZES:
        raise FormulaError(f"elem(): unknown dtype {dtype!r}; known: {sorted(DTYPE_SIZES)}")
    return DTYPE_SIZES[dtype]


class Formula:
    """A parsed formula; ``names`` are the size variables it refers to."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str | int | float) or isinstance(text, bool):
            raise FormulaError(f"expected a string or number, got {type(text).__name__}")
        self.text = str(text)
        try:
            self._tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            raise FormulaError(f"cannot parse {self.text!r}: {exc.msg}") from None
        self.names: frozenset[str] = frozenset(self._check(self._tree.body))

    def _check(self, node: ast.AST) -> set[str]:
        """Walk the tree once at load time so errors surface before any grading."""
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return set()
        if isinstance(node, ast.Name):
            return {node.id}
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
            return self._check(node.operand)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "elem"
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            _elem(node.args[0].value)
            return set()
        raise FormulaError(
            f"{self.text!r}: only numbers, size names, + - * / // % **, and elem('dtype') "
            f"are allowed (found {type(node).__name__})"
        )

    def __call__(self, sizes: Mapping[str, int | float]) -> float:
        return self._eval(self._tree.body, sizes)

    def _eval(self, node: ast.AST, sizes: Mapping[str, int | float]) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in sizes:
                raise FormulaError(f"{self.text!r}: unknown name {node.id!r}")
            return sizes[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, sizes), self._eval(node.right, sizes)
            if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POW:
                raise FormulaError(f"{self.text!r}: exponent {right} too large")
            try:
                return _BINOPS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise FormulaError(f"{self.text!r}: division by zero") from None
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, sizes)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            (arg,) = node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                return _elem(arg.value)
        raise FormulaError(f"{self.text!r}: unsupported node")  # unreachable after _check

    def __repr__(self) -> str:
        return f"Formula({self.text!r})"
