"""Exercise specifications: parse and validate ``exercise.toml``.

An exercise is a folder ``exercises/<chapter>/<slug>/`` holding:

* ``exercise.toml`` (required): the spec described below;
* ``prompt.en.md`` (required), ``prompt.<lang>.md`` (optional translations);
* ``starter.py`` (required): what the student starts from;
* ``reference.py`` (required): the trusted solution, defines the entry function.
  It is only ever loaded by the trusted grading process, never shown to students
  and never mounted in the student's sandbox;
* ``naive.py`` (optional): what a newcomer would write, timed for ``speedup_vs_naive``;
* ``samples/`` (optional): example submissions with ``expected.toml``.

``exercise.toml`` format (every table is checked for unknown keys)::

    slug = "vector-add"                      # must equal the folder name
    title = { en = "...", zh = "..." }       # "en" required
    entry = "vector_add"                     # function the student defines
    signature = "vector_add(a, b) -> Tensor" # display only
    devices = ["cpu", "cuda"]
    worker_kinds = ["cpu", "cuda-h100"]      # optional: the workers that may grade it, each
                                             #   "cpu", "cuda" (any CUDA worker) or
                                             #   "cuda-<model>"; default: ``devices``

    [inputs]                                 # call order = table order
    a = { shape = ["n"], dtype = "float32", dist = "normal", scale = 1.0 }
    #   shape items: ints or formulas of the size names; dist: normal | uniform | randint

    [sizes.cpu]                              # one table per device in ``devices``
    check = [{ n = 1 }, { n = 4099 }]        # correctness-only sizes (awkward shapes)
    timed = { n = 16777216 }                 # the size that is timed

    [cost]                                   # ideal traffic and work, as formulas
    bytes = "3 * n * elem('float32')"        # elem(dtype) = bytes per element
    flops = "n"

    [tolerance]                              # per output dtype, like torch.allclose
    float32 = { atol = 1e-6, rtol = 1e-5 }
    #   optional small_rtol (softmax: 1e-2): the absolute part is at most small_rtol of the
    #   expected value itself, so values far below atol are compared relatively and 0 in
    #   place of a probability of 1e-9 is wrong; below the dtype's smallest normal number
    #   (float32: 1.2e-38, where GPUs flush to zero) anything that small passes. For outputs
    #   that span orders of magnitude: the validator refuses a tolerance under which the
    #   answer with its smallest 1 % of values set to 0 passes (authoring/structure.py).

    [scoring]
    correctness_points = 6
    performance_points = 4
    [scoring.curve.cpu]                      # one per device; linear from zero_at to full_at
    measure = "fraction_of_peak_bandwidth"   # | fraction_of_peak_flops | fraction_of_roofline
    full_at = 0.6                            #   | relative_to_reference | speedup_vs_naive
    zero_at = 0.1

    [limits]                                 # all optional, defaults shown in ``Limits``
    setup_s = 60      # sandbox start + import of the submission + correctness calls
    timed_s = 30      # the submission's own calls in the timed phase (incl. refills)
    memory_mb = 4096  # cgroup memory.max, else RLIMIT_AS on CPU
    gpu_memory_mb = 8192  # device memory of the sandbox's processes (CUDA), read from NVML
    compile_s = 120   # setup_s plus the time a compiler ran in the sandbox, at most this
    source_bytes = 65536
    output_mb = 2048  # largest result file the trusted side will read

    [timing]                                 # optional, defaults in ``TimingPolicy``
    warmup = 2
    min_runs = 5
    max_runs = 50
    target_median_error = 0.01               # stop when the median is known to +-1% (1 s.e.)
    verified_samples = 2                     # timed calls also checked (the last always)

    [correctness]                            # optional
    allow_input_mutation = false

    [rules]                                  # optional: teaching rules for submissions
    forbid = ["softmax"]                     # operators the student must write themselves:
    #   aten operator names without "aten::" (lower case, digits, underscores). A submission
    #   that ran a matching operator, in any call, on any thread (graders/grading/
    #   forbidden_ops.py: aliases and internal variants such as aten::_softmax or
    #   aten::log_softmax match) keeps its correctness points and gets no performance points.
    #   The reference and naive versions are exempt. A teaching rule, not a security boundary:
    #   code that unhooks the grader's watch is a matter for the course's honesty policy.
    routes.softmax = ["logsumexp"]           # optional: the library's other operators that
    #   compute the same thing (the row's normaliser), matched like forbid's own names and
    #   reported under its rule; each key must be a name in ``forbid``.

    [[check_cases]]                          # optional, any number: adversarial inputs
    name = "near_constant_rows"              # a Python identifier, unique; by convention
                                             #   samples/<name>.py is the sloppy code it fails
    sizes = { rows = 64, cols = 1000 }       # optional: one size for every device, or one
                                             #   per device ({ cpu = {...}, cuda = {...} });
                                             #   default: each device's first check size
    inputs.x = { dist = "near_constant_rows", scale = 0.1, spread = 1e-4 }
    #   per-input overrides of dist and scale (and the dist's own key), others as [inputs]:
    #   near_constant_rows: each last-dim row a random offset N(0, scale) plus noise of
    #                       relative size spread (default 1e-4): row variance ~0
    #   large:              N(0, scale) with a large scale (1e4: exp() overflows float32)
    #   offset:             N(0, scale) + shift (shift = 100: logits around +100)
    #   extreme_scale:      N(0, 1) times per-row factors spanning 10^-scale..10^scale
    #   (normal, uniform, randint as in [inputs]; the new kinds need a floating dtype)
    # The check phase runs each case (fresh seed) besides the check sizes; the reference
    # must pass its own cases. Cases are part of exercise.toml, so editing one changes
    # the content hash and makes a new version.

    [kernelbench]                            # optional; written by import-kernelbench
    model = "ModelNew"                       # a submission defining this class but not
                                             #   ``entry`` gets starter.py's wrapper block
                                             #   appended (graders/grading/model_wrapping.py)
    seed = 42                                # the public seed the wrapper builds models from

Formulas are evaluated by :mod:`graders.spec.formula` (no ``eval``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.errors import SpecError
from graders.locations import REPO_ROOT
from graders.spec.content import (
    IGNORED_PARTS,
    SlugRegistry,
    Table,
    content_hash,
    field_error,
    read_toml,
)
from graders.spec.formula import DTYPE_SIZES, Formula, FormulaError

DEVICE_KINDS = ("cpu", "cuda")
# A worker kind names the device a grading worker has (its Celery queue has the same name):
# "cpu", or "cuda-<model>" in lower case ("cuda-h100"); plain "cuda" is any CUDA worker.
WORKER_KIND_PATTERN = re.compile(r"cpu|cuda(-[a-z0-9]+)*")
DISTRIBUTIONS = ("normal", "uniform", "randint")
# The adversarial kinds only ``[[check_cases]]`` may choose (graders/harness/inputs.py
# draws them), each with the extra layout key it accepts besides ``scale``.
CASE_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": (),
    "uniform": (),
    "randint": (),
    "near_constant_rows": ("spread",),
    "large": (),
    "offset": ("shift",),
    "extreme_scale": (),
}
MEASURES = (
    "fraction_of_peak_bandwidth",
    "fraction_of_peak_flops",
    "fraction_of_roofline",
    "relative_to_reference",
    "speedup_vs_naive",
)
REQUIRED_FILES = ("exercise.toml", "prompt.en.md", "starter.py", "reference.py")


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[Formula, ...]
    dtype: str
    dist: str
    scale: float

    def concrete_shape(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(int(dim(sizes)) for dim in self.shape)


@dataclass(frozen=True)
class SizePlan:
    check: tuple[dict[str, int], ...]
    timed: dict[str, int]


@dataclass(frozen=True)
class CheckCase:
    """One ``[[check_cases]]`` entry: adversarial inputs checked at one size per device.

    ``sizes``: the size for each device of the exercise (already resolved: a single table
    applies to every device, none means each device's first check size). ``overrides``:
    per input name, the layout keys that replace the ``[inputs]`` ones (dist, scale, and
    spread or shift).
    """

    name: str
    sizes: dict[str, dict[str, int]]
    overrides: dict[str, dict[str, str | float]]

    def sizes_for(self, device: str) -> dict[str, int]:
        """The sizes this case is checked at on ``device`` (a copy: callers may edit it)."""
        return dict(self.sizes[device])


@dataclass(frozen=True)
class Tolerance:
    """Per output dtype: ``|got - expected| <= atol + rtol * |expected|`` (torch.allclose),
    with the absolute part capped at ``small_rtol * |expected|`` when ``small_rtol`` is set
    (graders/grading/correctness.py: ``allowance``)."""

    atol: float
    rtol: float
    small_rtol: float | None = None


@dataclass(frozen=True)
class Curve:
    measure: str
    full_at: float
    zero_at: float

    def points(self, value: float | None, max_points: float) -> float:
        """Linear ramp: 0 at or below ``zero_at``, full at or above ``full_at``."""
        if value is None or max_points <= 0:
            return 0.0
        fraction = (value - self.zero_at) / (self.full_at - self.zero_at)
        return round(max_points * min(1.0, max(0.0, fraction)), 3)

    def flat_around(self, value: float, margin: float) -> bool:
        """Whether every figure within ``margin`` of ``value`` earns the same points: the
        whole band lies at or past ``full_at``, or at or short of ``zero_at``."""
        low, high = sorted((self.zero_at, self.full_at))
        return value - margin >= high or value + margin <= low


@dataclass(frozen=True)
class Scoring:
    correctness_points: float
    performance_points: float
    curves: dict[str, Curve]


@dataclass(frozen=True)
class Limits:
    setup_s: float = 60.0
    timed_s: float = 30.0
    memory_mb: int = 4096
    # The sandbox's own device memory on CUDA (its outputs and temporaries; the inputs are
    # the trusted side's), watched from outside after every call.
    gpu_memory_mb: int = 8192
    # The import and check calls' budget when a compiler runs in the sandbox (Inductor's C++
    # build, ninja, nvcc, Triton's JIT): setup_s plus the compiler's own time, at most this
    # (graders/grading/compile_clock.py). Compiling takes tens of seconds, outside any timed
    # window.
    compile_s: float = 120.0
    source_bytes: int = 65536
    output_mb: int = 2048  # cap on one saved output file the trusted side will read


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 2
    min_runs: int = 5
    max_runs: int = 50
    target_median_error: float = 0.01  # relative standard error of the median
    verified_samples: int = 2


@dataclass(frozen=True)
class KernelBenchEntry:
    """``[kernelbench]``: the class a KernelBench-style submission defines, and the seed."""

    model: str = "ModelNew"
    seed: int = 42


@dataclass(frozen=True)
class ExerciseSpec:
    slug: str
    chapter: str
    path: Path
    title: dict[str, str]
    entry: str
    signature: str
    devices: tuple[str, ...]
    inputs: tuple[InputSpec, ...]
    sizes: dict[str, SizePlan]
    cost_bytes: Formula
    cost_flops: Formula
    tolerance: dict[str, Tolerance]
    scoring: Scoring
    limits: Limits
    timing: TimingPolicy
    allow_input_mutation: bool
    content_hash: str
    starter: str = field(repr=False)
    kernelbench: KernelBenchEntry | None = None
    check_cases: tuple[CheckCase, ...] = ()
    # The worker kinds that may grade it (see WORKER_KIND_PATTERN); default: ``devices``.
    worker_kinds: tuple[str, ...] = ()
    # ``[rules] forbid``: operators a submission may not run (graders/grading/forbidden_ops.py).
    forbid: tuple[str, ...] = ()
    # ``[rules] routes``: (rule, operator) pairs, the library's other routes to a rule's math.
    routes: tuple[tuple[str, str], ...] = ()

    def forbidden_patterns(self) -> tuple[tuple[str, str], ...]:
        """(rule, operator name) for every rule of ``forbid``: its own name, then its routes.
        A rule dropped from ``forbid`` (an exempt companion) takes its routes with it."""
        own = tuple((rule, rule) for rule in self.forbid)
        return own + tuple((rule, route) for rule, route in self.routes if rule in self.forbid)

    @property
    def max_score(self) -> float:
        return float(self.scoring.correctness_points + self.scoring.performance_points)

    def prompt(self, lang: str = "en") -> str:
        """The prompt in ``lang`` (a language code such as ``zh-hans``), else in its primary
        language (``prompt.zh.md``), else in English."""
        lang = lang.lower()
        for code in (lang, lang.split("-")[0], "en"):
            path = self.path / f"prompt.{code}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        return (self.path / "prompt.en.md").read_text(encoding="utf-8")

    # Paths for the trusted engine only; the code itself is never attached to the spec.
    @property
    def reference_path(self) -> Path:
        return self.path / "reference.py"

    @property
    def naive_path(self) -> Path | None:
        path = self.path / "naive.py"
        return path if path.is_file() else None


# --------------------------------------------------------------------------- parsing


def _formula(table: Table, key: str, text: Any) -> Formula:
    try:
        return Formula(text)
    except FormulaError as exc:
        raise table.fail(key, f"bad formula: {exc}") from None


def _parse_inputs(table: Table) -> tuple[InputSpec, ...]:
    if not table.data:
        raise table.fail("", "at least one input is required")
    inputs = []
    for name in table.data:
        if not name.isidentifier():
            raise table.fail(name, "input names must be Python identifiers")
        item = table.sub(name)
        item.only(("shape", "dtype", "dist", "scale"))
        shape_raw = item.get("shape", list)
        shape = tuple(_formula(item, f"shape[{i}]", dim) for i, dim in enumerate(shape_raw))
        dtype = item.get("dtype", str)
        if dtype not in DTYPE_SIZES:
            raise item.fail("dtype", f"unknown dtype {dtype!r} (known: {sorted(DTYPE_SIZES)})")
        dist = item.get("dist", str, "normal")
        if dist not in DISTRIBUTIONS:
            raise item.fail("dist", f"must be one of {DISTRIBUTIONS}")
        scale = item.number("scale", 1.0, sign="positive")
        inputs.append(InputSpec(name, shape, dtype, dist, scale))
    return tuple(inputs)


def _size_dict(table: Table, key: str, value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise table.fail(key, "expected a non-empty table of size names to integers")
    for name, size in value.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise table.fail(f"{key}.{name}", f"expected an integer >= 0, got {size!r}")
    return dict(value)


def _parse_sizes(table: Table, devices: tuple[str, ...]) -> dict[str, SizePlan]:
    table.only(DEVICE_KINDS)
    plans = {}
    for device in devices:
        plan = table.sub(device)
        plan.only(("check", "timed"))
        check_raw = plan.get("check", list)
        if not check_raw:
            raise plan.fail("check", "at least one check size is required")
        check = tuple(_size_dict(plan, f"check[{i}]", s) for i, s in enumerate(check_raw))
        plans[device] = SizePlan(check, _size_dict(plan, "timed", plan.get("timed", dict)))
    return plans


def _parse_case_sizes(
    case: Table, devices: tuple[str, ...], plans: dict[str, SizePlan]
) -> dict[str, dict[str, int]]:
    if "sizes" not in case:
        return {device: dict(plans[device].check[0]) for device in devices}
    raw = case.get("sizes", dict)
    # Sizes are integers, so a table whose values are all tables is the per-device form.
    if raw and all(isinstance(value, dict) for value in raw.values()):
        per_device = case.sub("sizes")
        per_device.only(devices)
        for device in devices:
            if device not in per_device:
                raise per_device.fail(device, "missing (per-device sizes name every device)")
        return {device: _size_dict(per_device, device, raw[device]) for device in devices}
    single = _size_dict(case, "sizes", raw)
    return {device: dict(single) for device in devices}


def _parse_override(item: Table, base: InputSpec) -> dict[str, str | float]:
    override: dict[str, str | float] = {}
    dist = base.dist
    if "dist" in item:
        dist = item.get("dist", str)
        if dist not in CASE_DISTRIBUTIONS:
            raise item.fail("dist", f"must be one of {tuple(CASE_DISTRIBUTIONS)}, got {dist!r}")
        if dist not in DISTRIBUTIONS and not base.dtype.startswith(("float", "bfloat")):
            raise item.fail("dist", f"{dist!r} needs a floating dtype, not {base.dtype}")
        override["dist"] = dist
    extra = CASE_DISTRIBUTIONS[dist]
    for key in item.data:
        if key not in ("dist", "scale", *extra) and key in ("spread", "shift"):
            raise item.fail(key, f"applies to dist {_owner(key)!r} only, not {dist!r}")
    item.only(("dist", "scale", *extra))
    if "scale" in item:
        override["scale"] = item.number("scale", sign="positive")
    if "spread" in item:
        override["spread"] = item.number("spread", sign="positive")
    if "shift" in item:
        override["shift"] = item.number("shift")
    return override


def _owner(key: str) -> str:
    return next(dist for dist, keys in CASE_DISTRIBUTIONS.items() if key in keys)


def _parse_check_cases(
    top: Table, inputs: tuple[InputSpec, ...], plans: dict[str, SizePlan]
) -> tuple[CheckCase, ...]:
    by_name = {item.name: item for item in inputs}
    devices = tuple(plans)
    cases: list[CheckCase] = []
    for index, raw in enumerate(top.get("check_cases", list, [])):
        case = top.nested(f"check_cases[{index}]", raw)
        case.only(("name", "sizes", "inputs"))
        name = case.identifier("name")
        if any(other.name == name for other in cases):
            raise case.fail("name", f"{name!r} names an earlier case too")
        overrides_table = case.sub("inputs")
        if not overrides_table.data:
            raise overrides_table.fail("", "override at least one input")
        overrides = {}
        for input_name in overrides_table.data:
            if input_name not in by_name:
                raise overrides_table.fail(
                    input_name, f"no such input (inputs: {', '.join(by_name)})"
                )
            overrides[input_name] = _parse_override(
                overrides_table.sub(input_name), by_name[input_name]
            )
        cases.append(CheckCase(name, _parse_case_sizes(case, devices, plans), overrides))
    return tuple(cases)


def _validate_case_shapes(
    file: Path, inputs: tuple[InputSpec, ...], cases: tuple[CheckCase, ...]
) -> None:
    """Every input's shape must evaluate on a case's sizes (a size name missing fails)."""
    for index, case in enumerate(cases):
        for device, sizes in case.sizes.items():
            for item in inputs:
                for dim in item.shape:
                    try:
                        value = dim(sizes)
                    except FormulaError as exc:
                        raise field_error(
                            file, f"check_cases[{index}].sizes", f"{device}: {exc}"
                        ) from None
                    if value < 0:
                        raise field_error(
                            file,
                            f"check_cases[{index}].sizes",
                            f"{device}: negative dimension for input {item.name}",
                        )


def _validate_formulas(
    file: Path,
    formulas: dict[str, Formula],
    sizes: dict[str, SizePlan],
) -> None:
    """Evaluate every formula on every size now, so a typo fails at load, not mid-grading."""
    for device, plan in sizes.items():
        for label, size in [
            *((f"check[{i}]", s) for i, s in enumerate(plan.check)),
            ("timed", plan.timed),
        ]:
            for where, formula in formulas.items():
                try:
                    value = formula(size)
                except FormulaError as exc:
                    raise field_error(
                        file, where, f"bad formula for sizes.{device}.{label}: {exc}"
                    ) from None
                if value < 0:
                    raise field_error(file, where, f"negative for sizes.{device}.{label}")


def _parse_scoring(table: Table, devices: tuple[str, ...]) -> Scoring:
    table.only(("correctness_points", "performance_points", "curve"))
    correctness = table.number("correctness_points")
    performance = table.number("performance_points")
    if correctness < 0 or performance < 0:
        raise table.fail("correctness_points", "points must be >= 0")
    curves_table = table.sub("curve", {})
    curves_table.only(DEVICE_KINDS)
    curves = {}
    for device in devices:
        if device not in curves_table.data:
            if performance > 0:
                raise curves_table.fail(device, "missing (needed when performance_points > 0)")
            continue
        curve = curves_table.sub(device)
        curve.only(("measure", "full_at", "zero_at"))
        measure = curve.get("measure", str)
        if measure not in MEASURES:
            raise curve.fail("measure", f"must be one of {MEASURES}")
        full_at = curve.number("full_at", sign="positive")
        zero_at = curve.number("zero_at")
        if not 0 <= zero_at < full_at:
            raise curve.fail("zero_at", "need 0 <= zero_at < full_at")
        curves[device] = Curve(measure, full_at, zero_at)
    return Scoring(correctness, performance, curves)


def _parse_tolerance(table: Table) -> Tolerance:
    table.only(("atol", "rtol", "small_rtol"))
    atol = table.number("atol", 0.0, sign="non_negative")
    rtol = table.number("rtol", 0.0, sign="non_negative")
    if "small_rtol" not in table:
        return Tolerance(atol, rtol)
    small_rtol = table.number("small_rtol", sign="positive")
    if rtol + small_rtol >= 1.0:
        # Then 0 in place of a small value would be within the tolerance: the key's purpose.
        raise table.fail("small_rtol", f"rtol + small_rtol must be < 1, got {rtol + small_rtol:g}")
    return Tolerance(atol, rtol, small_rtol)


def _parse_limits(table: Table) -> Limits:
    table.only(Limits.__dataclass_fields__)
    d = Limits()
    return Limits(
        setup_s=table.number("setup_s", d.setup_s, sign="positive"),
        timed_s=table.number("timed_s", d.timed_s, sign="positive"),
        memory_mb=int(table.number("memory_mb", d.memory_mb, sign="positive")),
        gpu_memory_mb=int(table.number("gpu_memory_mb", d.gpu_memory_mb, sign="positive")),
        compile_s=table.number("compile_s", d.compile_s, sign="positive"),
        source_bytes=int(table.number("source_bytes", d.source_bytes, sign="positive")),
        output_mb=int(table.number("output_mb", d.output_mb, sign="positive")),
    )


def _parse_timing(table: Table) -> TimingPolicy:
    table.only(TimingPolicy.__dataclass_fields__)
    d = TimingPolicy()
    policy = TimingPolicy(
        warmup=int(table.get("warmup", int, d.warmup)),
        min_runs=int(table.number("min_runs", d.min_runs, sign="positive")),
        max_runs=int(table.number("max_runs", d.max_runs, sign="positive")),
        target_median_error=table.number(
            "target_median_error", d.target_median_error, sign="positive"
        ),
        verified_samples=int(table.number("verified_samples", d.verified_samples, sign="positive")),
    )
    if policy.warmup < 0:
        raise table.fail("warmup", "must be >= 0")
    if policy.max_runs < policy.min_runs:
        raise table.fail("max_runs", "must be >= min_runs")
    return policy


def _parse_kernelbench(table: Table) -> KernelBenchEntry:
    table.only(("model", "seed"))
    d = KernelBenchEntry()
    return KernelBenchEntry(
        model=table.identifier("model", d.model), seed=table.integer("seed", d.seed)
    )


def worker_kind_device(kind: str) -> str:
    """The engine's device ("cpu" or "cuda") that a worker kind grades on; ValueError for a
    name that is not a worker kind."""
    if not WORKER_KIND_PATTERN.fullmatch(kind):
        raise ValueError(
            f"{kind!r} is not a worker kind: use 'cpu', or 'cuda-<model>' in lower case "
            "(e.g. 'cuda-h100')"
        )
    return "cpu" if kind == "cpu" else "cuda"


def worker_kind_allowed(kind: str, allowed: tuple[str, ...]) -> bool:
    """Whether a worker of `kind` may grade an exercise listing `allowed` ("cuda" there
    admits every CUDA worker)."""
    return kind in allowed or ("cuda" in allowed and kind.startswith("cuda-"))


def load_exercise(folder: Path | str) -> ExerciseSpec:
    """Load and validate one exercise folder; raises SpecError naming file and field."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise SpecError(f"{folder}: exercise folder not found")
    for required in REQUIRED_FILES:
        if not (folder / required).is_file():
            raise SpecError(f"{folder / required}: required file is missing")
    top = read_toml(folder / "exercise.toml")
    file = top.file
    top.only(
        (
            "slug",
            "title",
            "entry",
            "signature",
            "devices",
            "worker_kinds",
            "inputs",
            "sizes",
            "cost",
            "tolerance",
            "scoring",
            "limits",
            "timing",
            "correctness",
            "kernelbench",
            "check_cases",
            "rules",
        )
    )

    slug = top.get("slug", str)
    if slug != folder.name:
        raise top.fail("slug", f"{slug!r} must equal the folder name {folder.name!r}")
    title_table = top.sub("title")
    title = {lang: title_table.get(lang, str) for lang in title_table.data}
    if "en" not in title:
        raise title_table.fail("en", "missing")
    entry = top.get("entry", str)
    if not entry.isidentifier():
        raise top.fail("entry", "must be a Python identifier")
    kernelbench = _parse_kernelbench(top.sub("kernelbench")) if "kernelbench" in top else None
    devices_raw = top.get("devices", list)
    if not devices_raw or any(d not in DEVICE_KINDS for d in devices_raw):
        raise top.fail("devices", f"must be a non-empty list drawn from {DEVICE_KINDS}")
    devices = tuple(devices_raw)
    worker_kinds = _parse_worker_kinds(top, devices)

    inputs = _parse_inputs(top.sub("inputs"))
    sizes = _parse_sizes(top.sub("sizes"), devices)
    cost = top.sub("cost")
    cost.only(("bytes", "flops"))
    cost_bytes = _formula(cost, "bytes", cost.get("bytes", (str, int, float)))
    cost_flops = _formula(cost, "flops", cost.get("flops", (str, int, float)))
    formulas = {"cost.bytes": cost_bytes, "cost.flops": cost_flops}
    for item in inputs:
        for i, dim in enumerate(item.shape):
            formulas[f"inputs.{item.name}.shape[{i}]"] = dim
    _validate_formulas(file, formulas, sizes)
    check_cases = _parse_check_cases(top, inputs, sizes)
    forbid, routes = _parse_rules(top.sub("rules", {}))
    _validate_case_shapes(file, inputs, check_cases)

    tol_table = top.sub("tolerance", {})
    tol_table.only(DTYPE_SIZES)
    tolerance = {}
    for dtype in tol_table.data:
        tolerance[dtype] = _parse_tolerance(tol_table.sub(dtype))

    correctness = top.sub("correctness", {})
    correctness.only(("allow_input_mutation",))

    return ExerciseSpec(
        slug=slug,
        chapter=folder.parent.name,
        path=folder,
        title=title,
        entry=entry,
        signature=top.get("signature", str, f"{entry}(...)"),
        devices=devices,
        inputs=inputs,
        sizes=sizes,
        cost_bytes=cost_bytes,
        cost_flops=cost_flops,
        tolerance=tolerance,
        scoring=_parse_scoring(top.sub("scoring"), devices),
        limits=_parse_limits(top.sub("limits", {})),
        timing=_parse_timing(top.sub("timing", {})),
        allow_input_mutation=correctness.get("allow_input_mutation", bool, False),
        # Caches and compiled files are not content: editing nothing must not make a version.
        # The hash covers exercise.toml whole, so its check cases too.
        content_hash=content_hash(folder, IGNORED_PARTS, ignored_suffixes=(".pyc",)),
        starter=(folder / "starter.py").read_text(encoding="utf-8"),
        kernelbench=kernelbench,
        check_cases=check_cases,
        worker_kinds=worker_kinds,
        forbid=forbid,
        routes=routes,
    )


OPERATOR_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _parse_rules(table: Table) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``[rules]``: ``forbid`` (aten operator names a submission may not run) and ``routes``
    (per forbidden name, the library's other operators for the same math)."""
    table.only(("forbid", "routes"))
    forbid = _operator_names(table, "forbid", table.get("forbid", list, []))
    routes_table = table.sub("routes", {})
    routes: list[tuple[str, str]] = []
    for rule in routes_table.data:
        if rule not in forbid:
            raise routes_table.fail(
                rule, f"{rule!r} is not in forbid: routes lead to a forbidden operator's math"
            )
        names = _operator_names(routes_table, rule, routes_table.get(rule, list))
        routes += [(rule, name) for name in names if name != rule]
    return forbid, tuple(routes)


def _operator_names(table: Table, key: str, names: list[Any]) -> tuple[str, ...]:
    """A list of aten operator names, as ``forbid`` and each ``routes`` entry take them."""
    for name in names:
        if not isinstance(name, str):
            raise table.fail(key, f"{name!r} is not a string: list operator names in quotes")
        if name.startswith("aten::"):
            raise table.fail(
                key, f"write {name.removeprefix('aten::')!r} without the 'aten::' prefix"
            )
        if not OPERATOR_NAME.fullmatch(name.lstrip("_")):
            raise table.fail(
                key,
                f"{name!r} is not an operator name: use the aten operator's name in lower case "
                "with underscores, e.g. 'softmax', 'layer_norm' or 'scaled_dot_product_attention'",
            )
    # A leading underscore names an internal variant, which the base name matches anyway.
    cleaned = tuple(name.lstrip("_") for name in names)
    if len(set(cleaned)) != len(cleaned):
        raise table.fail(key, "lists an operator twice")
    return cleaned


def _parse_worker_kinds(top: Table, devices: tuple[str, ...]) -> tuple[str, ...]:
    """``worker_kinds``: which workers may grade it; each must grade one of ``devices``."""
    if "worker_kinds" not in top:
        return devices
    kinds = top.get("worker_kinds", list)
    if not kinds or len(set(kinds)) != len(kinds):
        raise top.fail("worker_kinds", "must be a non-empty list without repeats")
    for kind in kinds:
        if not isinstance(kind, str) or not WORKER_KIND_PATTERN.fullmatch(kind):
            raise top.fail(
                "worker_kinds",
                f"{kind!r} is not a worker kind: use 'cpu', 'cuda' (any CUDA worker) or "
                "'cuda-<model>' in lower case, e.g. 'cuda-h100'",
            )
        if worker_kind_device(kind) not in devices:
            raise top.fail(
                "worker_kinds",
                f"{kind!r} grades on {worker_kind_device(kind)!r}, which 'devices' does not list",
            )
    return tuple(kinds)


def iter_exercises(root: Path | str) -> list[ExerciseSpec]:
    """Every folder under ``root`` holding an exercise.toml, sorted by path."""
    root = Path(root)
    if not root.is_dir():
        raise SpecError(f"{root}: exercises root not found")
    folders = sorted(
        p.parent for p in root.rglob("exercise.toml") if "samples" not in p.relative_to(root).parts
    )
    specs = [load_exercise(folder) for folder in folders]
    slugs = SlugRegistry()
    for spec in specs:
        slugs.claim(spec.slug, spec.path, "exercise.toml")
    return specs


def default_root() -> Path:
    env = os.environ.get("GRADERS_EXERCISES_ROOT")
    return Path(env) if env else REPO_ROOT / "exercises"


def find_exercise(slug: str, root: Path | str | None = None) -> ExerciseSpec:
    """Find an exercise by slug; raises LookupError when no folder has that slug."""
    root = Path(root) if root is not None else default_root()
    # Fast path: folders are named after their slug, so load just that one when present.
    for toml in sorted(root.glob(f"*/{slug}/exercise.toml")):
        spec = load_exercise(toml.parent)
        if spec.slug == slug:
            return spec
    for spec in iter_exercises(root):
        if spec.slug == slug:
            return spec
    raise LookupError(f"no exercise with slug {slug!r} under {root}")
