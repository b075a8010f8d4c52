"""The task spec of FinReport-v0 (its text variant writes reports: ``action_mode="report"``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finenvs.tasks.common import (
    HERCULEAN_MARKET_COLUMNS,
    MARKET_COLUMNS,
    market_episode_metrics,
    market_run_metrics,
    market_run_output,
    mean,
    symbol_plan,
)
from finenvs.tasks.report.baselines import REPORT_POLICIES, ScriptedReportAgent
from finenvs.tasks.report.bench import ReportEpisode, ReportSection
from finenvs.tasks.report.env import FinReportEnv
from finenvs.tasks.report.judge import checklist
from finenvs.tasks.report.tools import REPORT_TOOLSET
from finenvs.tasks.spec import BenchSection, Column, RunFlag, TaskSpec
from finenvs.tasks.trading.spec import HERCULEAN_SYMBOLS
from finenvs.text.plural import counted

ENV_ID = "FinReport-v0"
DIMENSIONS = ("structure", "content", "evidence", "reasoning")

#: HERCULEAN paper, Market Insights workflow, buy-and-hold baseline ("BL") per stock: Table 2 on the eval window
#: 2026-01-02..2026-03-31 (CR %, SR, MDD %) and Table 3 on the live window 2026-04-01..2026-05-01 (CR %, MDD %;
#: the live table gives no SR). Results licensed Apache-2.0. Buy&Hold in FinReport-v0 reproduces both (a test).
HERCULEAN_PUBLISHED_BUY_AND_HOLD: dict[str, dict[str, dict[str, float]]] = {
    "eval": {
        "MSFT": {"CR": -21.59, "SR": -2.92, "MDD": 26.04},
        "TSLA": {"CR": -15.18, "SR": -1.72, "MDD": 21.34},
        "AAPL": {"CR": -6.31, "SR": -0.96, "MDD": 11.24},
        "NVDA": {"CR": -7.69, "SR": -0.72, "MDD": 15.54},
    },
    "live": {
        "MSFT": {"CR": 12.15, "MDD": 5.81},
        "TSLA": {"CR": 2.46, "MDD": 9.97},
        "AAPL": {"CR": 9.53, "MDD": 2.52},
        "NVDA": {"CR": 12.86, "MDD": 8.43},
    },
}


def published_rows(split: str) -> dict[str, dict[str, dict[str, float]]]:
    """The published Buy&Hold of a split as a bench row, in the HERCULEAN columns' keys and fractions (the live
    window has no SR: none is given)."""
    keys = {"CR": ("h_cumulative_return", 100.0), "SR": ("h_sharpe", 1.0), "MDD": ("h_max_drawdown", 100.0)}
    return {"Buy&Hold (published)": {
        symbol: {keys[k][0]: v / keys[k][1] for k, v in row.items()}
        for symbol, row in HERCULEAN_PUBLISHED_BUY_AND_HOLD[split].items()}}


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The ratings' market metrics, and each report's quality (0-10) with its four dimensions."""
    metrics = market_episode_metrics(env, reset_info, infos)
    reports: list[dict[str, Any]] = [
        {"date": i.get("report_date"), "rating": i.get("rating"), "invalid": i.get("invalid_action"),
         "quality": (i.get("quality") or {}).get("score"), "dimensions": (i.get("quality") or {}).get("dimensions")}
        for i in infos]
    metrics["reports"] = reports
    metrics["invalid_ratings"] = sum(1 for r in reports if r["invalid"])
    scored = [r for r in reports if r["quality"] is not None]
    metrics["quality"] = mean([r["quality"] for r in scored]) if scored else None
    metrics["quality_dimensions"] = ({d: mean([r["dimensions"][d] for r in scored]) for d in DIMENSIONS}
                                     if scored else None)
    return metrics


def run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    out = market_run_metrics(episodes)
    out["quality"] = mean([e.get("quality") for e in episodes])
    for d in DIMENSIONS:
        out[f"quality_{d}"] = mean([(e.get("quality_dimensions") or {}).get(d) for e in episodes])
    out["invalid_ratings"] = sum(int(e.get("invalid_ratings") or 0) for e in episodes)
    return out


def run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """``finenvs run``: the ratings' market lines, the reports' quality, and ``--reports FOLDER``: each weekly
    report (``<date>.md``) and its checks (``<date>.json``)."""
    lines, row = market_run_output(env, result, flags)
    quality = result["final"].get("quality_summary")
    if quality is not None:
        row["quality"] = quality
        lines.append(f"  report quality {quality['score']:.2f}/10 over {quality['reports']} reports: "
                     + ", ".join(f"{k} {v:.2f}" for k, v in quality["dimensions"].items())
                     + f"; invalid ratings {quality['invalid_ratings']}")
    folder = flags.get("reports")
    if folder:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        written = 0
        for record in env.unwrapped.history:
            if "text" in record:
                (folder / f"{record['report_date']}.md").write_text(record["text"])
                (folder / f"{record['report_date']}.json").write_text(json.dumps(record["card"], indent=2,
                                                                                  default=str))
                written += 2
        lines.append(f"  reports: {counted(written, 'file')} in {folder}")
    return lines, row


SPEC = TaskSpec(
    family="report",
    env_id=ENV_ID,
    text_env_id="FinReport-text-v0",
    description="One research report (or rating) per week on one stock; ratings traded daily (CR/SR/MDD); "
    "report quality 0-10.",
    env=FinReportEnv,
    kwargs={"symbol": None, "split": "train", "action_mode": "rating", "position_map": "herculean", "fee_bps": 5.0,
            "dataset": "core"},
    text_kwargs={"action_mode": "report"},
    plan=symbol_plan(ENV_ID, HERCULEAN_SYMBOLS),
    episode_metrics=episode_metrics,
    run_metrics=run_metrics,
    columns=(*MARKET_COLUMNS[:3], Column("quality", "Quality (0-10)"), *MARKET_COLUMNS[3:]),
    scripted_agent=ScriptedReportAgent,
    baselines=REPORT_POLICIES,
    tools=REPORT_TOOLSET,
    run_options=("symbol", "start", "end", "fee_bps", "chart"),
    run_flags=(RunFlag("reports", "write each weekly report (Markdown) and its quality checks (JSON) into this "
                       "folder", type=Path),),
    run_printer=run_output,
    judge=checklist,
    bench=BenchSection(title="Market Insights", suites=("herculean",), section=ReportSection(), market=True,
                       episode_part=ReportEpisode, herculean="Market Insights", herculean_baseline="buy_and_hold",
                       herculean_labels=HERCULEAN_SYMBOLS, published_block="insights",
                       herculean_columns=(*HERCULEAN_MARKET_COLUMNS, Column("quality", "Quality")),
                       published=published_rows("eval"), published_live=published_rows("live")),
)
