"""FinReport-v0's bench section: the market tables of its ratings, and the report quality of each episode."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.scoring.presets import SHARPE_LABELS
from finenvs.tasks.market_section import EpisodePart, EpisodeResult, MarketSection
from finenvs.tasks.report.quality import DIMENSIONS
from finenvs.tasks.section import SectionView
from finenvs.text.markdown import fmt_number, md_table, md_text


@dataclass(frozen=True)
class ReportEpisode(EpisodePart):
    """A FinReport-v0 episode's own part: its reports' quality (``{"reports", "score", "dimensions",
    "invalid_ratings"}``: mean score 0-10, its four dimensions, invalid ratings); None for a rating-only episode."""

    quality: dict[str, Any] | None = None

    @classmethod
    def of_episode(cls, env: Any, info: Mapping[str, Any]) -> ReportEpisode:
        return cls(info.get("quality_summary"))

    @classmethod
    def of_metrics(cls, metrics: Mapping[str, Any]) -> ReportEpisode:
        if metrics.get("quality") is None:
            return cls()
        return cls({"reports": len(metrics["reports"]), "score": metrics["quality"],
                    "dimensions": metrics["quality_dimensions"], "invalid_ratings": metrics["invalid_ratings"]})

    def row(self) -> dict[str, Any]:
        return {} if self.quality is None else {"quality": self.quality}


def _quality(r: EpisodeResult) -> dict[str, Any] | None:
    return r.extra.quality if isinstance(r.extra, ReportEpisode) else None


def report_quality_lines(results: list[EpisodeResult]) -> list[str]:
    """FinReport-v0's report quality per symbol (policies that write reports)."""
    scored = [(r, q) for r in results if (q := _quality(r)) is not None]
    if not scored:
        return []
    rows = [r for r, _ in scored]
    quality = {id(r): q for r, q in scored}

    def _q(r: EpisodeResult) -> dict[str, Any]:
        return quality[id(r)]

    env_id = rows[0].env_id
    mean = {d: float(np.mean([_q(r)["dimensions"][d] for r in rows])) for d in DIMENSIONS}
    return [
        f"### {env_id} report quality",
        "",
        "Deterministic score 0-10 (mean of four dimensions, each 10 x the pass ratio of its checks against the "
        "data visible at the report date), averaged over each episode's weekly reports. The ratings are scored as "
        f"a strategy in the {env_id} tables above (STRONG_BUY/BUY long, HOLD flat, SELL/STRONG_SELL short, "
        "held daily until the next report; buy_and_hold is Buy&Hold over the same days and fees).",
        "",
        md_table(
            ["symbol", "policy", "reports", "score", *DIMENSIONS, "invalid ratings", "CR %", SHARPE_LABELS["standard"],
             SHARPE_LABELS["herculean"], "MDD %"],
            [
                [md_text(r.symbol), md_text(r.policy), str(_q(r)["reports"]), fmt_number(_q(r)["score"]),
                 *(fmt_number(_q(r)["dimensions"][d]) for d in DIMENSIONS),
                 str(_q(r)["invalid_ratings"]), fmt_number(r.standard["cumulative_return"], 100),
                 fmt_number(r.standard["sharpe"]), fmt_number(r.herculean["sharpe"]),
                 fmt_number(r.standard["max_drawdown"], 100)]
                for r in sorted(rows, key=lambda r: (r.symbol, r.policy))
            ]
            + [["mean", "", str(sum(_q(r)["reports"] for r in rows)),
                fmt_number(float(np.mean([_q(r)["score"] for r in rows]))), *(fmt_number(mean[d]) for d in DIMENSIONS),
                str(sum(_q(r)["invalid_ratings"] for r in rows)), "", "", "", ""]],
        ),
        "",
    ]


@dataclass(frozen=True)
class ReportSection(MarketSection):
    """The market tables of the ratings, then the quality of the reports behind them."""

    def more_markdown(self, view: SectionView) -> list[str]:
        return report_quality_lines(view.rows)

    def more_terminal(self, view: SectionView) -> list[str]:
        reports = [q for q in map(_quality, view.rows) if q is not None]
        if not reports:
            return []
        return ["", f"{view.task.env_id} report quality (0-10) over {sum(q['reports'] for q in reports)} reports: "
                    f"{np.mean([q['score'] for q in reports]):.2f}; "
                    + ", ".join(f"{d} {np.mean([q['dimensions'][d] for q in reports]):.2f}" for d in DIMENSIONS)]


__all__ = ["ReportEpisode", "ReportSection", "report_quality_lines"]
