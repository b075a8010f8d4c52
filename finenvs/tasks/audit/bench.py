"""FinAudit-v0's bench section: its chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finenvs.charts import figure, have_matplotlib, outside_legend, save_png


def audit_plot(section: dict[str, Any], folder: Path) -> list[Path]:
    """FinAudit-v0's section chart: the answer classes of each baseline (its bench section's ``draw``)."""
    if not have_matplotlib():
        return []
    fig = figure(9, 3)
    ax = fig.subplots()
    names = list(section["policies"])
    left = [0.0] * len(names)
    # colour-blind-safe (Okabe and Ito): correct green, stated-value error grey, the two errors orange and vermillion
    colours = {"ACC": "#009E73", "SER": "#999999", "EER": "#E69F00", "CER": "#D55E00"}
    for key, colour in colours.items():
        vals = [100 * section["policies"][n][key] for n in names]
        ax.barh(names, vals, left=left, color=colour, label=key)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of answers (ACC + SER + EER + CER = 100)")
    ax.set_title(f"FinAudit-v0: answer classes over {section['n']} eval instances", fontsize=11)
    outside_legend(ax, below=True, ncol=4)
    path = Path(folder) / "audit_breakdown.png"
    return [save_png(fig, path)]


__all__ = ["audit_plot"]
