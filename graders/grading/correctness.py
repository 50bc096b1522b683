"""Compare a submission's output with the reference output (all on the trusted side)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from graders.spec.exercise import Tolerance

# Used when the exercise gives no tolerance for a dtype; integer types compare exactly.
DEFAULT_TOLERANCE: dict[str, Tolerance] = {
    "float64": Tolerance(1e-10, 1e-8),
    "float32": Tolerance(1e-6, 1e-5),
    "float16": Tolerance(1e-3, 1e-3),
    "bfloat16": Tolerance(1e-2, 1e-2),
}


@dataclass
class Comparison:
    passed: bool
    problem: str | None = None  # type | shape | dtype | device | values | mutation
    message: str | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatch_fraction: float | None = None
    first_mismatch: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def check_description(meta: dict[str, Any], expected: torch.Tensor, device: str) -> Comparison:
    """Type, shape, dtype and device from the harness' description, before any file is read."""
    if meta.get("type") != "Tensor":
        return Comparison(
            False,
            "type",
            f"Your function returned a {meta.get('type')}; it must return a torch.Tensor.",
        )
    shape, want_shape = tuple(meta["shape"]), tuple(expected.shape)
    if shape != want_shape:
        return Comparison(
            False, "shape", f"Your output has shape {shape} but shape {want_shape} is expected."
        )
    if meta["dtype"] != dtype_name(expected.dtype):
        return Comparison(
            False,
            "dtype",
            f"Your output has dtype {meta['dtype']} but "
            f"{dtype_name(expected.dtype)} is expected (no lower precision).",
        )
    if meta["device"] != device:
        return Comparison(
            False,
            "device",
            f"Your output is on {meta['device']} but must be on {device}, where the inputs are.",
        )
    return Comparison(True)


def tolerance_for(dtype: torch.dtype, table: dict[str, Tolerance]) -> Tolerance:
    name = dtype_name(dtype)
    return table.get(name) or DEFAULT_TOLERANCE.get(name) or Tolerance(0.0, 0.0)


# Outputs of millions of elements are checked several times per grading: they are compared
# a chunk at a time, so the float64 temporaries stay in the last-level cache instead of
# streaming several full-size copies through memory (about 5x faster for 16M floats).
_CHUNK = 1 << 16


