"""Import a KernelBench problem file as a draft exercise.

A KernelBench problem is a module with size constants, ``class Model(nn.Module)``, and
``get_inputs()`` / ``get_init_inputs()``. The importer reads it with :mod:`ast`
(constants, input shapes as formulas of the constants, init inputs), then runs it once
in a child process (kb_probe.py, meta tensors) at candidate sizes to pick sizes that fit
each device, and to read output shapes, weight bytes and FLOPs.

The exercise's entry, ``model_forward(*inputs)``, builds ``Model`` (reference) or
``ModelNew`` (submission) from the same public seed and init inputs, so both start with
equal weights, then calls forward. The exercise.toml written here has a ``[kernelbench]``
table, so a submission that defines only ``ModelNew``, as KernelBench submissions do, gets
that wrapper appended when graded (graders/grading/model_wrapping.py, which reads only the spec).
validate.toml records where the exercise came from (``[kernelbench] source``).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graders.errors import SpecError
from graders.grading.model_wrapping import WRAPPER_BEGIN, WRAPPER_END
from graders.spec.content import field_error
from graders.spec.exercise import KernelBenchEntry
from graders.spec.formula import DTYPE_SIZES, Formula, FormulaError

ENTRY = "model_forward"
MODEL = KernelBenchEntry().model
SEED = KernelBenchEntry().seed
# Largest sizes: inputs + output + weights, and FLOPs per call, per device.
TARGET_BYTES = {"cpu": 32 << 20, "cuda": 2 << 30}
TARGET_FLOPS = {"cpu": 2e9, "cuda": 2e12}
MIN_SCALED = 16  # integer constants below this (kernel sizes, dims, groups) are kept as is
_FACTORIES = {"randn", "rand", "randint", "zeros", "ones", "empty", "randn_like", "full"}


@dataclass(frozen=True)
class ProblemInput:
    name: str
    shape: tuple[str, ...]  # formulas of the size constants
    dtype: str
    dist: str
    scale: float


@dataclass(frozen=True)
class Problem:
    path: Path
    source: str
    constants: dict[str, int | float]
    inputs: tuple[ProblemInput, ...]
    init_names: frozenset[str]  # constants get_init_inputs() uses


# ------------------------------------------------------------------------ reading (ast only)


def _module_constants(path: Path, tree: ast.Module) -> dict[str, int | float]:
    constants: dict[str, int | float] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            try:
                value = Formula(ast.unparse(node.value))(constants)
            except FormulaError:
                continue  # not a number (a dtype, a string...): not a size
            constants[node.targets[0].id] = value
    return constants


def _function(path: Path, tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise field_error(path, name, "missing: a KernelBench problem defines it at the top level")


def _returned(path: Path, function: ast.FunctionDef) -> tuple[list[ast.expr], dict[str, ast.expr]]:
    """The elements of the returned list, and the function's simple local assignments."""
    local: dict[str, ast.expr] = {}
    for node in function.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                local[target.id] = node.value
        if isinstance(node, ast.Return):
            if isinstance(node.value, ast.List | ast.Tuple):
                return list(node.value.elts), local
            break
    raise field_error(path, function.name, "must end with `return [ ... ]` (a list literal)")


def _dim_formulas(path: Path, where: str, args: list[ast.expr]) -> tuple[str, ...]:
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        args = list(args[0].elts)
    dims = []
    for arg in args:
        text = ast.unparse(arg)
        try:
            Formula(text)
        except FormulaError as exc:
            raise field_error(path, where, f"shape {text!r} is not a size formula: {exc}") from None
        dims.append(text)
    return tuple(dims)


