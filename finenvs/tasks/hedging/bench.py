"""FinHedging-v0's bench section: one episode per policy on the universe, its selected pair and the pair's spread."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.tasks.market_section import (
    HERCULEAN_COLUMNS,
    STANDARD_COLUMNS,
    UNIVERSE,
    EpisodePart,
    EpisodeResult,
    MarketSection,
    metric_cells,
    policy_label,
)
from finenvs.tasks.section import SectionView
from finenvs.text.markdown import fmt_number, md_table, md_text


@dataclass(frozen=True)
class PairEpisode(EpisodePart):
    """A FinHedging-v0 episode's own part: the selected ordered pair (``"AAPL/MSFT"``; long the first on LONG_SHORT)
    and the pair's log price ratio on the episode's dates."""

    pair: str | None = None
    spread: list[float] | None = field(default=None, repr=False)

    @classmethod
    def of_episode(cls, env: Any, info: Mapping[str, Any]) -> PairEpisode:
        spread_path = getattr(env, "spread_path", None)
        spread = spread_path() if callable(spread_path) else None
        return cls(info.get("pair"), None if spread is None else spread.tolist())

    @classmethod
    def of_metrics(cls, metrics: Mapping[str, Any]) -> PairEpisode:
        return cls(metrics.get("pair"), metrics.get("spread"))

    def row(self) -> dict[str, Any]:
        return {} if self.pair is None else {"pair": self.pair}

    @property
    def label(self) -> str | None:
        return self.pair


def _pair(r: EpisodeResult) -> str | None:
    return r.extra.pair if isinstance(r.extra, PairEpisode) else None


@dataclass(frozen=True)
class PairsSection(MarketSection):
    """The market tables of a pairs env: one row per policy with its selected pair, and each pair's spread."""

    def markdown(self, view: SectionView) -> list[str]:
        env_id, rows = view.task.env_id, view.rows
        universe = sorted({s for r in rows for s in (_pair(r) or "").split("/") if s})
        lines = [
            f"## {env_id}",
            "",
            f"One episode per policy on the universe; the pair is each policy's own choice on the first day "
            f"(long the first symbol on LONG_SHORT). Pairs chosen from: {', '.join(md_text(s) for s in universe)}.",
            "",
            md_table(
                ["policy", "pair", *(c[1] for c in STANDARD_COLUMNS), *(c[1] for c in HERCULEAN_COLUMNS),
                 "in market %", "positions", "look-ahead"],
                [
                    [md_text(policy_label(r)), md_text(_pair(r) or ""), *metric_cells(r.standard, STANDARD_COLUMNS),
                     *metric_cells(r.herculean, HERCULEAN_COLUMNS), fmt_number(r.time_in_market, 100.0),
                     str(r.round_trips), str(r.look_ahead_attempts)]
                    for r in sorted(rows, key=lambda r: (r.oracle, r.policy))
                ],
            ),
            "",
        ]
        if any(r.oracle for r in rows):
            lines += [
                "Rows marked (oracle) read the window's future prices to choose their pair: an upper bound on "
                "pair choice for the same trading rule, not a baseline a strategy could reach live.",
                "",
            ]
        lines += [*view.agents, *self.agent_episode_table(view)]
        return lines + view.charts.take(prefix="spread_", contains=env_id) + view.charts.take(prefix="equity_",
                                                                                              contains=env_id)

    def episode_label(self, r: EpisodeResult) -> str:
        pair = _pair(r)
        return r.symbol if pair is None else pair

    def chart_key(self, r: EpisodeResult) -> str:
        return UNIVERSE if _pair(r) is not None else r.symbol

    def curve_label(self, r: EpisodeResult) -> str:
        pair = _pair(r)
        return policy_label(r) + (f" {pair}" if pair else "")

    def summary_charts(self, view: SectionView) -> list[Path]:
        """One panel per policy: its pair's log price ratio with entries and exits."""
        from finenvs.charts import figure, save_png
        from finenvs.tasks.rendering import draw_spread

        env_id = view.task.env_id
        rows = sorted([r for r in view.rows if isinstance(r.extra, PairEpisode) and r.extra.spread],
                      key=lambda r: (r.oracle, r.policy))
        fig = figure(9, 1.9 * max(1, len(rows)) + 0.6)
        axes = np.atleast_1d(fig.subplots(max(1, len(rows)), 1, sharex=True))
        for ax, r in zip(axes, rows, strict=False):
            x = np.array(r.dates, dtype="datetime64[D]").astype("O")
            legs = (_pair(r) or "i/j").split("/")
            # positions[k] is held over day k -> k+1; draw_spread wants the start's (flat) position first
            draw_spread(ax, x, np.asarray(r.extra.spread), np.asarray([0.0, *r.positions]),
                        label=f"log({legs[0]}/{legs[1]})")
            ax.set_title(f"{policy_label(r)}: {_pair(r)}, CR {100 * r.standard['cumulative_return']:+.1f}%, "
                         f"{r.round_trips} position(s), {100 * r.time_in_market:.0f}% in market", fontsize=9)
        fig.suptitle(f"{env_id}: selected pair's spread with entries and exits — {view.config['split']} split",
                     fontsize=11)
        fig.autofmt_xdate()
        return [save_png(fig, view.folder / f"spread_{env_id}.png")]


__all__ = ["PairEpisode", "PairsSection"]
