"""Suspicion flags on timings: numbers too good to be true are marked, with the numbers, so they are not used as
rewards until explained.

* ``FLAG_UNSYNCED_WORK`` (blocking) — the device-synchronized wall clock per call is much larger than the
  event time: the candidate does work outside the stream the events are recorded on (a side stream), so the
  events measure a fraction of it;
* ``FLAG_BEYOND_CEILING`` (blocking) — achieved TFLOP/s or GB/s above this GPU's measured ceiling by more than
  the margin: the declared work cannot have been done in that time;
* ``FLAG_SPEEDUP_SUSPICIOUS`` (blocking) — faster than a baseline by more than `Thresholds.max_speedup`;
* ``FLAG_TIMING_NOISY`` — the interquartile range exceeds `Thresholds.max_spread` of the median.

Speedups are baseline median / candidate median (above 1 means faster than the baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from argus.eval.results import Flag


@dataclass(frozen=True)
class Thresholds:
    """When a timing is suspicious (see the module docstring)."""

    max_speedup: float = 10.0
    ceiling_margin: float = 1.15
    unsynced_ratio: float = 1.5
    unsynced_slack_ms: float = 0.05
    max_spread: float = 0.25


def speedups(candidate_ms: float, baselines_ms: dict[str, float | None]) -> dict[str, float | None]:
    """Baseline time / candidate time for each baseline (None where the baseline has no time)."""
    return {name: (ms / candidate_ms if ms and candidate_ms > 0 else None) for name, ms in baselines_ms.items()}


def suspicion_flags(
    timing: dict[str, Any],
    *,
    baselines_ms: dict[str, float | None] | None = None,
    figures: dict[str, float | None] | None = None,
    ceilings: dict[str, Any] | None = None,
    thresholds: Thresholds = Thresholds(),
) -> list[Flag]:
    """The flags raised by one candidate timing.

    Args:
        timing: ``argus.eval.timing.Timing.to_json()`` (``median_ms``, ``wall_ms``, ``spread``, ``method``).
        baselines_ms: median of each baseline, by name.
        figures: achieved ``tflops`` / ``gbps`` (`argus.eval.timing.throughput`).
        ceilings: measured ``bf16_gemm_tflops`` / ``copy_gbps`` (`argus.eval.ceilings`).
    """
    flags: list[Flag] = []
    median = float(timing["median_ms"])
    wall = timing.get("wall_ms")
    if wall is not None and median >= 0 and timing.get("method") != "cuda-graph":
        if wall > thresholds.unsynced_ratio * median + thresholds.unsynced_slack_ms:
            flags.append(
                Flag(
                    "FLAG_UNSYNCED_WORK",
                    f"a device-synchronized wall clock measured {wall:.4g} ms per call but the timing events "
                    f"{median:.4g} ms: work runs outside the timed stream",
                    True,
                    {"wall_ms": wall, "event_median_ms": median, "ratio": wall / median if median > 0 else None},
                )
            )
    if figures and ceilings:
        for figure, ceiling_key, unit in (("tflops", "bf16_gemm_tflops", "TFLOP/s"), ("gbps", "copy_gbps", "GB/s")):
            achieved, ceiling = figures.get(figure), ceilings.get(ceiling_key)
            if achieved and ceiling and achieved > thresholds.ceiling_margin * ceiling:
                flags.append(
                    Flag(
                        "FLAG_BEYOND_CEILING",
                        f"{achieved:.4g} {unit} exceeds this GPU's measured ceiling of {ceiling:.4g} {unit} "
                        f"(margin {thresholds.ceiling_margin:g})",
                        True,
                        {"figure": figure, "achieved": achieved, "ceiling": ceiling},
                    )
                )
    if baselines_ms:
        fast = {
            name: s
            for name, s in speedups(median, baselines_ms).items()
            if s is not None and s > thresholds.max_speedup
        }
        if fast:
            shown = ", ".join(f"{s:.1f}x over {name}" for name, s in sorted(fast.items()))
            flags.append(
                Flag(
                    "FLAG_SPEEDUP_SUSPICIOUS",
                    f"{shown} (threshold {thresholds.max_speedup:g}x)",
                    True,
                    {"speedups": fast, "threshold": thresholds.max_speedup},
                )
            )
    spread = timing.get("spread")
    if spread is not None and spread > thresholds.max_spread:
        flags.append(
            Flag(
                "FLAG_TIMING_NOISY",
                f"interquartile range is {spread:.0%} of the median (threshold {thresholds.max_spread:.0%})",
                False,
                {"spread": spread},
            )
        )
    return flags