def _read_input(path: Path, index: int, expr: ast.expr, local: dict[str, ast.expr]) -> ProblemInput:
    name = f"input{index}"
    if isinstance(expr, ast.Name):
        name = expr.id
        expr = local.get(expr.id, expr)
    where = f"get_inputs[{index}]"
    if not (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _FACTORIES
    ):
        raise field_error(
            path, where, f"expected torch.randn(...) or similar, got {ast.unparse(expr)!r}"
        )
    kwargs = {k.arg: k.value for k in expr.keywords if k.arg}
    dtype = "float32"
    if "dtype" in kwargs:
        dtype = ast.unparse(kwargs["dtype"]).removeprefix("torch.")
        if dtype not in DTYPE_SIZES:
            raise field_error(path, where, f"unsupported dtype {dtype!r}")
    args = list(expr.args)
    if expr.func.attr == "randint":
        # randint(high, size) or randint(low, high, size): the shape is the last positional
        size_arg = kwargs.get("size", args[-1] if args else None)
        high_arg = args[1] if len(args) >= 3 else (args[0] if args else kwargs.get("high"))
        if size_arg is None or high_arg is None:
            raise field_error(path, where, "randint needs a high bound and a size")
        high = float(Formula(ast.unparse(high_arg))({}))
        dtype = dtype if "dtype" in kwargs else "int64"
        return ProblemInput(name, _dim_formulas(path, where, [size_arg]), dtype, "randint", high)
    if "size" in kwargs:
        args = [kwargs["size"]]
    # Signed inputs: KernelBench's torch.rand is in [0, 1), where mistakes with signs hide.
    return ProblemInput(name, _dim_formulas(path, where, args), dtype, "normal", 1.0)


def read_problem(path: Path) -> Problem:
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read: {exc}") from None
    except SyntaxError as exc:
        raise SpecError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise field_error(path, "Model", "missing: define class Model(nn.Module)")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        raise field_error(path, "Model.forward", "missing")
    constants = _module_constants(path, tree)
    elements, local = _returned(path, _function(path, tree, "get_inputs"))
    inputs = [_read_input(path, i, e, local) for i, e in enumerate(elements)]
    seen: set[str] = set()
    for i, item in enumerate(inputs):  # input names must be unique identifiers
        if item.name in seen or item.name in constants:
            inputs[i] = ProblemInput(f"input{i}", item.shape, item.dtype, item.dist, item.scale)
        seen.add(inputs[i].name)
    init_elements, _ = _returned(path, _function(path, tree, "get_init_inputs"))
    init_names = frozenset(
        n.id for e in init_elements for n in ast.walk(e) if isinstance(n, ast.Name)
    )
    for item in inputs:
        for dim in item.shape:
            unknown = Formula(dim).names - set(constants)
            if unknown:
                raise field_error(
                    path, "get_inputs", f"shape uses {sorted(unknown)}: not constants"
                )
    return Problem(path, source, constants, tuple(inputs), init_names & set(constants))


# ------------------------------------------------------------------------ sizes


def _size_names(problem: Problem) -> list[str]:
    used = set(problem.init_names)
    for item in problem.inputs:
        for dim in item.shape:
            used |= Formula(dim).names
    return [n for n in problem.constants if n in used and isinstance(problem.constants[n], int)]


