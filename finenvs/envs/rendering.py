"""Charts for ``render("rgb_array")`` and the scorecard (matplotlib, imported lazily)."""

from __future__ import annotations

from typing import Any

import numpy as np

POSITION_COLOURS = {1: "#2ca02c", -1: "#d62728"}


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "charts need matplotlib: pip install 'finenvs[plot]' (or finenvs[all])"
        ) from exc
    return matplotlib


def drawdown_path(equity: np.ndarray) -> np.ndarray:
    """1 - equity / running peak, element-wise (0 where the peak is 0)."""
    peak = np.maximum.accumulate(equity)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(peak > 0, 1.0 - equity / peak, 0.0)


def equity_chart(
    *,
    dates: np.ndarray,
    close: np.ndarray,
    equity: np.ndarray,
    positions: np.ndarray,
    title: str,
    width_px: int = 960,
    height_px: int = 640,
) -> np.ndarray:
    """Price with held positions shaded, equity, and drawdown, as an RGB uint8 array."""
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax_price, ax_eq, ax_dd = fig.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [2, 2, 1]})
    x = dates.astype("datetime64[D]").astype("O") if len(dates) else np.arange(0)
    ax_price.plot(x, close, color="#1f77b4", lw=1.2)
    for i in range(1, len(positions)):
        colour = POSITION_COLOURS.get(int(positions[i]))
        if colour is not None:
            ax_price.axvspan(x[i - 1], x[i], color=colour, alpha=0.15, lw=0)
    ax_price.set_ylabel("close")
    ax_price.set_title(f"{title}  (green long, red short)", fontsize=10)
    ax_eq.plot(x, equity, color="#ff7f0e", lw=1.2)
    ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
    ax_eq.set_ylabel("equity")
    ax_dd.fill_between(x, -100 * drawdown_path(np.asarray(equity, dtype=float)), 0, color="#d62728", alpha=0.4)
    ax_dd.set_ylabel("drawdown %")
    fig.autofmt_xdate()
    fig.tight_layout()
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return np.ascontiguousarray(rgba[:, :, :3])
