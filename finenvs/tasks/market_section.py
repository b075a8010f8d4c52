"""The market tables of ``finenvs bench``: the section the market families share.

A market family (its spec's ``bench.market``) plays every baseline on every bench symbol (or, with
``bench.universe``, once on the whole universe); each episode is an :class:`EpisodeResult` with its
curves and CR/SR/MDD under both presets. :class:`MarketSection` renders them: each policy's means with
bootstrap intervals, the agents beside the baselines with their efficiency, the per-symbol table, a
Sharpe heatmap and equity/drawdown charts. A family adds its own part by subclassing it (FinHedging-v0's
pair table and spread chart, FinReport-v0's report quality) and keeps its own fields of an episode in an
:class:`EpisodePart` subclass named by its spec's ``bench.episode_part``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.scoring.presets import SHARPE_LABELS
from finenvs.tasks.common import position_stats
from finenvs.tasks.section import BenchContext, Section, SectionPart, SectionView
from finenvs.text.markdown import NA, fmt_count, fmt_number, md_table, md_text
from finenvs.text.plural import counted

#: The symbol of a universe family's one episode (its symbols are the universe, not one episode each).
UNIVERSE = "universe"
#: How oracle rows (policies that read the future) are labelled in tables.
ORACLE_MARK = " (oracle)"
#: Sharpe column names: each says its convention (see :data:`finenvs.scoring.presets.SHARPE_LABELS`).
SR_STD, SR_H = SHARPE_LABELS["standard"], SHARPE_LABELS["herculean"]
STANDARD_COLUMNS = (
    ("cumulative_return", "CR %", 100.0),
    ("sharpe", SR_STD, 1.0),
    ("max_drawdown", "MDD %", 100.0),
    ("sortino", "Sortino", 1.0),
    ("calmar", "Calmar", 1.0),
    ("turnover", "Turnover", 1.0),
)
HERCULEAN_COLUMNS = (
    ("cumulative_return", "CR % (H)", 100.0),
    ("sharpe", SR_H, 1.0),
    ("max_drawdown", "MDD % (H)", 100.0),
)
#: Resamples and columns of the intervals on the "Mean over symbols" rows.
MEAN_CI_BOOT = 2000
MEAN_CI_COLUMNS = (("cumulative_return", "CR %", 100.0), ("sharpe", SR_STD, 1.0))


@dataclass(frozen=True)
class EpisodePart:
    """A market family's own part of its episode records (:attr:`EpisodeResult.extra`); the base has none.

    A family with fields of its own declares a subclass (its spec's ``bench.episode_part``): how a played
    episode fills them (:meth:`of_episode`), how an agent's recorded episode does (:meth:`of_metrics`),
    which of them join the episode's scorecard row (:meth:`row`) and what names the episode when its reset
    names no symbol (:attr:`label`).
    """

    @classmethod
    def of_episode(cls, env: Any, info: Mapping[str, Any]) -> EpisodePart:
        """The part of a played episode: its env (unwrapped) and its last step's ``info``."""
        return cls()

    @classmethod
    def of_metrics(cls, metrics: Mapping[str, Any]) -> EpisodePart:
        """The part of an agent's recorded episode: the family's episode metrics of it."""
        return cls()

    def row(self) -> dict[str, Any]:
        """The fields that join the episode's scorecard row (JSON-able)."""
        return {}

    @property
    def label(self) -> str | None:
        """What names the episode when its reset names no symbol (None: nothing)."""
        return None


def episode_part(task: Any) -> type[EpisodePart]:
    """The family's :class:`EpisodePart` class (its spec's ``bench.episode_part``; the base: no fields of its own)."""
    return task.bench.episode_part or EpisodePart


@dataclass
class EpisodeResult:
    """Scores and curves of one market episode."""

    env_id: str
    policy: str
    symbol: str
    window_start: str
    window_end: str
    steps: int
    total_reward: float
    final_equity: float
    fees: float
    look_ahead_attempts: int
    standard: dict[str, float]
    herculean: dict[str, float]
    dates: list[str] = field(repr=False)
    wealth: list[float] = field(repr=False)
    herculean_equity: list[float] = field(repr=False)
    positions: list[float] = field(repr=False)
    seconds: float = 0.0
    #: agent episodes only: format errors, tool calls, tokens, cost, ... (see finenvs.evaluation.score)
    efficiency: dict[str, Any] | None = None
    #: The policy read the future (an upper bound, not a baseline).
    oracle: bool = False
    #: The family's own part (FinHedging-v0's selected pair and its spread, FinReport-v0's report quality).
    extra: EpisodePart = field(default_factory=EpisodePart, repr=False)

    @property
    def time_in_market(self) -> float:
        """Fraction of the episode's days with a position held."""
        return position_stats(self.positions)[0]

    @property
    def round_trips(self) -> int:
        """Positions opened (a reversal opens one); each is closed by the episode's end."""
        return position_stats(self.positions)[1]

    def row(self) -> dict[str, Any]:
        """Flat JSON-able summary (no curves)."""
        extra: dict[str, Any] = {"efficiency": self.efficiency} if self.efficiency is not None else {}
        extra.update(self.extra.row())
        if self.oracle:
            extra["oracle"] = True
        return {
            "env": self.env_id,
            "policy": self.policy,
            "symbol": self.symbol,
            "window": f"{self.window_start}..{self.window_end}",
            "steps": self.steps,
            "final_equity": self.final_equity,
            "fees": self.fees,
            "look_ahead_attempts": self.look_ahead_attempts,
            "standard": self.standard,
            "herculean": self.herculean,
            "time_in_market": self.time_in_market,
            "round_trips": self.round_trips,
            **extra,
        }


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


def policy_label(r: EpisodeResult) -> str:
    """The episode's policy, marked when it read the future."""
    return r.policy + (ORACLE_MARK if r.oracle else "")


def metric_cells(metrics: Mapping[str, float], columns: tuple[tuple[str, str, float], ...]) -> list[str]:
    return [fmt_number(metrics.get(key, math.nan), scale) for key, _, scale in columns]


def split_symbols(task: Any, symbols: list[str], catalog: Any) -> list[str]:
    """The asked-for symbols a market family's split part can play: those of its dataset.

    Without ``--windows`` every asked-for symbol is already checked to be there. With it, a symbol that has only a
    long history (``finenvs data list``) is played by the windows part alone; a universe family plays its split part
    only when its whole universe is there.
    """
    have = set(catalog.symbols(gym.spec(task.env_id).kwargs.get("dataset", "core")))
    kept = [s for s in symbols if s in have]
    if task.bench.universe and len(kept) < len(symbols):
        return []
    return kept


#: The longest refusal reason a scorecard note keeps.
MAX_REFUSAL_CHARS = 300


def refused_symbols(task: Any, symbols: list[str], config: Any) -> dict[str, str]:
    """The symbols a market family's env will not play, each with the env's reason (``{}`` for a universe family).

    Each symbol's env is built once, as its episodes would build it (milliseconds; nothing is stepped): a symbol
    in the data the family cannot use (FinReport-v0's user symbol without a peer basket) is left out before any
    work, and the scorecard says why, instead of failing the bench.
    """
    if task.bench.universe:
        return {}
    out = {}
    for symbol in symbols:
        try:
            gym.make(task.env_id, symbol=symbol, split=config.split, **config.env_kwargs).close()
        except (ValueError, LookupError) as exc:
            reason = str(exc.args[0]) if exc.args else type(exc).__name__
            out[symbol] = reason if len(reason) <= MAX_REFUSAL_CHARS else reason[: MAX_REFUSAL_CHARS - 3] + "..."
    return out


def playable_symbols(task: Any, symbols: list[str], config: Any, catalog: Any) -> list[str]:
    """:func:`split_symbols` without the symbols the family's env refuses (:func:`refused_symbols`)."""
    kept = split_symbols(task, symbols, catalog)
    refused = refused_symbols(task, kept, config)
    return [s for s in kept if s not in refused]


def _ci_cell(values: list[float], scale: float, seed: int) -> str:
    """``[lo, hi]`` of the percentile-bootstrap 95% interval of the mean of ``values`` (n/a with fewer than 2)."""
    from finenvs.scoring.bootstrap import bootstrap_ci

    ci = bootstrap_ci(np.asarray(values, dtype=float), n_boot=MEAN_CI_BOOT, seed=seed)
    if not (math.isfinite(ci.lo) and math.isfinite(ci.hi)):
        return NA
    return f"[{fmt_number(ci.lo, scale)}, {fmt_number(ci.hi, scale)}]"


def _nan(d: Mapping[str, Any]) -> dict[str, float]:
    return {k: (math.nan if v is None else v) for k, v in d.items()}


@dataclass(frozen=True)
class MarketSection(Section):
    """The market tables: every baseline on every bench symbol (or once on the universe), each policy's means with
    bootstrap intervals, the agents beside the baselines, the per-symbol table and the charts.

    A family adds its own part by overriding :meth:`more_markdown`, :meth:`more_terminal` or the chart methods.
    """

    # ------------------------------------------------------------------ running
    def symbols(self, ctx: BenchContext) -> list[str]:
        """The symbols of the baselines' episodes (:data:`UNIVERSE` for a universe family's one episode)."""
        task, config = ctx.task, ctx.config
        if task.bench.universe:  # one episode per policy on the whole universe
            return [UNIVERSE] if not config.universe or split_symbols(task, list(config.universe), ctx.catalog) else []
        asked = list(config.symbols) if config.symbols else ctx.catalog.symbols(
            gym.spec(task.env_id).kwargs.get("dataset", "core"))
        return playable_symbols(task, asked, config, ctx.catalog)

    @staticmethod
    def env_kwargs(ctx: BenchContext, symbol: str) -> dict[str, Any]:
        """gym.make kwargs of one episode: a symbol, or a universe (``config.universe``) for a universe family."""
        config = ctx.config
        if symbol != UNIVERSE:
            return {"symbol": symbol, **config.env_kwargs}
        return ({"symbols": list(config.universe)} if config.universe else {}) | dict(config.env_kwargs)

    def run(self, ctx: BenchContext) -> SectionPart:
        task, config = ctx.task, ctx.config
        policies = task.load_baselines()
        part = SectionPart()
        envs: dict[tuple[Any, ...], Any] = {}
        for symbol, name in ctx.progress([(s, p) for s in self.symbols(ctx) for p in policies]):
            try:
                extra = dict(getattr(policies[name][0], "env_kwargs", None) or {})  # e.g. a report writer's mode
                key = (symbol, tuple(sorted(extra.items())))
                if key not in envs:
                    envs[key] = gym.make(task.env_id, split=config.split, **self.env_kwargs(ctx, symbol), **extra)
                env = envs[key]
                policy = ctx.make_policy(name, task.env_id, env, seed=config.seed)
                part.rows.append(ctx.run_episode(env, policy, env_id=task.env_id, policy_name=name, seed=config.seed))
            except Exception as exc:  # an errored task is reported, never dropped
                part.errors.append({"env": task.env_id, "symbol": symbol, "policy": name,
                                    "error": f"{type(exc).__name__}: {exc}"})
        for env in envs.values():
            env.close()
        return part

    def agent_rows(self, ctx: BenchContext, run: Mapping[str, Any]) -> list[EpisodeResult]:
        """An agent run's finished episodes of the bench's split, as rows of the market tables."""
        if run["split"] != ctx.config.split:
            return []
        return [self.agent_row(ctx.task, run, e) for e in run["episodes"] if e["status"] == "complete"]

    @staticmethod
    def agent_row(task: Any, run: Mapping[str, Any], episode: Mapping[str, Any]) -> EpisodeResult:
        """An agent's market episode (as its run recorded it) as a row of the market tables, with its efficiency."""
        m = episode["episode"]
        eff = run["efficiency"]
        n = max(1, len(run["episodes"]))
        start, end = m["window"].split("..")
        return EpisodeResult(
            env_id=run["env"], policy=run["agent"], symbol=str(m["label"]), window_start=start, window_end=end,
            steps=len(m["positions"]),
            total_reward=float(np.log(m["final_equity"])) if m["final_equity"] > 0 else -math.inf,
            final_equity=float(m["final_equity"]), fees=float(m["fees"]),
            look_ahead_attempts=int(m["look_ahead_attempts"]), standard=_nan(m["standard"]),
            herculean=_nan(m["herculean"]), dates=m["dates"], wealth=m["wealth"],
            herculean_equity=m["herculean_equity"], positions=m["positions"],
            extra=episode_part(task).of_metrics(m),
            efficiency={"decisions": eff["decisions"] // n, "format_errors": eff["format_errors"],
                        "tool_calls_per_decision": eff["tool_calls_per_decision"], "tool_errors": eff["tool_errors"],
                        "look_ahead_attempts": int(m["look_ahead_attempts"]), "tokens": eff["tokens"],
                        "cost_usd": eff["cost_usd"], "seconds_per_decision": eff["seconds_per_decision"]},
        )

    # ------------------------------------------------------------------ Markdown
    def markdown(self, view: SectionView) -> list[str]:
        """Means (with intervals), the agents beside the baselines, per symbol, then the charts."""
        env_id = view.task.env_id
        lines = [f"## {env_id}", "", *self.mean_table(view), *view.agents, *self.agent_episode_table(view)]
        lines += ["### Per symbol", "", self.per_symbol_table(view), ""]
        lines += view.charts.take(prefix="sharpe_", contains=env_id)
        lines += self.more_markdown(view)
        equity = view.charts.take(prefix=f"equity_{env_id}_")
        if equity:
            lines += ["### Equity and drawdown by symbol", "", *equity]
        return lines

    def more_markdown(self, view: SectionView) -> list[str]:
        """The family's own tables after the per-symbol table and its Sharpe chart (none here)."""
        return []

    def episode_label(self, r: EpisodeResult) -> str:
        """What an agent's episode is listed by in its efficiency table."""
        return r.symbol

    def mean_table(self, view: SectionView) -> list[str]:
        """The "Mean over symbols" block: each policy's means with bootstrap 95% intervals over its symbols."""
        seed = int(view.config.get("seed") or 0)
        headers = ["policy", "n", *(c[1] for c in STANDARD_COLUMNS), *(c[1] for c in HERCULEAN_COLUMNS),
                   *(f"{label} 95% CI" for _, label, _ in MEAN_CI_COLUMNS)]
        rows = []
        for m in mean_rows(view.rows):
            items = [r for r in view.rows if r.policy == m["policy"]]
            rows.append([md_text(m["policy"]) + (ORACLE_MARK if m.get("oracle") else ""), str(m["n"]),
                         *metric_cells(m["standard"], STANDARD_COLUMNS), *metric_cells(m["herculean"], HERCULEAN_COLUMNS),
                         *(_ci_cell([r.standard[key] for r in items], scale, seed) for key, _, scale in MEAN_CI_COLUMNS)])
        return ["### Mean over symbols", "",
                f"Each policy's mean over its symbols. The 95% CI columns are percentile-bootstrap intervals of that "
                f"mean over the symbols ({MEAN_CI_BOOT} resamples; n/a with fewer than 2 symbols). The symbols share "
                "one window, so the interval says how much the mean depends on which stocks were picked, not how the "
                "policy would do in another quarter (`finenvs bench --windows` measures that).", "",
                md_table(headers, rows), ""]

    def agent_episode_table(self, view: SectionView) -> list[str]:
        """The agents' episodes with their efficiency beside the task score."""
        rows = [r for r in view.rows if r.efficiency is not None]
        if not rows:
            return []
        return [
            "### Agents through the text interface, per episode",
            "",
            "Each episode of an agent (the family's offline scripted agent, and a model when the bench was given one) "
            "read date-locked tools and committed through the same protocol an LLM uses; these episodes are also rows "
            "of the tables of this section. Efficiency beside the task score: format errors (invalid actions), tool "
            "calls per decision, look-ahead attempts, tokens (n/a where the agent reports none), dollar cost and "
            "seconds per decision.",
            "",
            md_table(
                ["symbol", "agent", "CR %", SR_STD, SR_H, "MDD %", "format errors", "tool calls/decision",
                 "look-ahead", "tokens", "cost $", "s/decision"],
                [
                    [md_text(self.episode_label(r)), md_text(r.policy),
                     fmt_number(r.standard["cumulative_return"], 100),
                     fmt_number(r.standard["sharpe"]), fmt_number(r.herculean["sharpe"]),
                     fmt_number(r.standard["max_drawdown"], 100),
                     str(r.efficiency["format_errors"]), fmt_number(r.efficiency["tool_calls_per_decision"]),
                     str(r.efficiency["look_ahead_attempts"]),
                     fmt_count(r.efficiency["tokens"]), fmt_number(r.efficiency["cost_usd"], digits=4), fmt_number(r.efficiency["seconds_per_decision"], 1.0)]
                    for r in sorted(rows, key=lambda r: (r.symbol, r.policy))
                ],
            ),
            "",
        ]

    @staticmethod
    def per_symbol_table(view: SectionView) -> str:
        return md_table(
            ["symbol", "policy", *(c[1] for c in STANDARD_COLUMNS), *(c[1] for c in HERCULEAN_COLUMNS),
             "in market %", "positions", "look-ahead"],
            [
                [md_text(r.symbol), md_text(policy_label(r)), *metric_cells(r.standard, STANDARD_COLUMNS),
                 *metric_cells(r.herculean, HERCULEAN_COLUMNS), fmt_number(r.time_in_market, 100.0),
                 str(r.round_trips), str(r.look_ahead_attempts)]
                for r in sorted(view.rows, key=lambda r: (r.symbol, r.policy))
            ],
        )

    # ------------------------------------------------------------------ terminal
    def terminal(self, view: SectionView) -> list[str]:
        """The per-symbol table and the means, then the agents' efficiency in one line."""
        headers = ["env", "symbol", "policy", "CR %", SR_STD, "MDD %", "CR % (H)", SR_H, "MDD % (H)", "in mkt %",
                   "positions"]
        rows = [
            [r.env_id, r.symbol, policy_label(r),
             fmt_number(r.standard["cumulative_return"], 100), fmt_number(r.standard["sharpe"]),
             fmt_number(r.standard["max_drawdown"], 100), fmt_number(r.herculean["cumulative_return"], 100),
             fmt_number(r.herculean["sharpe"]), fmt_number(r.herculean["max_drawdown"], 100),
             fmt_number(r.time_in_market, 100), str(r.round_trips)]
            for r in sorted(view.rows, key=lambda r: (r.oracle, r.symbol, r.policy))
        ]
        out = [md_table(headers, rows), "", "Mean over symbols:", md_table(
            ["env", "policy", "n", "CR %", SR_STD, "MDD %", "CR % (H)", SR_H, "MDD % (H)"],
            [
                [m["env"], m["policy"] + (ORACLE_MARK if m.get("oracle") else ""), str(m["n"]),
                 fmt_number(m["standard"]["cumulative_return"], 100), fmt_number(m["standard"]["sharpe"]),
                 fmt_number(m["standard"]["max_drawdown"], 100), fmt_number(m["herculean"]["cumulative_return"], 100),
                 fmt_number(m["herculean"]["sharpe"]), fmt_number(m["herculean"]["max_drawdown"], 100)]
                for m in mean_rows(view.rows)
            ],
        )]
        agents = [r for r in view.rows if r.efficiency is not None]
        if agents:
            out += ["", f"Scripted agent through the text interface: {counted(len(agents), 'episode')}, "
                        f"{counted(sum(r.efficiency['decisions'] for r in agents), 'decision')}, "
                        f"{counted(sum(r.efficiency['format_errors'] for r in agents), 'format error')}, "
                        f"{fmt_number(np.mean([r.efficiency['tool_calls_per_decision'] for r in agents]))} tool "
                        "calls/decision, "
                        f"{counted(sum(r.efficiency['look_ahead_attempts'] for r in agents), 'look-ahead attempt')}."]
        return out + self.more_terminal(view)

    def more_terminal(self, view: SectionView) -> list[str]:
        """The family's own terminal lines after the tables (none here)."""
        return []

    # ------------------------------------------------------------------ charts
    def plots(self, view: SectionView) -> list[Path]:
        """Equity/drawdown per chart key (a symbol), then the section's summary charts: compressed PNGs."""
        from finenvs.charts import have_matplotlib

        if not have_matplotlib():
            return []
        by_key: dict[str, list[EpisodeResult]] = {}
        for r in view.rows:
            by_key.setdefault(self.chart_key(r), []).append(r)
        written = [self.equity_chart(view, key, items) for key, items in by_key.items()]
        return written + self.summary_charts(view)

    def chart_key(self, r: EpisodeResult) -> str:
        """The equity chart an episode is drawn on (one per symbol)."""
        return r.symbol

    def curve_label(self, r: EpisodeResult) -> str:
        """An episode's legend entry on its equity chart (before its return)."""
        return policy_label(r)

    def equity_chart(self, view: SectionView, key: str, items: list[EpisodeResult]) -> Path:
        """Wealth and drawdown of every episode drawn on one chart."""
        from finenvs.charts import figure, outside_legend, save_png
        from finenvs.tasks.rendering import drawdown_path

        env_id = view.task.env_id
        fig = figure(9, 4.6)
        ax_eq, ax_dd = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
        for r in items:
            x = np.array(r.dates, dtype="datetime64[D]").astype("O")
            wealth = np.asarray(r.wealth)
            # colour and dash pattern come from the chart's cycle (the same n-th style on both axes); an oracle's
            # curve is a wide faded band under the others
            width, alpha = (2.6, 0.45) if r.oracle else (1.4, 1.0)
            ax_eq.plot(x, wealth, lw=width, alpha=alpha,
                       label=f"{self.curve_label(r)} ({100 * r.standard['cumulative_return']:+.1f}%)")
            ax_dd.plot(x, -100 * drawdown_path(wealth), lw=width * 0.75, alpha=alpha)
        ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
        ax_eq.set_ylabel("wealth (start = 1)")
        ax_eq.set_title(f"{env_id} {key} — {view.config['split']} split, fees included", fontsize=10)
        outside_legend(ax_eq)
        ax_dd.set_ylabel("drawdown %")
        fig.autofmt_xdate()
        return save_png(fig, view.folder / f"equity_{env_id}_{key}.png")

    def summary_charts(self, view: SectionView) -> list[Path]:
        """The Sharpe ratio of every policy on every symbol, as a heatmap."""
        from finenvs.charts import figure, save_png

        env_id, rows = view.task.env_id, view.rows
        symbols = sorted({r.symbol for r in rows})
        policies = list(dict.fromkeys(r.policy for r in rows))
        grid = np.full((len(policies), len(symbols)), np.nan)
        for r in rows:
            grid[policies.index(r.policy), symbols.index(r.symbol)] = r.standard["sharpe"]
        # wide enough for the policy labels and the title with one or two symbols
        fig = figure(max(5.5, 2.0 + 0.8 * len(symbols)), 1.4 + 0.5 * len(policies))
        ax = fig.subplots()
        bound = np.nanmax(np.abs(grid)) if np.isfinite(grid).any() else 1.0
        im = ax.imshow(grid, cmap="RdYlGn", vmin=-bound, vmax=bound, aspect="auto")
        ax.set_xticks(range(len(symbols)), symbols, rotation=45, ha="right")
        ax.set_yticks(range(len(policies)), policies)
        for i in range(len(policies)):
            for j in range(len(symbols)):
                ax.text(j, i, fmt_number(grid[i, j]), ha="center", va="center", fontsize=7)
        ax.set_title(f"{env_id}: Sharpe ratio (standard: all days) by policy and symbol", fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.03)
        return [save_png(fig, view.folder / f"sharpe_{env_id}.png")]


__all__ = ["HERCULEAN_COLUMNS", "MEAN_CI_BOOT", "ORACLE_MARK", "SR_H", "SR_STD", "STANDARD_COLUMNS", "UNIVERSE",
           "EpisodePart", "EpisodeResult", "MarketSection", "episode_part", "mean_rows", "metric_cells", "policy_label",
           "playable_symbols", "refused_symbols", "split_symbols"]
