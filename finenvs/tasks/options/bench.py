"""FinOptions-v0's bench section: its chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finenvs.charts import bars, figure, have_matplotlib, save_png


def options_plot(section: dict[str, Any], folder: Path) -> list[Path]:
    """FinOptions-v0's section chart: the four scored dimensions per baseline (its bench section's ``draw``)."""
    if not have_matplotlib():
        return []
    fig = figure(9, 4)
    ax = fig.subplots()
    dims = ("pnl", "greeks", "strategy", "risk")
    bars(ax, ["P&L", "Greeks", "Strategy", "Risk"],
          {name: [s["dimensions"][d] for d in dims] for name, s in section["options"].items()},
          "% of the dimension's weight earned")
    ax.set_title("FinOptions-v0: the four scored dimensions (generated tasks)", fontsize=11)
    path = Path(folder) / "options_dimensions.png"
    return [save_png(fig, path)]


__all__ = ["options_plot"]
