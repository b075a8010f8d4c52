"""FinQA-v0's bench section: its chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finenvs.charts import bars, figure, have_matplotlib, save_png


def qa_plot(section: dict[str, Any], folder: Path) -> list[Path]:
    """FinQA-v0's section chart: the score by topic of each baseline (its bench section's ``draw``)."""
    if not have_matplotlib():
        return []
    policies = section["policies"]
    topics = sorted({t for s in policies.values() for t in s["topics"]})
    fig = figure(max(9, 0.45 * len(topics) + 3), 4.5)
    ax = fig.subplots()
    bars(ax, topics, {n: [s["topics"].get(t, {}).get("score") for t in topics] for n, s in policies.items()},
          "score 0-100")
    for label in ax.get_xticklabels():  # each topic name ends under its own bars
        label.set(rotation=60, ha="right", rotation_mode="anchor", fontsize=7)
    ax.set_title("FinQA-v0: score by topic (eval split)", fontsize=11)
    path = Path(folder) / "qa_topics.png"
    return [save_png(fig, path)]


__all__ = ["qa_plot"]