def _probe(problem: Problem, candidates: list[dict[str, int]]) -> list[dict[str, Any]]:
    script = Path(__file__).with_name("kb_probe.py")
    done = subprocess.run(
        [sys.executable, str(script), str(problem.path), json.dumps(candidates)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SpecError(f"{problem.path}: running the problem failed: {done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _scaled(problem: Problem, names: list[str], factor: float) -> dict[str, int]:
    return {
        n: max(1, round(problem.constants[n] * factor))
        if problem.constants[n] >= MIN_SCALED
        else int(problem.constants[n])
        for n in names
    }


def _total_bytes(result: dict[str, Any]) -> int:
    tensors = [*result["inputs"], result["output"]]
    elems = sum(DTYPE_SIZES.get(t["dtype"], 4) * _numel(t["shape"]) for t in tensors)
    return elems + result["weight_bytes"]


def _numel(shape: list[int]) -> int:
    total = 1
    for dim in shape:
        total *= dim
    return total


def _plans(problem: Problem, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per device: the timed sizes (the largest uniform down-scaling that fits) and checks."""
    factors = [2.0**-i for i in range(0, 41)]
    candidates = [_scaled(problem, names, f) for f in factors]
    results = _probe(problem, candidates)
    plans: dict[str, dict[str, Any]] = {}
    for device in ("cpu", "cuda"):
        chosen = len(candidates) - 1
        for i, result in enumerate(results):
            if (
                _total_bytes(result) <= TARGET_BYTES[device]
                and result["flops"] <= TARGET_FLOPS[device]
            ):
                chosen = i
                break
        timed = candidates[chosen]
        free = [n for n in names if n not in problem.init_names and timed[n] >= MIN_SCALED]
        checks = [dict(timed, **{n: 1 for n in free})] if free else []
        if free:  # awkward odd sizes; the first free size (often the batch) small
            checks.append(dict(timed, **{n: _odd(min(timed[n], 127)) for n in free}))
            checks.append(dict(timed, **{free[0]: 3}))
        plans[device] = {"timed": timed, "check": checks or [dict(timed)]}
    # One more probe for the exact sizes used: derived figures per size dict.
    every = [s for plan in plans.values() for s in (*plan["check"], plan["timed"])]
    derived = _probe(problem, every)
    for sizes, result in zip(every, derived, strict=True):
        sizes["kb_out_bytes"] = DTYPE_SIZES.get(result["output"]["dtype"], 4) * _numel(
            result["output"]["shape"]
        )
        sizes["kb_weight_bytes"] = result["weight_bytes"]
        sizes["kb_flops"] = result["flops"]
    check = max(plans["cpu"]["check"], key=lambda s: sum(s[n] for n in names))
    plans["cpu"]["out_rms"] = _probe(problem, [{**check, "__real__": True}])[0]["out_rms"]
    for plan in plans.values():
        plan["init"] = next(
            r["init"] for s, r in zip(every, derived, strict=True) if s is plan["timed"]
        )
    return plans


def _odd(value: int) -> int:
    return value if value <= 1 or value % 2 else value - 1


# ------------------------------------------------------------------------ writing


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _wrapper(model: str, init: dict[str, list[Any]]) -> str:
    return f"""{WRAPPER_BEGIN}
_KB_SEED = {SEED}  # public: Model and {model} are built from the same seed
_KB_INIT_INPUTS = {init!r}
_kb_models = {{}}


def {ENTRY}(*inputs):
    import torch as _torch

    device = inputs[0].device if inputs else _torch.device("cpu")
    model = _kb_models.get(device.type)
    if model is None:
        _torch.manual_seed(_KB_SEED)
        init = _KB_INIT_INPUTS["cuda" if device.type == "cuda" else "cpu"]
        model = {model}(*init).to(device)
        _kb_models[device.type] = model
    with _torch.no_grad():
        return model(*inputs)
{WRAPPER_END}
"""


def _rename_model(source: str) -> str:
    """The problem's source with class Model renamed ModelNew (and its super() calls)."""
    return re.sub(r"\bModel\b", "ModelNew", source)


def import_problem(
    problem_path: Path, folder: Path, *, slug: str | None = None, force: bool = False
) -> Path:
    problem = read_problem(problem_path)
    slug = slug or folder.name
    if folder.name != slug:
        raise SpecError(f"{folder}: the folder must be named after the slug {slug!r}")
    if folder.exists() and any(folder.iterdir()) and not force:
        raise FileExistsError(f"{folder}: already exists (use --force to overwrite)")
    names = _size_names(problem)
    plans = _plans(problem, names)
    init = {device: plan["init"] for device, plan in plans.items()}
    wrapper_ref, wrapper_new = _wrapper("Model", init), _wrapper("ModelNew", init)

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "samples").mkdir(exist_ok=True)
    inputs_toml = "\n".join(
        f"{item.name} = "
        + _toml_value(
            {"shape": list(item.shape), "dtype": item.dtype, "dist": item.dist, "scale": item.scale}
        )
        for item in problem.inputs
    )
    in_bytes = " + ".join(
        f"{' * '.join(f'({d})' for d in item.shape) or '1'} * elem('{item.dtype}')"
        for item in problem.inputs
    )
    sizes_toml = "\n".join(
        f"[sizes.{device}]\ncheck = [\n"
        + "".join(f"  {_toml_value(s)},\n" for s in plan["check"])
        + f"]\ntimed = {_toml_value(plan['timed'])}\n"
        for device, plan in plans.items()
    )
    title = problem_path.stem.replace("_", " ")
    rms = plans["cpu"].get("out_rms") or 1.0
    atol = 1e-4 * rms
    (folder / "exercise.toml").write_text(
        f"""# DRAFT imported by `python -m graders import-kernelbench` from {problem_path.name}.
# Sizes are the problem's constants scaled to each device; kb_* entries are derived from
# them by running the problem (output bytes, weight bytes, FLOPs): re-import, or update
# them, when you change a size.
slug = "{slug}"
title = {{ en = {json.dumps(title)} }}
entry = "{ENTRY}"
signature = "{ENTRY}(*inputs) -> torch.Tensor  # or define class ModelNew(nn.Module)"
devices = ["cpu", "cuda"]

[kernelbench]  # a file defining only {MODEL} gets the entry wrapper (see starter.py)
model = "{MODEL}"
seed = {SEED}

[inputs]  # call order, as get_inputs() returns them; signed where KernelBench used rand()
{inputs_toml}

{sizes_toml}
[cost]
bytes = "{in_bytes} + kb_out_bytes + kb_weight_bytes"
flops = "kb_flops"

[tolerance]  # atol: 1e-4 of the output's typical size ({rms:.3g}), so rounding to bf16 fails
float32 = {{ atol = {atol:.1e}, rtol = 1e-4 }}
float16 = {{ atol = 1e-2, rtol = 1e-2 }}
bfloat16 = {{ atol = 1e-2, rtol = 1e-2 }}

[scoring]
correctness_points = 6
performance_points = 4

# KernelBench's measure: speed against the PyTorch reference (eager Model), timed alongside.
[scoring.curve.cpu]
measure = "relative_to_reference"
full_at = 0.8
zero_at = 0.3

[scoring.curve.cuda]
measure = "relative_to_reference"
full_at = 0.8
zero_at = 0.3
""",
        encoding="utf-8",
    )
    (folder / "validate.toml").write_text(
        "# Read by graders/authoring; the grading engine ignores this file.\n"
        "draft = true  # imported: write the prompts and review the sizes, then set false\n\n"
        "[kernelbench]  # provenance; the grading settings are in exercise.toml\n"
        f"source = {json.dumps(problem_path.name)}\n",
        encoding="utf-8",
    )
    placeholder = (
        f"# {title}\n\n*Draft imported from KernelBench ({problem_path.name}); an instructor "
        "has not written this prompt yet.*\n\nImplement `ModelNew`, a faster drop-in "
        "replacement for `Model` below (same constructor, same forward), as in KernelBench.\n"
        f"\n```python\n{problem.source}\n```\n"
    )
    (folder / "prompt.en.md").write_text(placeholder, encoding="utf-8")
    (folder / "prompt.zh.md").write_text(
        placeholder.replace("*Draft imported", "*草稿（尚未撰写题目说明）。Draft imported"),
        encoding="utf-8",
    )
    (folder / "reference.py").write_text(
        f"# Trusted reference: the KernelBench problem as given, plus the grader's entry.\n"
        f"{problem.source.rstrip()}\n\n\n{wrapper_ref}",
        encoding="utf-8",
    )
    renamed = _rename_model(problem.source).rstrip()
    (folder / "starter.py").write_text(
        "# Replace ModelNew's body with your own kernels; keep its constructor's arguments.\n"
        f"{renamed}\n\n\n{wrapper_new}",
        encoding="utf-8",
    )
    # Samples in KernelBench form (ModelNew only, no wrapper): the grader appends it.
    (folder / "samples" / "model_new.py").write_text(
        "# The problem's own Model, renamed: must be graded correct.\n" + renamed + "\n",
        encoding="utf-8",
    )
    (folder / "samples" / "wrong.py").write_text(
        "# A ModelNew whose output is off by one everywhere: must be graded wrong.\n"
        f"{problem.source.rstrip()}\n\n\nclass ModelNew(Model):\n"
        "    def forward(self, *args):\n        return super().forward(*args) + 1\n",
        encoding="utf-8",
    )
    (folder / "samples" / "expected.toml").write_text(
        "# Verdict and score range (inclusive) expected for each sample on CPU.\n"
        '[model_new]\nverdict = "correct"\nscore = [6.0, 10.0]\n\n'
        '[wrong]\nverdict = "wrong"\nscore = [0.0, 0.0]\n',
        encoding="utf-8",
    )
    from graders.spec.exercise import load_exercise

    load_exercise(folder)  # what we wrote must parse: fail here, not in the site
    return folder
