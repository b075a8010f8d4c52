"""The 16 weekly metrics of FinReport-v0 as a vocabulary: names by block, units, and how a report writes them.

Pure data and formatting. The FinReport-v0 core computes the values
(:func:`finenvs.tasks.report.core.weekly_metrics`, which documents each definition);
the report tool ``get_weekly_metrics`` groups them by block and adds these display
strings, and the report-quality checks read numbers back in the same units.
"""

from __future__ import annotations

import math

METRIC_BLOCKS: dict[str, tuple[str, ...]] = {
    "single_stock": ("weekly_return", "volatility_20d", "max_daily_move", "volume_change", "dist_52w_high",
                     "dist_52w_low"),
    "momentum": ("return_4w", "return_12w", "rsi_14", "macd_histogram", "sma50_gap"),
    "sector_relative": ("peer_weekly_return", "excess_weekly_return", "beta_60d", "correlation_60d",
                        "relative_strength_12w"),
}
METRIC_NAMES: tuple[str, ...] = tuple(name for block in METRIC_BLOCKS.values() for name in block)
#: Metrics that are fractions (reported in percent); the others are plain numbers.
PERCENT_METRICS = frozenset(METRIC_NAMES) - {"rsi_14", "macd_histogram", "beta_60d", "correlation_60d"}


def metric_display(name: str, value: float | None) -> str:
    """How a metric is written in a report: percent with 2 decimals, or a plain number."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if name in ("volatility_20d", "dist_52w_low"):
        return f"{100.0 * value:.2f}%"
    if name in PERCENT_METRICS:
        return f"{100.0 * value:+.2f}%"
    if name == "rsi_14":
        return f"{value:.2f}"
    return f"{value:+.4f}" if name == "macd_histogram" else f"{value:.3f}"


__all__ = ["METRIC_BLOCKS", "METRIC_NAMES", "PERCENT_METRICS", "metric_display"]