@dataclass
class _Errors:
    """Running totals over the chunks of one comparison."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    all_finite: bool = True
    mismatched: int = 0
    first: int | None = None  # flat index of the first mismatch


def allowance(magnitude: torch.Tensor, tol: Tolerance, floor: float) -> torch.Tensor:
    """The error each expected value (``magnitude`` = its absolute value) may have.

    ``atol + rtol * |e|`` as torch.allclose, unless the tolerance sets ``small_rtol``: then
    the absolute part is at most ``small_rtol * |e|``, so a value far below ``atol`` is still
    compared relatively and 0 in its place is wrong (softmax: most probabilities of a row
    of large logits are far below any useful atol). ``floor`` (the dtype's smallest normal
    number, where such a tolerance applies) lets values that float hardware may flush to
    zero be zero.
    """
    if tol.small_rtol is None:
        return magnitude * tol.rtol + tol.atol
    absolute = (magnitude * tol.small_rtol).clamp_max_(tol.atol).add_(floor)
    return absolute.add_(magnitude * tol.rtol)


def _compare_chunk(
    g: torch.Tensor, e: torch.Tensor, tol: Tolerance, start: int, into: _Errors, floor: float
) -> None:
    g, e = g.to(torch.float64), e.to(torch.float64)
    abs_err = (g - e).abs_()
    magnitude = e.abs()
    close = abs_err <= allowance(magnitude, tol, floor)
    max_abs = float(abs_err.max())  # NaN or inf when any error is not finite
    if not math.isfinite(max_abs):
        # isclose(equal_nan=True): NaN matches NaN and an infinity matches itself.
        close |= (g == e) | (torch.isnan(g) & torch.isnan(e))
        abs_err = torch.where(torch.isfinite(abs_err), abs_err, torch.zeros_like(abs_err))
        into.all_finite = False
    else:
        into.max_abs = max(into.max_abs, max_abs)
    if into.all_finite:
        rel_err = abs_err.div_(magnitude.clamp_min_(torch.finfo(torch.float64).tiny))
        rel_err.masked_fill_(e == 0, 0.0)
        into.max_rel = max(into.max_rel, float(rel_err.max()))
    if not bool(close.all()):
        into.mismatched += int(close.numel() - int(close.sum()))
        if into.first is None:
            into.first = start + int(torch.nonzero(~close)[0])


def compare(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> Comparison:
    """Element-wise check like torch.allclose, with the figures a student needs to debug."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        # The description can lie (the file is what counts), so check again.
        return Comparison(
            False,
            "shape" if got.shape != expected.shape else "dtype",
            f"The saved output ({tuple(got.shape)}, {dtype_name(got.dtype)}) does "
            f"not match the expected ({tuple(expected.shape)}, "
            f"{dtype_name(expected.dtype)}).",
        )
    expected = expected.to(got.device)  # compared where the output is: no host copy of a GPU's
    if got.numel() == 0:
        return Comparison(True, max_abs_err=0.0, max_rel_err=0.0, mismatch_fraction=0.0)
    if torch.equal(got, expected):  # bit-for-bit the reference's: one cheap pass suffices
        return Comparison(True, max_abs_err=0.0, max_rel_err=0.0, mismatch_fraction=0.0)
    flat_got, flat_expected = got.reshape(-1), expected.reshape(-1)
    errors = _Errors()
    floor = smallest_normal(expected.dtype)
    for start in range(0, flat_got.numel(), _CHUNK):
        stop = start + _CHUNK
        _compare_chunk(flat_got[start:stop], flat_expected[start:stop], tol, start, errors, floor)
    mismatched = errors.mismatched
    result = Comparison(
        passed=mismatched == 0,
        max_abs_err=errors.max_abs if errors.all_finite else float("inf"),
        max_rel_err=errors.max_rel if errors.all_finite else float("inf"),
        mismatch_fraction=mismatched / got.numel(),
    )
    if mismatched and errors.first is not None:
        flat = errors.first
        index = list(torch.unravel_index(torch.tensor(flat), tuple(got.shape)))
        index_tuple = [int(i) for i in index]
        got_value, want_value = float(flat_got[flat]), float(flat_expected[flat])
        result.problem = "values"
        result.first_mismatch = {
            "index": index_tuple,
            "got": _jsonable(got_value),
            "expected": _jsonable(want_value),
        }
        result.message = (
            f"{mismatched} of {got.numel()} values ({100 * mismatched / got.numel():.3g}%) are "
            f"wrong beyond {describe(tol)}; first at index "
            f"{tuple(index_tuple)}: got {got_value!r}, expected {want_value!r}."
            + _small_value_hint(got_value, want_value, tol)
        )
    return result


def describe(tol: Tolerance) -> str:
    """The tolerance as a student's message states it."""
    text = f"atol={tol.atol:g}, rtol={tol.rtol:g}"
    if tol.small_rtol is not None:
        text += (
            f" (values below {tol.atol / tol.small_rtol:g} within "
            f"{100 * tol.small_rtol:g}% of themselves)"
        )
    return text


def _small_value_hint(got: float, want: float, tol: Tolerance) -> str:
    """Why a small value left at 0 is wrong, where the tolerance compares it relatively."""
    if tol.small_rtol is None or got != 0.0 or not 0.0 < abs(want) < tol.atol / tol.small_rtol:
        return ""
    return (
        " Small values are compared relative to themselves, not to atol: every one must be "
        "computed, none left at 0."
    )


def smallest_normal(dtype: torch.dtype) -> float:
    """The dtype's smallest normal number (0 for integers): below it GPUs flush to zero."""
    return float(torch.finfo(dtype).tiny) if dtype.is_floating_point else 0.0


def mutated_input(
    before: list[torch.Tensor], after: dict[str, torch.Tensor], names: list[str]
) -> str | None:
    """Name of the first input whose contents changed during the call, if any."""
    for name, original in zip(names, before, strict=True):
        now = after.get(name)
        if not isinstance(now, torch.Tensor) or now.shape != original.shape:
            return name
        now = now.to(original.device)  # on the device the inputs live on (no host copy)
        if not torch.equal(now, original) and not (
            original.is_floating_point()
            and torch.equal(torch.isnan(now), torch.isnan(original))
            and torch.equal(now.nan_to_num(), original.nan_to_num())
        ):
            return name
    return None


def _jsonable(value: float) -> float | str:
    """JSON has no NaN/Infinity; keep them readable as strings."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return value
