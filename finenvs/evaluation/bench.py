"""``finenvs bench``: every registered env x every applicable baseline, one scorecard.

Writes ``scorecard.json``, ``scorecard.md`` and PNG charts under
``<out>/<run>/`` and returns the :class:`Scorecard`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import finenvs
from finenvs.baselines.registry import applicable_policies, family_of, make_policy
from finenvs.data.splits import SPLITS
from finenvs.evaluation.episodes import EpisodeResult, run_episode
from finenvs.registration import env_ids as registered_env_ids
from finenvs.registration import text_variant
from finenvs.scoring.aggregate import SECTION_NAMES, TaskScore, aggregate, resolve_weights

#: The offline scripted agent run through each env's text interface and tools (see finenvs.baselines.agents).
AGENT_POLICY = "scripted_agent"

#: Families whose env acts on a universe (one bench episode per policy, labelled UNIVERSE) rather than one symbol.
UNIVERSE_FAMILIES = ("hedging",)
#: Families scored in the Options section (tasks and hedging errors, not equity curves).
OPTIONS_FAMILIES = ("options", "deltahedge")
#: Families scored in the Audit section (instances, not market episodes).
AUDIT_FAMILIES = ("audit",)
#: Families scored in the Knowledge and Analysis sections (questions, not market episodes).
QA_FAMILIES = ("qa",)
#: ``--suite`` presets: the two published benchmarks' task sets.
SUITES: dict[str, tuple[str, ...]] = {
    "herculean": ("FinTrading-v0", "FinHedging-v0", "FinReport-v0", "FinAudit-v0"),
    "fabpp": ("FinQA-v0", "FinOptions-v0", "FinDeltaHedge-v0"),
}
SUITE_CHOICES = ("all", *SUITES)
#: Section aggregate contestants: which baseline answers each FAB++ section (family, policy).
AGGREGATE_PROFILES: dict[str, dict[str, tuple[str, str]]] = {
    "reference": {"knowledge": ("qa", "scripted_agent"), "analysis": ("qa", "scripted_agent"),
                  "options": ("options", "engine_reference")},
    "naive": {"knowledge": ("qa", "first_number"), "analysis": ("qa", "first_number"),
              "options": ("options", "keyword_stuffer")},
    "random": {"knowledge": ("qa", "random"), "analysis": ("qa", "random"), "options": ("options", "random")},
}
UNIVERSE = "universe"
#: How oracle rows (policies that read the future) are labelled in tables.
ORACLE_MARK = " (oracle)"

#: HERCULEAN paper, Table 2, buy-and-hold baseline ("BL") of the Trading workflow on the
#: 2026-01-02..2026-03-31 window (CR %, SR, MDD %). Results licensed Apache-2.0.
HERCULEAN_PUBLISHED_BUY_AND_HOLD: dict[str, dict[str, float]] = {
    "MSFT": {"CR": -21.59, "SR": -2.92, "MDD": 26.04},
    "TSLA": {"CR": -15.18, "SR": -1.72, "MDD": 21.34},
    "AAPL": {"CR": -6.31, "SR": -0.96, "MDD": 11.24},
    "NVDA": {"CR": -7.69, "SR": -0.72, "MDD": 15.54},
}

STANDARD_COLUMNS = (
    ("cumulative_return", "CR %", 100.0),
    ("sharpe", "SR", 1.0),
    ("max_drawdown", "MDD %", 100.0),
    ("sortino", "Sortino", 1.0),
    ("calmar", "Calmar", 1.0),
    ("turnover", "Turnover", 1.0),
)
HERCULEAN_COLUMNS = (
    ("cumulative_return", "CR % (H)", 100.0),
    ("sharpe", "SR (H)", 1.0),
    ("max_drawdown", "MDD % (H)", 100.0),
)


@dataclass
class BenchConfig:
    """What ``finenvs bench`` runs.

    Attributes:
        split: Named split every env runs on.
        symbols: Symbols of single-asset envs, one episode each (default: the env's dataset).
        universe: Universe of pairs envs (FinHedging-v0; default: the env's own, 8 stocks).
        envs: Env ids (default: every registered finenvs env).
        seed: Seed of resets and stochastic policies.
        out: Parent folder of the run folder.
        run_name: Run folder name (default: a UTC timestamp).
        plots: Write PNG charts (needs matplotlib).
        progress: Show a progress bar.
        agents: Also run the offline scripted agent through each env's text interface and tools.
        suite: ``all`` (default), ``herculean`` (Trading, Hedging, Market Insights, Auditing) or
            ``fabpp`` (Knowledge, Analysis, Options); ``envs`` overrides it.
        weights: Section weights of the aggregate (a preset name of
            :data:`finenvs.scoring.aggregate.WEIGHT_PRESETS` or a mapping).
        html: Also write the self-contained ``scorecard.html``.
    """

    split: str = "eval"
    symbols: list[str] | None = None
    universe: list[str] | None = None
    envs: list[str] | None = None
    seed: int = 0
    out: Path = Path("finenvs-results")
    run_name: str | None = None
    plots: bool = True
    progress: bool = True
    agents: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    suite: str = "all"
    weights: str | dict[str, float] = "fabpp"
    html: bool = True


@dataclass
class Scorecard:
    """Everything a bench run measured."""

    config: dict[str, Any]
    results: list[EpisodeResult]
    errors: list[dict[str, str]]
    reproduction: list[dict[str, Any]]
    run_dir: Path
    seconds: float
    files: list[str] = field(default_factory=list)
    options: dict[str, Any] | None = None
    audit: dict[str, Any] | None = None
    qa: dict[str, Any] | None = None
    aggregate: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "rows": [r.row() for r in self.results],
            "means": mean_rows(self.results),
            "errors": self.errors,
            "reproduction_check": self.reproduction,
            "options": self.options,
            "audit": self.audit,
            "qa": self.qa,
            "aggregate": self.aggregate,
            "seconds": self.seconds,
        }


def _fmt(value: float, scale: float = 1.0) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value * scale:.2f}"


def mean_rows(results: list[EpisodeResult]) -> list[dict[str, Any]]:
    """Per (env, policy): the mean of each metric over symbols (nan-aware, count kept)."""
    groups: dict[tuple[str, str], list[EpisodeResult]] = {}
    for r in results:
        groups.setdefault((r.env_id, r.policy), []).append(r)
    rows = []
    for (env_id, policy), items in groups.items():
        row: dict[str, Any] = {"env": env_id, "policy": policy, "n": len(items), "standard": {}, "herculean": {}}
        if any(i.oracle for i in items):
            row["oracle"] = True
        for preset in ("standard", "herculean"):
            keys = getattr(items[0], preset).keys()
            for key in keys:
                vals = np.array([getattr(i, preset)[key] for i in items], dtype=float)
                finite = vals[np.isfinite(vals)]
                row[preset][key] = float(finite.mean()) if finite.size else math.nan
        rows.append(row)
    return rows


def reproduction_check(results: list[EpisodeResult], split: str) -> list[dict[str, Any]]:
    """Compare finenvs' herculean buy-and-hold with HERCULEAN's published baseline."""
    if split != "eval":
        return []
    out = []
    for r in results:
        if r.env_id != "FinTrading-v0" or r.policy != "buy_and_hold":
            continue
        pub = HERCULEAN_PUBLISHED_BUY_AND_HOLD.get(r.symbol)
        if pub is None:
            continue
        ours = {
            "CR": round(100.0 * r.herculean["cumulative_return"], 2),
            "SR": round(r.herculean["sharpe"], 2),
            "MDD": round(100.0 * r.herculean["max_drawdown"], 2),
        }
        out.append({"symbol": r.symbol, "published": pub, "finenvs": ours, "match": ours == pub})
    return out


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def _metric_cells(metrics: dict[str, float], columns: tuple[tuple[str, str, float], ...]) -> list[str]:
    return [_fmt(metrics.get(key, math.nan), scale) for key, _, scale in columns]


def _policy_label(r: EpisodeResult) -> str:
    return r.policy + (ORACLE_MARK if r.oracle else "")


def _universe_section(
    env_id: str, rows: list[EpisodeResult], headers_std: list[str], headers_h: list[str]
) -> list[str]:
    """Scorecard section of a pairs env: one row per policy with its selected pair."""
    universe = sorted({s for r in rows for s in (r.pair or "").split("/") if s})
    lines = [
        f"## {env_id}",
        "",
        f"One episode per policy on the universe; the pair is each policy's own choice on the first day "
        f"(long the first symbol on LONG_SHORT). Pairs chosen from: {', '.join(universe)}.",
        "",
        _table(
            ["policy", "pair", *headers_std, *headers_h, "in market %", "positions", "look-ahead"],
            [
                [_policy_label(r), r.pair or "", *_metric_cells(r.standard, STANDARD_COLUMNS),
                 *_metric_cells(r.herculean, HERCULEAN_COLUMNS), _fmt(r.time_in_market, 100.0),
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
    return lines


def render_markdown(card: Scorecard) -> str:
    cfg = card.config
    lines = [
        f"# finenvs scorecard — {cfg['run']}",
        "",
        f"Split `{cfg['split']}` ({cfg['split_dates']}), seed {cfg['seed']}, finenvs {cfg['finenvs_version']}, "
        f"data manifest `{cfg['data_manifest'][:16]}`, {card.seconds:.1f} s on {cfg['machine']}.",
        "",
        "Standard columns: wealth path from 1.0 before the first trade, every close after it "
        "(Sharpe ddof=1, sqrt(252), rf=0; MDD of that path). (H) columns: the HERCULEAN paper's "
        "convention (entry fee in the first value, exit fee in the last, Sharpe over non-zero days).",
        "",
    ]
    headers_std = [c[1] for c in STANDARD_COLUMNS]
    headers_h = [c[1] for c in HERCULEAN_COLUMNS]
    for env_id in dict.fromkeys(r.env_id for r in card.results):
        env_rows = [r for r in card.results if r.env_id == env_id]
        if any(r.pair is not None for r in env_rows):
            lines += _universe_section(env_id, env_rows, headers_std, headers_h)
            continue
        lines += [f"## {env_id}", "", "### Mean over symbols", ""]
        mean = [m for m in mean_rows(card.results) if m["env"] == env_id]
        lines.append(
            _table(
                ["policy", "n", *headers_std, *headers_h],
                [
                    [m["policy"], str(m["n"]), *_metric_cells(m["standard"], STANDARD_COLUMNS),
                     *_metric_cells(m["herculean"], HERCULEAN_COLUMNS)]
                    for m in mean
                ],
            )
        )
        lines += ["", "### Per symbol", ""]
        rows = sorted(env_rows, key=lambda r: (r.symbol, r.policy))
        lines.append(
            _table(
                ["symbol", "policy", *headers_std, *headers_h, "in market %", "positions", "look-ahead"],
                [
                    [r.symbol, _policy_label(r), *_metric_cells(r.standard, STANDARD_COLUMNS),
                     *_metric_cells(r.herculean, HERCULEAN_COLUMNS), _fmt(r.time_in_market, 100.0),
                     str(r.round_trips), str(r.look_ahead_attempts)]
                    for r in rows
                ],
            )
        )
        lines.append("")
    agents = [r for r in card.results if r.efficiency is not None]
    if agents:
        lines += [
            "## Agents through the text interface",
            "",
            "The offline scripted agents (`finenvs.baselines.agents.ScriptedTradingAgent`: momentum with volatility, "
            "RSI and news checks; `ScriptedPairsAgent`: the most mean-reverting pair, then a z-score rule) read "
            "date-locked tools and commit through the same protocol an LLM uses. "
            "Efficiency beside the task score: format errors (invalid actions), tool calls per decision, look-ahead "
            "attempts, tokens and dollar cost (0 for this offline agent; `finenvs llm` runs a model).",
            "",
            _table(
                ["env", "symbol", "CR %", "SR", "MDD %", "format errors", "tool calls/decision", "look-ahead",
                 "tokens", "cost $", "s/decision"],
                [
                    [r.env_id, r.symbol, _fmt(r.standard["cumulative_return"], 100), _fmt(r.standard["sharpe"]),
                     _fmt(r.standard["max_drawdown"], 100), str(r.efficiency["format_errors"]),
                     _fmt(r.efficiency["tool_calls_per_decision"]), str(r.efficiency["look_ahead_attempts"]),
                     str(r.efficiency["tokens"]), _fmt(r.efficiency["cost_usd"], 1.0),
                     f"{r.efficiency['seconds_per_decision']:.4f}"]
                    for r in sorted(agents, key=lambda r: (r.env_id, r.symbol))
                ],
            ),
            "",
        ]
    if card.reproduction:
        lines += [
            "## Reproduction check: HERCULEAN Table 2 buy-and-hold baseline",
            "",
            "finenvs' `herculean` preset on the shipped data beside the figures the paper publishes "
            "(CR %, SR, MDD %; rounded to 2 decimals as published).",
            "",
            _table(
                ["symbol", "CR pub", "CR finenvs", "SR pub", "SR finenvs", "MDD pub", "MDD finenvs", "match"],
                [
                    [c["symbol"], f"{c['published']['CR']:.2f}", f"{c['finenvs']['CR']:.2f}",
                     f"{c['published']['SR']:.2f}", f"{c['finenvs']['SR']:.2f}",
                     f"{c['published']['MDD']:.2f}", f"{c['finenvs']['MDD']:.2f}",
                     "yes" if c["match"] else "NO"]
                    for c in card.reproduction
                ],
            ),
            "",
        ]
    lines += report_quality_lines(card.results)
    if card.options:
        from finenvs.baselines.options import options_markdown

        lines += options_markdown(card.options)
    if card.audit:
        from finenvs.baselines.audit import audit_markdown

        lines += audit_markdown(card.audit)
    if card.qa:
        from finenvs.baselines.qa import qa_markdown

        lines += qa_markdown(card.qa)
    if card.aggregate:
        lines += aggregate_markdown(card.aggregate)
    if card.errors:
        lines += ["## Errors", ""] + [f"- {e['env']} {e['symbol']} {e['policy']}: {e['error']}" for e in card.errors]
        lines.append("")
    charts = [f for f in card.files if f.endswith(".png")]
    if charts:
        lines += ["## Charts", ""] + [f"![{Path(f).stem}]({Path(f).name})" for f in charts]
        lines.append("")
    return "\n".join(lines)


def _plots(card: Scorecard) -> list[Path]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return []
    from finenvs.envs.rendering import drawdown_path

    written = []
    by_key: dict[tuple[str, str], list[EpisodeResult]] = {}
    for r in card.results:
        by_key.setdefault((r.env_id, UNIVERSE if r.pair is not None else r.symbol), []).append(r)
    for (env_id, symbol), items in by_key.items():
        fig = Figure(figsize=(10, 6), dpi=100)
        FigureCanvasAgg(fig)
        ax_eq, ax_dd = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
        for r in items:
            x = np.array(r.dates, dtype="datetime64[D]").astype("O")
            wealth = np.asarray(r.wealth)
            pair = f" {r.pair}" if r.pair else ""
            ax_eq.plot(x, wealth, lw=1.3, ls="--" if r.oracle else "-",
                       label=f"{_policy_label(r)}{pair} ({100 * r.standard['cumulative_return']:+.1f}%)")
            ax_dd.plot(x, -100 * drawdown_path(wealth), lw=1.0)
        ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
        ax_eq.set_ylabel("wealth (start = 1)")
        ax_eq.set_title(f"{env_id} {symbol} — {card.config['split']} split, fees included", fontsize=11)
        ax_eq.legend(fontsize=8, loc="best")
        ax_dd.set_ylabel("drawdown %")
        fig.autofmt_xdate()
        fig.tight_layout()
        path = card.run_dir / f"equity_{env_id}_{symbol}.png"
        fig.savefig(path)
        written.append(path)
    for env_id in dict.fromkeys(r.env_id for r in card.results):
        rows = [r for r in card.results if r.env_id == env_id]
        if any(r.pair is not None for r in rows):
            written.append(_spread_plot(card, env_id, [r for r in rows if r.spread]))
            continue
        symbols = sorted({r.symbol for r in rows})
        policies = list(dict.fromkeys(r.policy for r in rows))
        grid = np.full((len(policies), len(symbols)), np.nan)
        for r in rows:
            grid[policies.index(r.policy), symbols.index(r.symbol)] = r.standard["sharpe"]
        # wide enough for the policy labels and the title with one or two symbols
        fig = Figure(figsize=(max(5.5, 2.0 + 0.8 * len(symbols)), 1.4 + 0.5 * len(policies)), dpi=100,
                     layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        bound = np.nanmax(np.abs(grid)) if np.isfinite(grid).any() else 1.0
        im = ax.imshow(grid, cmap="RdYlGn", vmin=-bound, vmax=bound, aspect="auto")
        ax.set_xticks(range(len(symbols)), symbols, rotation=45, ha="right")
        ax.set_yticks(range(len(policies)), policies)
        for i in range(len(policies)):
            for j in range(len(symbols)):
                ax.text(j, i, _fmt(grid[i, j]), ha="center", va="center", fontsize=7)
        ax.set_title(f"{env_id}: Sharpe ratio (standard) by policy and symbol", fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.03)
        path = card.run_dir / f"sharpe_{env_id}.png"
        fig.savefig(path)
        written.append(path)
    return written


def _spread_plot(card: Scorecard, env_id: str, rows: list[EpisodeResult]) -> Path:
    """One panel per policy: its pair's log price ratio with entries and exits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from finenvs.envs.rendering import draw_spread

    rows = sorted(rows, key=lambda r: (r.oracle, r.policy))
    fig = Figure(figsize=(10, 2.4 * max(1, len(rows)) + 0.6), dpi=100)
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(max(1, len(rows)), 1, sharex=True))
    for ax, r in zip(axes, rows, strict=False):
        x = np.array(r.dates, dtype="datetime64[D]").astype("O")
        legs = (r.pair or "i/j").split("/")
        # positions[k] is held over day k -> k+1; draw_spread wants the start's (flat) position first
        draw_spread(ax, x, np.asarray(r.spread), np.asarray([0.0, *r.positions]), label=f"log({legs[0]}/{legs[1]})")
        ax.set_title(f"{_policy_label(r)}: {r.pair}, CR {100 * r.standard['cumulative_return']:+.1f}%, "
                     f"{r.round_trips} position(s), {100 * r.time_in_market:.0f}% in market", fontsize=9)
    fig.suptitle(f"{env_id}: selected pair's spread with entries and exits — {card.config['split']} split", fontsize=11)
    fig.autofmt_xdate()
    fig.tight_layout()
    path = card.run_dir / f"spread_{env_id}.png"
    fig.savefig(path)
    return path


def _market_kwargs(env_id: str, symbol: str, config: BenchConfig) -> dict[str, Any]:
    """gym.make kwargs of one bench job: a symbol, or a universe (``config.universe``) for pairs envs."""
    if symbol != UNIVERSE:
        return {"symbol": symbol, **config.env_kwargs}
    return ({"symbols": list(config.universe)} if config.universe else {}) | dict(config.env_kwargs)


def _policy_env_kwargs(env_id: str, policy_name: str) -> dict[str, Any]:
    """Extra gym.make kwargs a baseline needs (FinReport-v0's report writer acts in ``action_mode="report"``)."""
    from finenvs.baselines.registry import policies_of

    cls = policies_of(env_id).get(policy_name, (None,))[0]
    return dict(getattr(cls, "env_kwargs", None) or {})


def report_quality_lines(results: list[EpisodeResult]) -> list[str]:
    """Scorecard section: FinReport-v0's report quality per symbol (policies that write reports)."""
    rows = [r for r in results if r.quality is not None]
    if not rows:
        return []
    dims = ("structure", "content", "evidence", "reasoning")
    mean = {d: float(np.mean([r.quality["dimensions"][d] for r in rows])) for d in dims}
    return [
        "## FinReport-v0 report quality",
        "",
        "Deterministic score 0-10 (mean of four dimensions, each 10 x the pass ratio of its checks against the "
        "data visible at the report date), averaged over each episode's weekly reports. The ratings are scored as "
        "a strategy in the FinReport-v0 tables above (STRONG_BUY/BUY long, HOLD flat, SELL/STRONG_SELL short, "
        "held daily until the next report; buy_and_hold is Buy&Hold over the same days and fees).",
        "",
        _table(
            ["symbol", "policy", "reports", "score", "structure", "content", "evidence", "reasoning",
             "invalid ratings", "CR %", "SR", "MDD %"],
            [
                [r.symbol, r.policy, str(r.quality["reports"]), _fmt(r.quality["score"]),
                 *(_fmt(r.quality["dimensions"][d]) for d in dims), str(r.quality["invalid_ratings"]),
                 _fmt(r.standard["cumulative_return"], 100), _fmt(r.standard["sharpe"]),
                 _fmt(r.standard["max_drawdown"], 100)]
                for r in sorted(rows, key=lambda r: (r.symbol, r.policy))
            ]
            + [["mean", "", str(sum(r.quality["reports"] for r in rows)),
                _fmt(float(np.mean([r.quality["score"] for r in rows]))), *(_fmt(mean[d]) for d in dims),
                str(sum(r.quality["invalid_ratings"] for r in rows)), "", "", ""]],
        ),
        "",
    ]


def run_agent_episode(env_id: str, symbol: str, config: BenchConfig) -> EpisodeResult:
    """One episode of the offline scripted agent through the text interface, with its efficiency figures."""
    import asyncio

    from finenvs.baselines.agents import SCRIPTED_AGENTS
    from finenvs.evaluation.llm import RunConfig, run_episode
    from finenvs.evaluation.session import EpisodeSpec

    began = time.perf_counter()
    spec = EpisodeSpec(0, env_id, {"split": config.split, **_market_kwargs(env_id, symbol, config)}, config.seed)
    agent = SCRIPTED_AGENTS[family_of(env_id)]()
    outcome = asyncio.run(run_episode(agent, spec, RunConfig(env_id=env_id)))
    record, curves = outcome.record, outcome.curves or {}
    if record is None:  # pragma: no cover - the offline agent has no endpoint to lose
        raise RuntimeError(f"{spec.label()}: {outcome.status} ({outcome.message})")
    totals = record["totals"]
    n = max(1, totals["decisions"])
    return EpisodeResult(
        env_id=env_id,
        policy=AGENT_POLICY,
        symbol=record["symbol"],
        pair=record["symbol"] if symbol == UNIVERSE else None,
        spread=curves.get("spread"),
        window_start=record["window"].split("..")[0],
        window_end=record["window"].split("..")[1],
        steps=record["steps"],
        total_reward=float(np.log(record["final_equity"])) if record["final_equity"] > 0 else -math.inf,
        final_equity=float(record["final_equity"]),
        fees=float(record["fees"]),
        look_ahead_attempts=int(record["look_ahead_attempts"]),
        standard={k: (math.nan if v is None else v) for k, v in record["standard"].items()},
        herculean={k: (math.nan if v is None else v) for k, v in record["herculean"].items()},
        dates=curves.get("dates", []),
        wealth=curves.get("wealth", []),
        herculean_equity=curves.get("herculean_equity", []),
        positions=curves.get("positions", []),
        seconds=time.perf_counter() - began,
        efficiency={
            "decisions": totals["decisions"],
            "format_errors": totals["format_errors"],
            "tool_calls_per_decision": totals["tool_calls"] / n,
            "tool_errors": totals["tool_errors"],
            "look_ahead_attempts": int(record["look_ahead_attempts"]),
            "tokens": totals["prompt_tokens"] + totals["completion_tokens"],
            "cost_usd": totals["cost_usd"],
            "seconds_per_decision": totals["seconds"] / n,
        },
    )


def _run_dir(config: BenchConfig) -> Path:
    name = config.run_name or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = Path(config.out) / name
    suffix = 1
    while path.exists():
        suffix += 1
        path = Path(config.out) / f"{name}-{suffix}"
    return path


def run_bench(config: BenchConfig) -> Scorecard:
    """Run the suite and write the scorecard files (see module doc)."""
    from tqdm.auto import tqdm

    from finenvs.data.catalog import default_catalog

    if config.split not in SPLITS:
        raise ValueError(f"unknown split {config.split!r}; valid splits: {sorted(SPLITS)}")
    if config.suite not in SUITE_CHOICES:
        raise ValueError(f"unknown suite {config.suite!r}; suites: {list(SUITE_CHOICES)}")
    resolve_weights(config.weights)  # fail before any work on bad weights
    env_ids = config.envs or [e for e in registered_env_ids() if config.suite == "all" or e in SUITES[config.suite]]
    for env_id in env_ids:
        family_of(env_id)  # unknown env -> KeyError naming the valid ids
    began = time.perf_counter()
    catalog = default_catalog()
    jobs: list[tuple[str, str, str]] = []
    for env_id in env_ids:
        if family_of(env_id) in OPTIONS_FAMILIES + AUDIT_FAMILIES + QA_FAMILIES:  # their own sections, run below
            continue
        if family_of(env_id) in UNIVERSE_FAMILIES:  # one episode per policy on the whole universe
            symbols = [UNIVERSE]
        else:
            symbols = config.symbols or catalog.symbols(gym.spec(env_id).kwargs.get("dataset", "core"))
        for symbol in symbols:
            for policy in applicable_policies(env_id):
                jobs.append((env_id, symbol, policy))
            if config.agents and text_variant(env_id) is not None:
                jobs.append((env_id, symbol, AGENT_POLICY))
    results: list[EpisodeResult] = []
    errors: list[dict[str, str]] = []
    envs: dict[tuple[Any, ...], Any] = {}
    bar = tqdm(jobs, desc="finenvs bench", unit="episode", disable=not config.progress or None)
    for env_id, symbol, policy_name in bar:
        bar.set_postfix_str(f"{env_id} {symbol} {policy_name}", refresh=False)
        try:
            if policy_name == AGENT_POLICY:
                results.append(run_agent_episode(env_id, symbol, config))
                continue
            extra = _policy_env_kwargs(env_id, policy_name)
            key = (env_id, symbol, tuple(sorted(extra.items())))
            if key not in envs:
                envs[key] = gym.make(env_id, split=config.split, **_market_kwargs(env_id, symbol, config), **extra)
            env = envs[key]
            policy = make_policy(policy_name, env_id, env, seed=config.seed)
            results.append(
                run_episode(env, policy, env_id=env_id, policy_name=policy_name, seed=config.seed)
            )
        except Exception as exc:  # an errored task is reported, never dropped
            errors.append({"env": env_id, "symbol": symbol, "policy": policy_name, "error": f"{type(exc).__name__}: {exc}"})
    for env in envs.values():
        env.close()
    options = None
    if any(family_of(e) in OPTIONS_FAMILIES for e in env_ids):
        from finenvs.baselines.options import run_options_section

        if config.progress:
            bar.write("finenvs bench: Options section (FinOptions-v0 tasks and bank, FinDeltaHedge-v0)")
        try:
            options = run_options_section(config.split, config.seed)
        except Exception as exc:  # reported, never dropped
            errors.append({"env": "FinOptions-v0/FinDeltaHedge-v0", "symbol": "-", "policy": "-",
                           "error": f"{type(exc).__name__}: {exc}"})
    audit = None
    if any(family_of(e) in AUDIT_FAMILIES for e in env_ids):
        from finenvs.baselines.audit import run_audit_section

        if config.progress:
            bar.write("finenvs bench: Audit section (FinAudit-v0 eval instances)")
        try:
            audit = run_audit_section(config.seed)
        except Exception as exc:  # reported, never dropped
            errors.append({"env": "FinAudit-v0", "symbol": "-", "policy": "-",
                           "error": f"{type(exc).__name__}: {exc}"})
    qa = None
    if any(family_of(e) in QA_FAMILIES for e in env_ids):
        from finenvs.baselines.qa import run_qa_section

        if config.progress:
            bar.write("finenvs bench: Knowledge and Analysis sections (FinQA-v0 eval questions)")
        try:
            qa = run_qa_section(config.seed)
        except Exception as exc:  # reported, never dropped
            errors.append({"env": "FinQA-v0", "symbol": "-", "policy": "-", "error": f"{type(exc).__name__}: {exc}"})
    fabpp_envs = [e for e in env_ids if family_of(e) in QA_FAMILIES + ("options",)]
    aggregate = section_aggregate(qa, options, config.weights, errors) if fabpp_envs else None
    run_dir = _run_dir(config)
    run_dir.mkdir(parents=True, exist_ok=False)
    lo, hi = SPLITS[config.split]
    card = Scorecard(
        config={
            "run": run_dir.name,
            "split": config.split,
            "split_dates": f"{lo}..{hi}",
            "seed": config.seed,
            "suite": config.suite,
            "envs": env_ids,
            "symbols": config.symbols,
            "universe": config.universe,
            "env_kwargs": config.env_kwargs,
            "finenvs_version": finenvs.__version__,
            "data_manifest": catalog.manifest.digest,
            "machine": f"{platform.machine()} Python {platform.python_version()}",
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
        results=results,
        errors=errors,
        reproduction=reproduction_check(results, config.split),
        run_dir=run_dir,
        seconds=0.0,
        options=options,
        audit=audit,
        qa=qa,
        aggregate=aggregate,
    )
    if config.plots:
        card.files += [str(p) for p in _plots(card)]
        from finenvs.evaluation.scorecard_html import section_plots

        card.files += [str(p) for p in section_plots(card)]
    card.seconds = time.perf_counter() - began
    json_path = run_dir / "scorecard.json"
    md_path = run_dir / "scorecard.md"
    json_path.write_text(json.dumps(card.to_json(), indent=2, default=_json_default, allow_nan=True) + "\n")
    card.files = [str(json_path), str(md_path), *card.files]
    markdown = render_markdown(card)
    md_path.write_text(markdown)
    if config.html:
        from finenvs.evaluation.scorecard_html import write_html

        html_path = run_dir / "scorecard.html"
        write_html(markdown, html_path, title=f"finenvs scorecard — {run_dir.name}")
        card.files.insert(2, str(html_path))
    return card


def section_aggregate(qa: dict[str, Any] | None, options: dict[str, Any] | None,
                      weights: str | dict[str, float], errors: list[dict[str, str]]) -> dict[str, Any]:
    """The FAB++ section aggregate of each profile in :data:`AGGREGATE_PROFILES`.

    Knowledge and Analysis tasks are FinQA-v0's eval questions (score x 100), Options tasks the
    FinOptions-v0 generated tasks and bank items (0-100). A task whose policy raised scores 0; a
    section that failed as a whole counts as one errored task (0), so it is never silently dropped.
    """
    out: dict[str, Any] = {"weights": resolve_weights(weights), "profiles": {}}
    failed = {e["env"] for e in errors}
    for profile, mapping in AGGREGATE_PROFILES.items():
        tasks: list[TaskScore] = []
        for section, (family, policy) in mapping.items():
            if family == "qa":
                if qa is None:
                    if "FinQA-v0" in failed:
                        tasks.append(TaskScore(section, "FinQA-v0", None, "the FinQA-v0 section failed"))
                    continue
                for r in qa["policies"][policy]["rows"]:
                    if r["section"] == section:
                        tasks.append(TaskScore(section, r["task_id"], 100.0 * r["score"], r["error"]))
            else:
                if options is None:
                    if any(e.startswith("FinOptions-v0") for e in failed):
                        tasks.append(TaskScore(section, "FinOptions-v0", None, "the Options section failed"))
                    continue
                for block in ("options", "bank"):
                    tasks += [TaskScore(section, f"{block}/{i}", float(v))
                              for i, v in enumerate(options[block][policy]["scores"])]
        agg = aggregate(tasks, out["weights"])
        out["profiles"][profile] = {**agg.record(), "policies": {k: v[1] for k, v in mapping.items()}}
    return out


def aggregate_markdown(agg: dict[str, Any]) -> list[str]:
    """The scorecard's section-aggregate block."""
    w = agg["weights"]
    names = list(w)
    lines = ["## Section aggregate (FAB++)", "",
             "Every task normalised to 0-100; section score = mean of its tasks (an errored task counts 0); "
             "weights " + ", ".join(f"{SECTION_NAMES.get(k, k)} {100 * v:.0f}%" for k, v in w.items())
             + ", redistributed over the sections that ran. Each profile names the baseline that answers each "
             "section.", "",
             "| profile | " + " | ".join(SECTION_NAMES.get(k, k) for k in names) + " | overall |",
             "|---|" + "---:|" * (len(names) + 1)]
    for profile, rec in agg["profiles"].items():
        cells = []
        for k in names:
            sec = rec["sections"][k]
            cells.append("—" if sec["score"] is None else f"{sec['score']:.2f} ({rec['policies'][k]})")
        overall = "—" if rec["overall"] is None else f"**{rec['overall']:.2f}**"
        lines.append(f"| {profile} | " + " | ".join(cells) + f" | {overall} |")
    lines.append("")
    return lines


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def terminal_table(card: Scorecard) -> str:
    """The per-symbol table and the means, for printing."""
    out = []
    headers = ["env", "symbol", "policy", "CR %", "SR", "MDD %", "CR % (H)", "SR (H)", "MDD % (H)", "in mkt %",
               "positions"]
    rows = [
        [r.env_id, r.symbol, _policy_label(r),
         _fmt(r.standard["cumulative_return"], 100), _fmt(r.standard["sharpe"]), _fmt(r.standard["max_drawdown"], 100),
         _fmt(r.herculean["cumulative_return"], 100), _fmt(r.herculean["sharpe"]), _fmt(r.herculean["max_drawdown"], 100),
         _fmt(r.time_in_market, 100), str(r.round_trips)]
        for r in sorted(card.results, key=lambda r: (r.env_id, r.oracle, r.symbol, r.policy))
    ]
    out.append(_table(headers, rows))
    mean = mean_rows(card.results)
    out.append("")
    out.append("Mean over symbols:")
    out.append(
        _table(
            ["env", "policy", "n", "CR %", "SR", "MDD %", "CR % (H)", "SR (H)", "MDD % (H)"],
            [
                [m["env"], m["policy"] + (ORACLE_MARK if m.get("oracle") else ""), str(m["n"]),
                 _fmt(m["standard"]["cumulative_return"], 100), _fmt(m["standard"]["sharpe"]),
                 _fmt(m["standard"]["max_drawdown"], 100), _fmt(m["herculean"]["cumulative_return"], 100),
                 _fmt(m["herculean"]["sharpe"]), _fmt(m["herculean"]["max_drawdown"], 100)]
                for m in mean
            ],
        )
    )
    agents = [r for r in card.results if r.efficiency is not None]
    if agents:
        out.append("")
        out.append(
            f"Scripted agent through the text interface: {len(agents)} episode(s), "
            f"{sum(r.efficiency['decisions'] for r in agents)} decisions, "
            f"{sum(r.efficiency['format_errors'] for r in agents)} format errors, "
            f"{np.mean([r.efficiency['tool_calls_per_decision'] for r in agents]):.2f} tool calls/decision, "
            f"{sum(r.efficiency['look_ahead_attempts'] for r in agents)} look-ahead attempts."
        )
    reports = [r for r in card.results if r.quality is not None]
    if reports:
        out.append("")
        out.append(
            f"FinReport-v0 report quality (0-10) over {sum(r.quality['reports'] for r in reports)} reports: "
            f"{np.mean([r.quality['score'] for r in reports]):.2f}; "
            + ", ".join(f"{d} {np.mean([r.quality['dimensions'][d] for r in reports]):.2f}"
                        for d in ("structure", "content", "evidence", "reasoning"))
        )
    if card.options:
        out.append("")
        out.append("FinOptions-v0 (score 0-100; generated tasks | FAB++ bank):")
        out.append(_table(["policy", "generated", "bank"], [
            [name, f"{s['score']:.1f}", f"{card.options['bank'][name]['score']:.1f}"]
            for name, s in card.options["options"].items()]))
        out.append("FinDeltaHedge-v0 (final hedging error MSE):")
        out.append(_table(["policy", "steps/day", "MSE", "mean error"], [
            [r["policy"], str(r["steps_per_day"]), f"{r['mse']:.4f}", f"{r['mean_error']:+.4f}"]
            for r in card.options["deltahedge"]]))
    if card.audit:
        out.append("")
        out.append(f"FinAudit-v0 ({card.audit['n']} eval instances; % of answers, ACC+SER+EER+CER = 100):")
        out.append(_table(["policy", "ACC", "SER", "EER", "CER"], [
            [name, *(f"{100 * s[k]:.1f}" for k in ("ACC", "SER", "EER", "CER"))]
            for name, s in card.audit["policies"].items()]))
    if card.qa:
        out.append("")
        out.append(f"FinQA-v0 ({card.qa['n']} eval questions; score 0-100):")
        out.append(_table(["policy", "Knowledge", "Analysis", "errors"], [
            [name, *(f"{s['sections'].get(k, {}).get('score', math.nan):.1f}" for k in ("knowledge", "analysis")),
             str(s["errors"])] for name, s in card.qa["policies"].items()]))
    if card.aggregate:
        out.append("")
        out.append("Section aggregate (" + ", ".join(f"{k} {100 * v:.0f}%" for k, v in card.aggregate["weights"].items())
                   + "):")
        out.append(_table(["profile", *card.aggregate["weights"], "overall"], [
            [name, *("n/a" if rec["sections"][k]["score"] is None else f"{rec['sections'][k]['score']:.2f}"
                     for k in card.aggregate["weights"]),
             "n/a" if rec["overall"] is None else f"{rec['overall']:.2f}"]
            for name, rec in card.aggregate["profiles"].items()]))
    if card.reproduction:
        ok = sum(c["match"] for c in card.reproduction)
        out.append("")
        out.append(
            f"HERCULEAN Table 2 buy-and-hold reproduced on {ok}/{len(card.reproduction)} symbols "
            "(CR, SR, MDD to the published 2 decimals)."
        )
    return "\n".join(out)
