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


def _figure(width_px: int, height_px: int) -> tuple[Any, Any]:
    """A matplotlib Figure on an Agg canvas (no pyplot state) of the given pixel size."""
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    return fig, FigureCanvasAgg(fig)


def legend_outside(ax: Any) -> None:
    """The axes' legend to the right of the data (top-aligned), so it never covers a line or a mark."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)


def _rgb(fig: Any, canvas: Any) -> np.ndarray:
    """Lay out, draw and return the canvas as an RGB uint8 array."""
    fig.autofmt_xdate()
    fig.tight_layout()
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return np.ascontiguousarray(rgba[:, :, :3])


def held_spans(positions: Any) -> list[tuple[int, int, int]]:
    """``(first, last, side)`` of each run of days ``first..last`` (indices from 1) held on one side (+1 long, -1
    short): day ``i`` covers ``x[i - 1]..x[i]``, so a run is one span ``x[first - 1]..x[last]``."""
    spans: list[tuple[int, int, int]] = []
    for i in range(1, len(positions)):
        side = int(positions[i])
        if side not in POSITION_COLOURS:
            continue
        if spans and spans[-1][1] == i - 1 and spans[-1][2] == side:
            spans[-1] = (spans[-1][0], i, side)
        else:
            spans.append((i, i, side))
    return spans


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
    fig, canvas = _figure(width_px, height_px)
    ax_price, ax_eq, ax_dd = fig.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [2, 2, 1]})
    x = dates.astype("datetime64[D]").astype("O") if len(dates) else np.arange(0)
    ax_price.plot(x, close, color="#1f77b4", lw=1.2)
    for start, end, side in held_spans(positions):  # one patch per run of days held on one side
        ax_price.axvspan(x[start - 1], x[end], color=POSITION_COLOURS[side], alpha=0.15, lw=0)
    ax_price.set_ylabel("close")
    ax_price.set_title(f"{title}  (green long, red short)", fontsize=10)
    ax_eq.plot(x, equity, color="#ff7f0e", lw=1.2)
    ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
    ax_eq.set_ylabel("equity")
    ax_dd.fill_between(x, -100 * drawdown_path(np.asarray(equity, dtype=float)), 0, color="#d62728", alpha=0.4)
    ax_dd.set_ylabel("drawdown %")
    return _rgb(fig, canvas)


def trade_marks(positions: np.ndarray, *, closed_at_end: bool = True) -> tuple[list[int], list[int], list[int]]:
    """Closes where positions open and close.

    ``positions[k]`` is the position held over day k-1 -> k (``positions[0]`` is
    the start); a change between ``positions[k-1]`` and ``positions[k]`` is a
    trade at close ``k - 1``. With ``closed_at_end`` a position still held at
    the last index is exited there (the window's last close closes it).

    Returns:
        ``(long_entries, short_entries, exits)``: indices of the closes where a +1
        position opened, a -1 position opened, and a position was exited (a
        reversal is both an exit and an entry).
    """
    longs: list[int] = []
    shorts: list[int] = []
    exits: list[int] = []
    pos = np.asarray(positions)
    for k in range(1, len(pos)):
        before, after = int(pos[k - 1]), int(pos[k])
        if before == after:
            continue
        if before != 0:
            exits.append(k - 1)
        if after == 1:
            longs.append(k - 1)
        elif after == -1:
            shorts.append(k - 1)
    if closed_at_end and len(pos) and int(pos[-1]) != 0:  # the last close closes the position
        exits.append(len(pos) - 1)
    return longs, shorts, exits


def draw_spread(
    ax: Any, x: Any, spread: np.ndarray, positions: np.ndarray, *, closed_at_end: bool = True, label: str = "log(P_i / P_j)"
) -> None:
    """Plot a pair's log price ratio with entry (triangles) and exit (crosses) marks on ``ax``."""
    spread = np.asarray(spread, dtype=float)
    ax.plot(x, spread, color="#1f77b4", lw=1.1)
    longs, shorts, exits = trade_marks(positions, closed_at_end=closed_at_end)
    if longs:
        ax.scatter([x[k] for k in longs], spread[longs], marker="^", color="#2ca02c", s=36, zorder=3,
                   label="enter LONG_SHORT")
    if shorts:
        ax.scatter([x[k] for k in shorts], spread[shorts], marker="v", color="#d62728", s=36, zorder=3,
                   label="enter SHORT_LONG")
    if exits:
        ax.scatter([x[k] for k in exits], spread[exits], marker="x", color="black", s=30, zorder=3, label="exit")
    ax.set_ylabel(label)
    if longs or shorts or exits:
        legend_outside(ax)


def spread_chart(
    *,
    dates: np.ndarray,
    spread: np.ndarray,
    positions: np.ndarray,
    equity: np.ndarray,
    title: str,
    closed_at_end: bool = True,
    spread_label: str = "log(P_i / P_j)",
    width_px: int = 960,
    height_px: int = 560,
) -> np.ndarray:
    """A pair's spread with entries and exits, and the book's equity, as an RGB uint8 array."""
    fig, canvas = _figure(width_px, height_px)
    ax_spread, ax_eq = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    x = dates.astype("datetime64[D]").astype("O") if len(dates) else np.arange(0)
    draw_spread(ax_spread, x, spread, positions, closed_at_end=closed_at_end, label=spread_label)
    ax_spread.set_title(title, fontsize=10)
    ax_eq.plot(x, equity, color="#ff7f0e", lw=1.2)
    ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
    ax_eq.set_ylabel("equity")
    return _rgb(fig, canvas)
