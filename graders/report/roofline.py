"""Roofline figures: achieved bandwidth/throughput and the bound that applies."""

from __future__ import annotations

from typing import Literal, TypedDict

IMPLAUSIBLE_FACTOR = 1.5  # above 1.5x the measured peak, the timing cannot be trusted


class Figures(TypedDict):
    """Where one timed call lands on the roofline (part of the report's performance)."""

    bytes: float
    flops: float
    achieved_gbps: float | None
    achieved_flops_per_s: float | None
    peak_gbps: float | None
    fraction_of_peak: float | None
    fraction_of_peak_flops: float | None
    arithmetic_intensity: float | None
    roofline_bound_s: float | None
    roof: Literal["memory", "compute"] | None
    fraction_of_roofline: float | None


def figures(
    nbytes: float, flops: float, median_s: float, peak_gbps: float | None, peak_flops: float | None
) -> Figures:
    achieved_gbps = nbytes / median_s / 1e9 if median_s > 0 else None
    achieved_flops = flops / median_s if median_s > 0 else None
    memory_bound_s = nbytes / (peak_gbps * 1e9) if peak_gbps else None
    compute_bound_s = flops / peak_flops if peak_flops else None
    candidates: tuple[tuple[Literal["memory", "compute"], float | None], ...] = (
        ("memory", memory_bound_s),
        ("compute", compute_bound_s),
    )
    bounds = {k: v for k, v in candidates if v}
    roof = max(bounds, key=bounds.__getitem__) if bounds else None
    bound_s = bounds[roof] if roof else None
    return {
        "bytes": nbytes,
        "flops": flops,
        "achieved_gbps": achieved_gbps,
        "achieved_flops_per_s": achieved_flops,
        "peak_gbps": peak_gbps,
        "fraction_of_peak": (achieved_gbps / peak_gbps) if peak_gbps and achieved_gbps else None,
        "fraction_of_peak_flops": (achieved_flops / peak_flops)
        if peak_flops and achieved_flops
        else None,
        "arithmetic_intensity": flops / nbytes if nbytes else None,
        "roofline_bound_s": bound_s,
        "roof": roof,
        "fraction_of_roofline": (bound_s / median_s) if bound_s and median_s > 0 else None,
    }


def implausible(fraction_of_roofline: float | None) -> bool:
    """Faster than the roofline allows by a clear margin: a cheat or a broken timer."""
    fraction = fraction_of_roofline
    return fraction is not None and fraction > IMPLAUSIBLE_FACTOR
