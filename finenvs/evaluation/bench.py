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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import finenvs
from finenvs.baselines.registry import applicable_policies, make_policy
from finenvs.data.splits import SPLITS
from finenvs.evaluation.agent_runs import SCRIPTED, BenchAgent, agents_markdown, herculean_markdown, run_agent
from finenvs.evaluation.episodes import EpisodeResult, run_episode
from finenvs.scoring.aggregate import SECTION_NAMES, TaskScore, aggregate, resolve_weights
from finenvs.scoring.presets import SHARPE_CONVENTIONS, SHARPE_LABELS
from finenvs.tasks import Selection, TaskSpec, task_of, tasks
from finenvs.text.markdown import md_text

#: The label of the offline scripted agents' rows (each family's, through its text interface and tools).
AGENT_POLICY = SCRIPTED
UNIVERSE = "universe"
#: How oracle rows (policies that read the future) are labelled in tables.
ORACLE_MARK = " (oracle)"


def suites() -> dict[str, list[str]]:
    """``--suite`` presets from the task specs: suite name -> env ids (HERCULEAN's four workflows, FAB++'s)."""
    out: dict[str, list[str]] = {}
    for task in tasks():
        for suite in task.bench.suites:
            out.setdefault(suite, []).append(task.env_id)
    return out


def suite_choices() -> tuple[str, ...]:
    return ("all", *suites())


#: Sharpe column names: each says its convention (see :data:`finenvs.scoring.presets.SHARPE_LABELS`).
SR_STD, SR_H = SHARPE_LABELS["standard"], SHARPE_LABELS["herculean"]
STANDARD_COLUMNS = (
    ("cumulative_return", "CR %", 100.0),
    ("sharpe", SHARPE_LABELS["standard"], 1.0),
    ("max_drawdown", "MDD %", 100.0),
    ("sortino", "Sortino", 1.0),
    ("calmar", "Calmar", 1.0),
    ("turnover", "Turnover", 1.0),
)
HERCULEAN_COLUMNS = (
    ("cumulative_return", "CR % (H)", 100.0),
    ("sharpe", SHARPE_LABELS["herculean"], 1.0),
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
        base_url: An OpenAI-compatible endpoint whose ``model`` runs as an agent in every section (else
            ``$OPENAI_BASE_URL`` when ``model`` is given).
        model: The endpoint's model name.
        a2a_url: A remote A2A agent that runs as an agent in every section (instead of an endpoint).
        endpoint: Further :class:`~finenvs.evaluation.endpoints.OpenAIChatAgent` arguments (``api_key_env``,
            ``timeout``, ``temperature``, ``max_tokens``, ``tool_choice``, ``extra_body``).
        agent_limit: Episodes per family for the model (None: the family's whole plan).
        concurrency: Episodes of an agent in flight at once.
        resume: A bench run folder to continue: agent runs that finished are reused, the rest continue.
        herculean_rule: Run the model under HERCULEAN's rule (five attempts, then the episode fails, "—").
        published: HERCULEAN's published-results files (its Table 2 and Table 3 as JSON) whose rows join the
            HERCULEAN tables beside the agents.
        alpha_cost_floor: Dollar floor of the cost in FAB++'s Alpha score (None: alpha is undefined at zero
            cost; see :mod:`finenvs.scoring.alpha`).
        eval_config: A FAB++ evaluation config (YAML or JSON, :mod:`finenvs.evaluation.eval_config`): the FAB++
            tasks the agents play and the section aggregate counts; recorded with its digest.
        instances: Plan indices per family the agents play (set from ``eval_config``; None: every plan).
        debate: Also play every baseline of the families with a debate round (FinQA-v0, FinOptions-v0) under
            FAB++'s adversarial debate (:mod:`finenvs.evaluation.debate_runs`), and every agent through the text
            interface with ``debate=True`` (``<agent> (debate)`` runs); the aggregate gains an overall with
            each section's mean multiplier.
        windows: Also play the market families' rule baselines and the bench's agents (not the closed-book or
            debate variants) over many windows (``quarterly:START:END``, :mod:`finenvs.evaluation.windows`) on
            the long shipped histories: per policy and agent the distribution of CR/SR/MDD with bootstrap
            intervals and the paired difference to Buy&Hold.
        after: With ``windows``: keep only windows starting after this date (a model's knowledge cutoff).
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
    base_url: str | None = None
    model: str | None = None
    a2a_url: str | None = None
    endpoint: dict[str, Any] = field(default_factory=dict)
    agent_limit: int | None = None
    concurrency: int = 4
    resume: Path | None = None
    herculean_rule: bool = False
    published: list[Path] = field(default_factory=list)
    alpha_cost_floor: float | None = None
    eval_config: Path | None = None
    instances: dict[str, tuple[int, ...]] | None = None
    debate: bool = False
    windows: str | None = None
    after: str | None = None

    @property
    def has_model(self) -> bool:
        return bool(self.base_url or self.model or self.a2a_url)


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
    #: family -> its baseline section (its task spec's ``bench.run``, or the generic table over its plan)
    sections: dict[str, Any] = field(default_factory=dict)
    #: agent runs (:func:`finenvs.evaluation.agent_runs.run_agent`), every family and split
    agents: list[dict[str, Any]] = field(default_factory=list)
    herculean: dict[str, Any] | None = None
    aggregate: dict[str, Any] | None = None
    #: env id -> :func:`finenvs.evaluation.windows.run_windows`'s record (``--windows``)
    windows: dict[str, Any] = field(default_factory=dict)

    def section(self, family: str) -> dict[str, Any] | None:
        return self.sections.get(family)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "rows": [r.row() for r in self.results],
            "means": mean_rows(self.results),
            "errors": self.errors,
            "reproduction_check": self.reproduction,
            "sections": self.sections,
            "agents": self.agents,
            "herculean": self.herculean,
            "aggregate": self.aggregate,
            "windows": self.windows,
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
    """Compare finenvs' herculean baseline rows with the figures HERCULEAN publishes for them (eval split)."""
    if split != "eval":
        return []
    out = []
    for task in tasks():
        baseline = task.bench.herculean_baseline
        for published in task.bench.published.values():
            for r in results:
                pub = published.get(r.symbol)
                if r.env_id != task.env_id or r.policy != baseline or pub is None:
                    continue
                theirs = {"CR": round(100.0 * pub["h_cumulative_return"], 2), "SR": round(pub["h_sharpe"], 2),
                          "MDD": round(100.0 * pub["h_max_drawdown"], 2)}
                ours = {"CR": round(100.0 * r.herculean["cumulative_return"], 2), "SR": round(r.herculean["sharpe"], 2),
                        "MDD": round(100.0 * r.herculean["max_drawdown"], 2)}
                out.append({"env": r.env_id, "symbol": r.symbol, "published": theirs, "finenvs": ours,
                            "match": ours == theirs})
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
        f"(long the first symbol on LONG_SHORT). Pairs chosen from: {', '.join(md_text(s) for s in universe)}.",
        "",
        _table(
            ["policy", "pair", *headers_std, *headers_h, "in market %", "positions", "look-ahead"],
            [
                [md_text(_policy_label(r)), md_text(r.pair or ""), *_metric_cells(r.standard, STANDARD_COLUMNS),
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


def _card_tasks(card: Scorecard) -> list[TaskSpec]:
    """The families of a scorecard, in registration order."""
    return [task_of(e) for e in card.config["envs"]]


#: Resamples and coverage of the intervals on the scorecard's "Mean over symbols" rows.
MEAN_CI_BOOT = 2000
MEAN_CI_COLUMNS = (("cumulative_return", "CR %", 100.0), ("sharpe", SHARPE_LABELS["standard"], 1.0))


def _ci_cell(values: list[float], scale: float, seed: int) -> str:
    """``[lo, hi]`` of the percentile-bootstrap 95% interval of the mean of ``values`` (n/a with fewer than 2)."""
    from finenvs.scoring.bootstrap import bootstrap_ci

    ci = bootstrap_ci(np.asarray(values, dtype=float), n_boot=MEAN_CI_BOOT, seed=seed)
    if not (math.isfinite(ci.lo) and math.isfinite(ci.hi)):
        return "n/a"
    return f"[{ci.lo * scale:.2f}, {ci.hi * scale:.2f}]"


def _mean_table(env_id: str, env_rows: list[EpisodeResult], seed: int) -> list[str]:
    """The "Mean over symbols" block: each policy's means with bootstrap 95% intervals over its symbols."""
    headers = ["policy", "n", *(c[1] for c in STANDARD_COLUMNS), *(c[1] for c in HERCULEAN_COLUMNS),
               *(f"{label} 95% CI" for _, label, _ in MEAN_CI_COLUMNS)]
    rows = []
    for m in mean_rows(env_rows):
        items = [r for r in env_rows if r.policy == m["policy"]]
        rows.append([md_text(m["policy"]) + (ORACLE_MARK if m.get("oracle") else ""), str(m["n"]),
                     *_metric_cells(m["standard"], STANDARD_COLUMNS), *_metric_cells(m["herculean"], HERCULEAN_COLUMNS),
                     *(_ci_cell([r.standard[key] for r in items], scale, seed) for key, _, scale in MEAN_CI_COLUMNS)])
    return ["### Mean over symbols", "",
            f"Each policy's mean over its symbols. The 95% CI columns are percentile-bootstrap intervals of that "
            f"mean over the symbols ({MEAN_CI_BOOT} resamples; n/a with fewer than 2 symbols). The symbols share one "
            "window, so the interval says how much the mean depends on which stocks were picked, not how the policy "
            "would do in another quarter (`finenvs bench --windows` measures that).", "",
            _table(headers, rows), ""]


def _agent_episode_table(rows: list[EpisodeResult]) -> list[str]:
    """The agents' market episodes of one env with their efficiency beside the task score."""
    if not rows:
        return []
    return [
        "### Agents through the text interface, per episode",
        "",
        "Each episode of an agent (the family's offline scripted agent, and a model when the bench was given one) "
        "read date-locked tools and committed through the same protocol an LLM uses; these episodes are also rows of "
        "the tables of this section. Efficiency beside the task score: format errors (invalid actions), tool calls "
        "per decision, look-ahead attempts, tokens (n/a where the agent reports none), dollar cost and seconds per "
        "decision.",
        "",
        _table(
            ["symbol", "agent", "CR %", SR_STD, SR_H, "MDD %", "format errors", "tool calls/decision", "look-ahead",
             "tokens", "cost $", "s/decision"],
            [
                [md_text(r.symbol if r.pair is None else r.pair), md_text(r.policy),
                 _fmt(r.standard["cumulative_return"], 100),
                 _fmt(r.standard["sharpe"]), _fmt(r.herculean["sharpe"]), _fmt(r.standard["max_drawdown"], 100),
                 str(e["format_errors"]), _fmt(e["tool_calls_per_decision"]), str(e["look_ahead_attempts"]),
                 "n/a" if e["tokens"] is None else str(e["tokens"]),
                 _fmt(e["cost_usd"], 1.0), _fmt(e["seconds_per_decision"], 1.0)]
                for r in sorted(rows, key=lambda r: (r.symbol, r.policy)) if (e := r.efficiency) is not None
            ],
        ),
        "",
    ]


class _Charts:
    """The run's PNG charts, each placed once, under the section it illustrates (the rest go to "Charts")."""

    def __init__(self, files: list[str]) -> None:
        self.names = [Path(f).name for f in files if f.endswith(".png")]
        self.placed: set[str] = set()

    def take(self, *, prefix: str = "", contains: str = "") -> list[str]:
        """Markdown image lines of the unplaced charts whose name starts with ``prefix`` and contains ``contains``."""
        picked = [n for n in self.names if n not in self.placed and n.startswith(prefix) and contains in n]
        self.placed.update(picked)
        return [*(f"![{md_text(Path(n).stem)}]({n})" for n in picked), ""] if picked else []

    def rest(self) -> list[str]:
        left = [n for n in self.names if n not in self.placed]
        self.placed.update(left)
        return ["## Charts", "", *(f"![{md_text(Path(n).stem)}]({n})" for n in left), ""] if left else []


def _market_section(card: Scorecard, env_id: str, charts: _Charts) -> list[str]:
    """One market env: means (with intervals), its agents beside the baselines, per symbol, then its charts."""
    env_rows = [r for r in card.results if r.env_id == env_id]
    task = task_of(env_id)
    agent_runs = [r for r in card.agents if r["env"] == env_id]
    agent_rows = [r for r in env_rows if r.efficiency is not None]
    headers_std = [c[1] for c in STANDARD_COLUMNS]
    headers_h = [c[1] for c in HERCULEAN_COLUMNS]
    if any(r.pair is not None for r in env_rows):
        lines = _universe_section(env_id, env_rows, headers_std, headers_h)
        lines += agents_markdown(task, agent_runs) + _agent_episode_table(agent_rows)
        return lines + charts.take(prefix="spread_", contains=env_id) + charts.take(prefix="equity_", contains=env_id)
    lines = [f"## {env_id}", "", *_mean_table(env_id, env_rows, int(card.config.get("seed") or 0))]
    lines += agents_markdown(task, agent_runs) + _agent_episode_table(agent_rows)
    lines += ["### Per symbol", ""]
    rows = sorted(env_rows, key=lambda r: (r.symbol, r.policy))
    lines.append(
        _table(
            ["symbol", "policy", *headers_std, *headers_h, "in market %", "positions", "look-ahead"],
            [
                [md_text(r.symbol), md_text(_policy_label(r)), *_metric_cells(r.standard, STANDARD_COLUMNS),
                 *_metric_cells(r.herculean, HERCULEAN_COLUMNS), _fmt(r.time_in_market, 100.0),
                 str(r.round_trips), str(r.look_ahead_attempts)]
                for r in rows
            ],
        )
    )
    lines.append("")
    lines += charts.take(prefix="sharpe_", contains=env_id)
    lines += report_quality_lines(env_rows)
    equity = charts.take(prefix=f"equity_{env_id}_")
    if equity:
        lines += ["### Equity and drawdown by symbol", "", *equity]
    return lines


def render_markdown(card: Scorecard) -> str:
    """The scorecard as Markdown: each section's tables, its agents beside its baselines, then its charts."""
    cfg = card.config
    lines = [
        f"# finenvs scorecard — {md_text(cfg['run'])}",
        "",
        f"Split `{cfg['split']}` ({cfg['split_dates']}), seed {cfg['seed']}, finenvs {cfg['finenvs_version']}, "
        f"data manifest `{cfg['data_manifest'][:16]}`, {card.seconds:.1f} s on {cfg['machine']}.",
        "",
        "Standard columns: wealth path from 1.0 before the first trade, every close after it "
        f"({SR_STD}: Sharpe of every day's return, ddof=1, sqrt(252), rf=0; MDD of that path). (H) columns: "
        f"the HERCULEAN paper's convention (entry fee in the first value, exit fee in the last; {SR_H}: Sharpe "
        "over the days whose return is not zero, which scales a rarely-invested strategy's Sharpe by about "
        "1 / sqrt(time in market)).",
        "",
    ]
    if cfg.get("split_skipped"):
        lines += [f"Split part: {md_text(line, 2_000)}." for line in cfg["split_skipped"]] + [""]
    charts = _Charts(card.files)
    market_envs = list(dict.fromkeys(r.env_id for r in card.results))
    for env_id in market_envs:
        lines += _market_section(card, env_id, charts)
    if card.reproduction:
        lines += [
            "## Reproduction check: HERCULEAN Table 2 buy-and-hold baseline",
            "",
            "finenvs' `herculean` preset on the shipped data beside the figures the paper publishes for its "
            "Trading and Market Insights workflows (CR %, SR, MDD %; rounded to 2 decimals as published). The "
            "live window (Table 3) is checked by the tests.",
            "",
            _table(
                ["env", "symbol", "CR pub", "CR finenvs", f"{SR_H} pub", f"{SR_H} finenvs", "MDD pub", "MDD finenvs",
                 "match"],
                [
                    [c["env"], md_text(c["symbol"]), f"{c['published']['CR']:.2f}", f"{c['finenvs']['CR']:.2f}",
                     f"{c['published']['SR']:.2f}", f"{c['finenvs']['SR']:.2f}",
                     f"{c['published']['MDD']:.2f}", f"{c['finenvs']['MDD']:.2f}",
                     "yes" if c["match"] else "NO"]
                    for c in card.reproduction
                ],
            ),
            "",
        ]
    for task in _card_tasks(card):
        if task.env_id in market_envs:
            continue
        runs = [r for r in card.agents if r["family"] == task.family]
        if task.family in card.sections:
            lines += _section_markdown(task, card.sections[task.family])
        elif runs:  # a market family whose baselines did not run: its agents still get their section
            lines += [f"## {task.env_id}", ""]
        lines += agents_markdown(task, runs)
        lines += charts.take(prefix=f"{task.family}_") + charts.take(contains=task.env_id)
    if card.herculean:
        lines += herculean_markdown(card.herculean, tuple(card.herculean))
    if card.aggregate:
        lines += aggregate_markdown(card.aggregate)
        lines += charts.take(prefix="section_aggregate")
        if card.aggregate.get("debate"):
            from finenvs.evaluation.debate_runs import debate_markdown

            lines += debate_markdown(card.aggregate["debate"])
            lines += ["| profile | overall | with debate | multipliers |", "|---|---:|---:|---|"]
            lines += [f"| {md_text(name)} | {_fmt(rec['overall'])} | {_fmt(rec['overall_debate'])} | "
                      + ", ".join(f"{k} {v:.3f}" for k, v in rec["debate_multipliers"].items()) + " |"
                      for name, rec in card.aggregate["profiles"].items() if "overall_debate" in rec]
            lines.append("")
    rec = card.config.get("eval_config_record")
    if rec:
        lines += [f"Evaluation config {md_text(rec['name'])} ({md_text(rec['source'])}, digest `{rec['digest'][:16]}`): "
                  f"{rec['tasks']} FAB++ tasks, played by the agents and counted in the aggregate; the family tables "
                  "above show every baseline over the family's whole plan. The selected tasks: `eval_config.json`."
                  + "".join(f" Skipped {md_text(s['type'])}: {md_text(s['reason'], 1_000)}." for s in rec["skipped"]),
                  ""]
    if card.windows:
        from finenvs.evaluation.windows import suite_markdown

        lines += suite_markdown(card.windows)
        lines += charts.take(prefix="windows_")
    if card.errors:
        lines += ["## Errors", ""] + [f"- {md_text(e['env'])} {md_text(e['symbol'])} {md_text(e['policy'])}: "
                                      f"{md_text(e['error'], 1_000)}" for e in card.errors]
        lines.append("")
    lines += charts.rest()
    return "\n".join(lines)


def _plots(card: Scorecard) -> list[Path]:
    """Equity/drawdown per (env, symbol), a Sharpe heatmap per env and the pairs spread: compressed PNGs."""
    if not _matplotlib():
        return []
    from finenvs.evaluation.scorecard_html import figure, outside_legend, save_png
    from finenvs.tasks.rendering import drawdown_path

    written = []
    by_key: dict[tuple[str, str], list[EpisodeResult]] = {}
    for r in card.results:
        by_key.setdefault((r.env_id, UNIVERSE if r.pair is not None else r.symbol), []).append(r)
    for (env_id, symbol), items in by_key.items():
        fig = figure(9, 4.6)
        ax_eq, ax_dd = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
        for r in items:
            x = np.array(r.dates, dtype="datetime64[D]").astype("O")
            wealth = np.asarray(r.wealth)
            pair = f" {r.pair}" if r.pair else ""
            ax_eq.plot(x, wealth, lw=1.2, ls="--" if r.oracle else "-",
                       label=f"{_policy_label(r)}{pair} ({100 * r.standard['cumulative_return']:+.1f}%)")
            ax_dd.plot(x, -100 * drawdown_path(wealth), lw=0.9)
        ax_eq.axhline(1.0, color="grey", lw=0.6, ls="--")
        ax_eq.set_ylabel("wealth (start = 1)")
        ax_eq.set_title(f"{env_id} {symbol} — {card.config['split']} split, fees included", fontsize=10)
        outside_legend(ax_eq)
        ax_dd.set_ylabel("drawdown %")
        fig.autofmt_xdate()
        written.append(save_png(fig, card.run_dir / f"equity_{env_id}_{symbol}.png"))
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
        fig = figure(max(5.5, 2.0 + 0.8 * len(symbols)), 1.4 + 0.5 * len(policies))
        ax = fig.subplots()
        bound = np.nanmax(np.abs(grid)) if np.isfinite(grid).any() else 1.0
        im = ax.imshow(grid, cmap="RdYlGn", vmin=-bound, vmax=bound, aspect="auto")
        ax.set_xticks(range(len(symbols)), symbols, rotation=45, ha="right")
        ax.set_yticks(range(len(policies)), policies)
        for i in range(len(policies)):
            for j in range(len(symbols)):
                ax.text(j, i, _fmt(grid[i, j]), ha="center", va="center", fontsize=7)
        ax.set_title(f"{env_id}: Sharpe ratio (standard: all days) by policy and symbol", fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.03)
        written.append(save_png(fig, card.run_dir / f"sharpe_{env_id}.png"))
    return written


def _matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _spread_plot(card: Scorecard, env_id: str, rows: list[EpisodeResult]) -> Path:
    """One panel per policy: its pair's log price ratio with entries and exits."""
    from finenvs.evaluation.scorecard_html import figure, save_png
    from finenvs.tasks.rendering import draw_spread

    rows = sorted(rows, key=lambda r: (r.oracle, r.policy))
    fig = figure(9, 1.9 * max(1, len(rows)) + 0.6)
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
    return save_png(fig, card.run_dir / f"spread_{env_id}.png")


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
    rows = [(r, q) for r in results if (q := r.quality) is not None]
    if not rows:
        return []
    dims = ("structure", "content", "evidence", "reasoning")
    mean = {d: float(np.mean([q["dimensions"][d] for _, q in rows])) for d in dims}
    return [
        "### FinReport-v0 report quality",
        "",
        "Deterministic score 0-10 (mean of four dimensions, each 10 x the pass ratio of its checks against the "
        "data visible at the report date), averaged over each episode's weekly reports. The ratings are scored as "
        "a strategy in the FinReport-v0 tables above (STRONG_BUY/BUY long, HOLD flat, SELL/STRONG_SELL short, "
        "held daily until the next report; buy_and_hold is Buy&Hold over the same days and fees).",
        "",
        _table(
            ["symbol", "policy", "reports", "score", "structure", "content", "evidence", "reasoning",
             "invalid ratings", "CR %", SR_STD, SR_H, "MDD %"],
            [
                [md_text(r.symbol), md_text(r.policy), str(q["reports"]), _fmt(q["score"]),
                 *(_fmt(q["dimensions"][d]) for d in dims), str(q["invalid_ratings"]),
                 _fmt(r.standard["cumulative_return"], 100), _fmt(r.standard["sharpe"]), _fmt(r.herculean["sharpe"]),
                 _fmt(r.standard["max_drawdown"], 100)]
                for r, q in sorted(rows, key=lambda row: (row[0].symbol, row[0].policy))
            ]
            + [["mean", "", str(sum(q["reports"] for _, q in rows)),
                _fmt(float(np.mean([q["score"] for _, q in rows]))), *(_fmt(mean[d]) for d in dims),
                str(sum(q["invalid_ratings"] for _, q in rows)), "", "", "", ""]],
        ),
        "",
    ]


def episode_result(env_id: str, policy: str, run: dict[str, Any], episode: dict[str, Any]) -> EpisodeResult:
    """An agent's market episode (as its run recorded it) as a row of the market tables, with its efficiency."""
    m = episode["episode"]
    eff = run["efficiency"]
    n = max(1, len(run["episodes"]))
    start, end = m["window"].split("..")

    def nan(d: dict[str, Any]) -> dict[str, float]:
        return {k: (math.nan if v is None else v) for k, v in d.items()}

    return EpisodeResult(
        env_id=env_id, policy=policy, symbol=str(m["label"]), pair=m.get("pair"), spread=m.get("spread"),
        window_start=start, window_end=end, steps=len(m["positions"]),
        total_reward=float(np.log(m["final_equity"])) if m["final_equity"] > 0 else -math.inf,
        final_equity=float(m["final_equity"]), fees=float(m["fees"]), look_ahead_attempts=int(m["look_ahead_attempts"]),
        standard=nan(m["standard"]), herculean=nan(m["herculean"]), dates=m["dates"], wealth=m["wealth"],
        herculean_equity=m["herculean_equity"], positions=m["positions"],
        quality=None if m.get("quality") is None else {
            "reports": len(m["reports"]), "score": m["quality"], "dimensions": m["quality_dimensions"],
            "invalid_ratings": m["invalid_ratings"]},
        efficiency={"decisions": eff["decisions"] // n, "format_errors": eff["format_errors"],
                    "tool_calls_per_decision": eff["tool_calls_per_decision"], "tool_errors": eff["tool_errors"],
                    "look_ahead_attempts": int(m["look_ahead_attempts"]), "tokens": eff["tokens"],
                    "cost_usd": eff["cost_usd"], "seconds_per_decision": eff["seconds_per_decision"]},
    )


def _bench_agents(config: BenchConfig) -> list[BenchAgent]:
    """The agents of a bench run: each family's scripted agent (unless ``agents=False``) and the model, if any."""
    from finenvs.evaluation.agents import make_agent

    out = []
    if config.agents:
        out.append(BenchAgent(SCRIPTED, lambda task: task.make_scripted_agent()))
        out.append(BenchAgent(f"{SCRIPTED} (closed book)", lambda task: task.make_scripted_agent(),
                              env_kwargs={"tools": "none"}, closed_book_only=True))
        if config.debate:
            out.append(BenchAgent(f"{SCRIPTED} (debate)", lambda task: task.make_scripted_agent(),
                                  env_kwargs={"debate": True}, debate_of=SCRIPTED))
    if config.has_model:
        probe = make_agent(tasks()[0].env_id, base_url=config.base_url, model=config.model, a2a_url=config.a2a_url,
                           **config.endpoint)
        name = config.model or probe.name
        out.append(BenchAgent(name, lambda task: make_agent(task.env_id, base_url=config.base_url, model=config.model,
                                                            a2a_url=config.a2a_url, **config.endpoint), model=True))
        if config.debate:
            out.append(BenchAgent(f"{name} (debate)", out[-1].make, model=True, env_kwargs={"debate": True},
                                  debate_of=name))
    return out


def _split_symbols(task: TaskSpec, symbols: list[str], catalog: Any) -> list[str]:
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


def split_skips(specs: list[TaskSpec], config: BenchConfig, catalog: Any) -> list[str]:
    """One line per market family whose split part leaves out asked-for symbols (long histories only)."""
    out = []
    for task in specs:
        asked = (config.universe if task.bench.universe else config.symbols) if task.bench.market_tables else None
        if not asked:
            continue
        kept = _split_symbols(task, list(asked), catalog)
        left = [s for s in asked if s not in kept]
        if left:
            what = "the universe" if task.bench.universe else ", ".join(left)
            out.append(f"{task.env_id}: {what} played in the windows part only ({', '.join(left)} "
                       f"{'has' if len(left) == 1 else 'have'} no rows in the split's dataset)")
    return out


def _agent_selection(task: TaskSpec, split: str, config: BenchConfig, model: bool, catalog: Any = None,
                     env_kwargs: dict[str, Any] | None = None) -> Selection | None:
    """The episodes an agent plays. Market families: the bench's symbols (or universe); without ``--symbols`` the
    scripted agents play every symbol the baselines play and a model the family's plan (HERCULEAN's four stocks).
    Other families: their plan (a model's cut to ``agent_limit``). None when ``--windows`` left the split part no
    symbol to play (see :func:`_split_symbols`)."""
    symbols = None
    if task.bench.market_tables:
        symbols = config.universe if task.bench.universe else config.symbols
        if symbols is not None and catalog is not None:
            symbols = _split_symbols(task, symbols, catalog)
            if not symbols:
                return None
        if symbols is None and not model and not task.bench.universe and catalog is not None:
            symbols = catalog.symbols(gym.spec(task.env_id).kwargs.get("dataset", "core"))
    instances = (config.instances or {}).get(task.family)
    return Selection(split=split, symbols=tuple(symbols) if symbols else None, seeds=(config.seed,),
                     instances=instances, limit=config.agent_limit if model else None,
                     env_kwargs={**config.env_kwargs, **(env_kwargs or {})})


def _market_jobs(task: TaskSpec, config: BenchConfig, catalog: Any) -> list[tuple[str, str, str]]:
    """(env, symbol or UNIVERSE, policy) of a market family's baseline episodes."""
    if task.bench.universe:  # one episode per policy on the whole universe
        symbols = [UNIVERSE] if not config.universe or _split_symbols(task, list(config.universe), catalog) else []
    elif config.symbols:
        symbols = _split_symbols(task, list(config.symbols), catalog)
    else:
        symbols = catalog.symbols(gym.spec(task.env_id).kwargs.get("dataset", "core"))
    return [(task.env_id, symbol, policy) for symbol in symbols for policy in applicable_policies(task.env_id)]


def generic_section(task: TaskSpec, config: BenchConfig) -> dict[str, Any]:
    """Every baseline of a family over its plan, summarised by its run metrics (families without a section)."""
    from finenvs.evaluation.episodes import play_episode

    episodes = task.plan(Selection(split=config.split, seeds=(config.seed,), env_kwargs=dict(config.env_kwargs)))
    section: dict[str, Any] = {"n": len(episodes), "policies": {}}
    for name, (cls, _) in task.load_baselines().items():
        metrics = []
        for ep in episodes:
            env = gym.make(task.env_id, **{**ep.env_kwargs, **(getattr(cls, "env_kwargs", None) or {})})
            policy = make_policy(name, task.env_id, env, seed=config.seed)
            metrics.append(play_episode(env, policy, seed=ep.seed, options=ep.options)["metrics"])
            env.close()
        section["policies"][name] = task.metrics_of_run(metrics)
    return section


def generic_markdown(task: TaskSpec, section: dict[str, Any]) -> list[str]:
    rows = [[name, *(c.cell(m) for c in task.columns)] for name, m in section["policies"].items()]
    return [f"## {task.bench.title} ({task.env_id})", "", f"Every baseline over the family's {section['n']} plan "
            "episodes.", "", _table(["policy", *(c.label for c in task.columns)], rows), ""]


def _section_markdown(task: TaskSpec, section: dict[str, Any]) -> list[str]:
    return task.bench.markdown(section) if task.bench.markdown else generic_markdown(task, section)


def herculean_baselines(specs: list[TaskSpec], agent_runs: list[dict[str, Any]], splits: tuple[str, ...],
                        config: BenchConfig, catalog: Any) -> dict[str, Any]:
    """HERCULEAN's "BL" rows: each workflow's ``herculean_baseline`` over the episodes the agents played."""
    from finenvs.evaluation.episodes import play_episode

    out: dict[str, Any] = {}
    for task in specs:
        name = task.bench.herculean_baseline
        if name is None:
            continue
        for split in splits:
            runs = [r for r in agent_runs if r["family"] == task.family and r["split"] == split]
            if not runs:
                continue
            selection = _agent_selection(task, split, config, model=False, catalog=catalog)
            if selection is None:
                continue
            episodes = task.plan(selection)
            labels = {e["index"]: e["label"] for e in runs[0]["episodes"]}
            cells = {}
            for ep in episodes:
                env = gym.make(task.env_id, **ep.env_kwargs)
                result = play_episode(env, make_policy(name, task.env_id, env, seed=config.seed), seed=ep.seed,
                                      options=ep.options)
                env.close()
                cells[labels.get(ep.index, result["metrics"]["label"])] = task.metrics_of_run([result["metrics"]])
            out.setdefault(task.family, {})[split] = {f"{name} (BL)": cells}
    return out


def _select(config: BenchConfig) -> list[TaskSpec]:
    if config.suite not in suite_choices():
        raise ValueError(f"unknown suite {config.suite!r}; suites: {list(suite_choices())}")
    if config.envs:
        return [task_of(e) for e in config.envs]  # unknown env -> KeyError naming the valid ids
    wanted = suites().get(config.suite) if config.suite != "all" else None
    return [t for t in tasks() if wanted is None or t.env_id in wanted]


def _run_dir(config: BenchConfig) -> Path:
    if config.resume is not None:
        if not (Path(config.resume) / "bench.json").is_file():
            raise FileNotFoundError(f"{config.resume}: no bench.json; not a finenvs bench run folder")
        return Path(config.resume)
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
    selection = None
    if config.eval_config is not None:  # a bad config fails here, before any work
        from finenvs.evaluation.eval_config import bench_pools, read_config, select

        selection = select(read_config(config.eval_config), bench_pools(config.split, config.seed),
                           source=str(config.eval_config))
        config = replace(config, envs=[t.env_id for t in tasks() if t.family in selection.families],
                         instances={f: selection.instances(f) for f in selection.families})
    specs = _select(config)
    resolve_weights(config.weights)  # fail before any work on bad weights
    if config.windows:  # a bad window spec fails here
        from finenvs.evaluation.windows import parse_windows

        parse_windows(config.windows)
    catalog = default_catalog()
    for symbol in [*(config.symbols or []), *(config.universe or [])]:  # fail fast, before any work
        if not config.windows and symbol not in catalog.symbols("core"):  # long histories hold more names
            raise KeyError(f"unknown symbol {symbol!r}; valid symbols: {catalog.symbols('core')}")
    bench_agents = _bench_agents(config)  # a bad endpoint or A2A URL fails here
    for path in config.published:  # a bad published-results file fails here
        from finenvs.evaluation.agent_runs import load_published

        load_published(path)
    began = time.perf_counter()
    run_dir = _run_dir(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "bench.json").write_text(json.dumps({"config": _config_record(config, specs)}, indent=2,
                                                   default=_json_default) + "\n")
    if selection is not None:
        (run_dir / "eval_config.json").write_text(json.dumps(selection.record(), indent=2, default=str) + "\n")
    jobs = [job for task in specs if task.bench.market_tables for job in _market_jobs(task, config, catalog)]
    skips = split_skips(specs, config, catalog)
    if skips and config.progress:
        print("finenvs bench: " + "; ".join(skips), flush=True)
    results: list[EpisodeResult] = []
    errors: list[dict[str, str]] = []
    envs: dict[tuple[Any, ...], Any] = {}
    bar = tqdm(jobs, desc="finenvs bench", unit="episode", disable=not config.progress or None)
    for env_id, symbol, policy_name in bar:
        bar.set_postfix_str(f"{env_id} {symbol} {policy_name}", refresh=False)
        try:
            extra = _policy_env_kwargs(env_id, policy_name)
            key = (env_id, symbol, tuple(sorted(extra.items())))
            if key not in envs:
                envs[key] = gym.make(env_id, split=config.split, **_market_kwargs(env_id, symbol, config), **extra)
            env = envs[key]
            policy = make_policy(policy_name, env_id, env, seed=config.seed)
            results.append(run_episode(env, policy, env_id=env_id, policy_name=policy_name, seed=config.seed))
        except Exception as exc:  # an errored task is reported, never dropped
            errors.append({"env": env_id, "symbol": symbol, "policy": policy_name, "error": f"{type(exc).__name__}: {exc}"})
    for env in envs.values():
        env.close()
    windows: dict[str, Any] = {}
    if config.windows:
        from finenvs.evaluation.windows import run_windows_suite

        windows = run_windows_suite([t.env_id for t in specs], config.windows, symbols=config.symbols,
                                    universe=config.universe, after=config.after, seed=config.seed,
                                    cache_dir=Path(config.out) / "windows-cache", progress=config.progress,
                                    env_kwargs=config.env_kwargs,
                                    agents=[a for a in bench_agents if not a.closed_book_only and a.debate_of is None],
                                    agent_root=run_dir / "windows-agents")
        errors += [{"env": e, "symbol": "-", "policy": "windows", "error": r["error"]}
                   for e, r in windows.items() if "error" in r]
    sections: dict[str, Any] = {}
    for task in specs:
        if task.bench.market_tables:
            continue
        if config.progress:
            bar.write(f"finenvs bench: {task.bench.title} section ({task.env_id})")
        try:
            sections[task.family] = task.bench.run(config) if task.bench.run else generic_section(task, config)
        except Exception as exc:  # reported, never dropped
            errors.append({"env": task.env_id, "symbol": "-", "policy": "-", "error": f"{type(exc).__name__}: {exc}"})
    agent_runs = _run_agents(bench_agents, specs, config, run_dir / "agents", errors, catalog)
    for run in agent_runs:
        task = task_of(run["env"])
        if task.bench.market_tables and run["split"] == config.split:
            results += [episode_result(run["env"], run["agent"], run, e) for e in run["episodes"]
                        if e["status"] == "complete"]
    herculean_specs = [t for t in specs if t.bench.herculean]
    splits = _herculean_splits(config)
    herculean = None
    if herculean_specs and agent_runs:
        from finenvs.evaluation.agent_runs import herculean_tables

        baselines = herculean_baselines(herculean_specs, agent_runs, splits, config, catalog)
        herculean = herculean_tables(herculean_specs, agent_runs, baselines, splits, config.published)
    fabpp = [t for t in specs if t.bench.fabpp_sections]
    debates: dict[str, Any] = {}
    if config.debate:
        from finenvs.evaluation.debate_runs import run_debate

        for task in fabpp:
            if task.debate is None:
                continue
            try:
                debates[task.env_id] = run_debate(task, config.split, config.seed,
                                                  (config.instances or {}).get(task.family), config.env_kwargs)
            except Exception as exc:  # reported, never dropped
                errors.append({"env": task.env_id, "symbol": "-", "policy": "debate",
                               "error": f"{type(exc).__name__}: {exc}"})
        from finenvs.evaluation.agent_runs import debate_record

        for run in agent_runs:  # the agents' debated runs, beside the baselines'
            if run.get("debate_of") is not None and run["env"] in debates:
                debates[run["env"]].setdefault("agents", {})[run["debate_of"]] = debate_record(run)
    aggregate_record = (section_aggregate(fabpp, sections, agent_runs, config.weights, errors,
                                          cost_floor=config.alpha_cost_floor,
                                          task_ids=None if selection is None else
                                          {f: selection.task_ids(f) for f in selection.families},
                                          debates=debates)
                        if fabpp else None)
    lo, hi = SPLITS[config.split]
    card = Scorecard(
        config={**_config_record(config, specs), "run": run_dir.name, "split_dates": f"{lo}..{hi}",
                "finenvs_version": finenvs.__version__, "data_manifest": catalog.data_digest,
                "machine": f"{platform.machine()} Python {platform.python_version()}", "split_skipped": skips,
                "sharpe_conventions": {SHARPE_LABELS[k]: v for k, v in SHARPE_CONVENTIONS.items()},
                "eval_config_record": None if selection is None else {
                    "name": selection.name, "source": selection.source, "digest": selection.digest,
                    "tasks": len(selection.tasks), "skipped": selection.skipped},
                "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")},
        results=results,
        errors=errors,
        reproduction=reproduction_check(results, config.split),
        run_dir=run_dir,
        seconds=0.0,
        sections=sections,
        agents=agent_runs,
        herculean=herculean,
        aggregate=aggregate_record,
        windows=windows,
    )
    if config.plots:
        from finenvs.evaluation.windows import suite_plots

        card.files += [str(p) for p in suite_plots(card.windows, run_dir)]
        card.files += [str(p) for p in _plots(card)]
        for task in specs:
            if task.bench.plots and task.family in sections:
                card.files += [str(p) for p in task.bench.plots(sections[task.family], run_dir)]
        from finenvs.evaluation.scorecard_html import aggregate_plot

        card.files += [str(p) for p in aggregate_plot(card)]
    card.seconds = time.perf_counter() - began
    write_scorecard(card, html=config.html)
    return card


def write_scorecard(card: Scorecard, *, html: bool = True) -> None:
    """Write ``scorecard.json``, ``scorecard.md`` and (``html``) ``scorecard.html`` into the card's run folder; they
    go first in ``card.files``. The page embeds only the PNG charts ``card.files`` lists (the bench's own); every
    name from outside is Markdown text (:func:`~finenvs.text.markdown.md_text`)."""
    run_dir = card.run_dir
    json_path = run_dir / "scorecard.json"
    md_path = run_dir / "scorecard.md"
    json_path.write_text(json.dumps(card.to_json(), indent=2, default=_json_default, allow_nan=True) + "\n")
    charts = [f for f in card.files if f.endswith(".png")]
    card.files = [str(json_path), str(md_path), *card.files]
    markdown = render_markdown(card)
    md_path.write_text(markdown)
    if html:
        from finenvs.evaluation.scorecard_html import write_html

        html_path = run_dir / "scorecard.html"
        write_html(markdown, html_path, title=f"finenvs scorecard — {run_dir.name}", images=charts)
        card.files.insert(2, str(html_path))


def _config_record(config: BenchConfig, specs: list[TaskSpec]) -> dict[str, Any]:
    return {"split": config.split, "seed": config.seed, "suite": config.suite, "envs": [t.env_id for t in specs],
            "symbols": config.symbols, "universe": config.universe, "env_kwargs": config.env_kwargs,
            "agents": config.agents, "model": config.model, "base_url": config.base_url, "a2a_url": config.a2a_url,
            "agent_limit": config.agent_limit, "herculean_rule": config.herculean_rule,
            "alpha_cost_floor": config.alpha_cost_floor, "debate": config.debate, "windows": config.windows,
            "after": config.after,
            "eval_config": None if config.eval_config is None else str(config.eval_config),
            "instances": config.instances}


def _herculean_splits(config: BenchConfig) -> tuple[str, ...]:
    """The backtest split (the bench's) and, when it is the eval quarter, the live one (Table 3)."""
    return (config.split, "live") if config.split == "eval" else (config.split,)


def _run_agents(bench_agents: list[BenchAgent], specs: list[TaskSpec], config: BenchConfig, root: Path,
                errors: list[dict[str, str]], catalog: Any) -> list[dict[str, Any]]:
    """Every agent over every family's plan (and, for HERCULEAN's workflows, the live split too)."""
    runs = []
    for agent in bench_agents:
        for task in specs:
            if agent.closed_book_only and not task.bench.closed_book:
                continue
            if agent.debate_of is not None and task.debate is None:
                continue
            splits = _herculean_splits(config) if task.bench.herculean and task.bench.live else (config.split,)
            for split in splits:
                if config.progress:
                    print(f"finenvs bench: agent {agent.name} on {task.env_id} ({split})", flush=True)
                try:
                    extra = {"failure_rule": "herculean"} if agent.model and config.herculean_rule else {}
                    selection = _agent_selection(task, split, config, agent.model, catalog, dict(agent.env_kwargs))
                    if selection is None:  # --windows symbols with long histories only: nothing in this split
                        continue
                    run = run_agent(agent, task, selection, root, concurrency=config.concurrency,
                                    progress=config.progress, **extra)
                    run["sections"] = list(task.bench.fabpp_sections)
                    runs.append(run)
                except Exception as exc:  # reported, never dropped
                    errors.append({"env": task.env_id, "symbol": split, "policy": agent.name,
                                   "error": f"{type(exc).__name__}: {exc}"})
    return runs


def section_aggregate(fabpp: list[TaskSpec], sections: dict[str, Any], agent_runs: list[dict[str, Any]],
                      weights: str | dict[str, float], errors: list[dict[str, str]], *,
                      cost_floor: float | None = None, task_ids: dict[str, set[str]] | None = None,
                      debates: dict[str, Any] | None = None) -> dict[str, Any]:
    """The FAB++ section aggregate of each baseline profile (the families' ``profiles``) and of each agent, each
    with FAB++'s Alpha score (``record["alpha"]``, :func:`finenvs.scoring.alpha.alpha_score`: R the overall, D 1.0
    without a debate round, the agent's dollar cost and look-ahead attempts per decision; a baseline costs 0).

    A family's section lists its tasks per policy (``section["tasks"][policy]``, each with its FAB++ section
    and 0-100 score); an agent's tasks are its runs' episodes. A task whose policy raised scores 0; a section that
    failed as a whole counts as one errored task (0), so it is never silently dropped. With ``task_ids`` (family ->
    the task ids an evaluation config selected) a profile counts only those tasks of the families named. With
    ``debates`` (env id -> :func:`~finenvs.evaluation.debate_runs.run_debate`'s record) a profile also gets
    ``overall_debate``: the aggregate with each debated section's mean multiplier of the profile's policy.
    """
    from finenvs.evaluation.agent_runs import fabpp_tasks
    from finenvs.scoring.alpha import alpha_score

    out: dict[str, Any] = {"weights": resolve_weights(weights), "profiles": {}}
    failed = {e["env"] for e in errors}
    profiles = list(dict.fromkeys(p for t in fabpp for p in t.bench.profiles))
    for profile in profiles:
        tasks_: list[TaskScore] = []
        answered: dict[str, str] = {}
        multipliers: dict[str, float] = {}
        debated_rows: list[float] = []
        for task in fabpp:
            policy = task.bench.profiles.get(profile)
            if policy is None:
                continue
            for name in task.bench.fabpp_sections:
                answered[name] = policy
            section = sections.get(task.family)
            if section is None:
                if task.env_id in failed:
                    tasks_ += [TaskScore(name, task.env_id, None, f"the {task.env_id} section failed")
                               for name in task.bench.fabpp_sections[:1]]
                continue
            debated = (debates or {}).get(task.env_id, {}).get("policies", {}).get(policy)
            if debated:
                multipliers.update({k: v for k, v in debated["section_multipliers"].items()
                                    if k in task.bench.fabpp_sections})
                debated_rows += [float(row["multiplier"]) for row in debated["rows"]]
            keep = None if task_ids is None else task_ids.get(task.family)
            tasks_ += [TaskScore(t["section"], t["task_id"], t["score"], t.get("error"))
                       for t in section["tasks"][policy] if keep is None or t["task_id"] in keep]
        record = aggregate(tasks_, out["weights"]).record()
        if multipliers:
            record["overall_debate"] = aggregate(tasks_, out["weights"], multipliers).overall
            record["debate_multipliers"] = multipliers
        alpha = alpha_score(record["overall"], cost_usd=0.0, decisions=len(tasks_), cost_floor=cost_floor,
                            debate_multiplier=sum(debated_rows) / len(debated_rows) if debated_rows else 1.0)
        out["profiles"][profile] = {**record, "policies": answered, "alpha": alpha.record()}
    if debates:
        out["debate"] = debates
    fab_runs = [r for r in agent_runs if r["family"] in {t.family for t in fabpp} and r.get("debate_of") is None]
    for agent, items in fabpp_tasks(fab_runs).items():
        tasks_ = [TaskScore(*item) for item in items]
        record = aggregate(tasks_, out["weights"]).record()
        multipliers = {}
        debated_tasks = []
        for debate in (debates or {}).values():
            mine = debate.get("agents", {}).get(agent)
            if mine:
                multipliers.update(mine["section_multipliers"])
                debated_tasks += [row["multiplier"] for row in mine["rows"]]
        if multipliers:
            record["overall_debate"] = aggregate(tasks_, out["weights"], multipliers).overall
            record["debate_multipliers"] = multipliers
        effs = [r["efficiency"] for r in fab_runs if r["agent"] == agent]
        costs = [e.get("cost_usd") for e in effs]
        alpha = alpha_score(record["overall"], cost_usd=None if None in costs else float(sum(costs)),
                            lookahead_attempts=sum(int(e.get("look_ahead_attempts") or 0) for e in effs),
                            decisions=sum(int(e.get("decisions") or 0) for e in effs), cost_floor=cost_floor,
                            debate_multiplier=sum(debated_tasks) / len(debated_tasks) if debated_tasks else 1.0)
        out["profiles"][agent] = {**record, "policies": {name: agent for name in record["sections"]},
                                  "alpha": alpha.record()}
    return out


def aggregate_markdown(agg: dict[str, Any]) -> list[str]:
    """The scorecard's section-aggregate block."""
    w = agg["weights"]
    names = list(w)
    lines = ["## Section aggregate (FAB++)", "",
             "Every task normalised to 0-100; section score = mean of its tasks (an errored task counts 0); "
             "weights " + ", ".join(f"{SECTION_NAMES.get(k, k)} {100 * v:.0f}%" for k, v in w.items())
             + ", redistributed over the sections that ran. Each profile names the baseline that answers each "
             "section. Alpha is FAB++'s R·D / (C·P): R the overall, D the debate multiplier (1.0: no debate round), "
             "C = ln(1 + cost in $), P = 1 + look-ahead attempts per decision; at zero cost C = 0 and alpha is "
             "undefined (n/a), never infinite (`--alpha-cost-floor` sets a dollar floor).", "",
             "| profile | " + " | ".join(SECTION_NAMES.get(k, k) for k in names) + " | overall | alpha (R, C, P) |",
             "|---|" + "---:|" * (len(names) + 2)]
    for profile, rec in agg["profiles"].items():
        cells = []
        for k in names:
            sec = rec["sections"][k]
            cells.append("—" if sec["score"] is None else f"{sec['score']:.2f} ({md_text(rec['policies'][k])})")
        overall = "—" if rec["overall"] is None else f"**{rec['overall']:.2f}**"
        lines.append(f"| {md_text(profile)} | " + " | ".join(cells) + f" | {overall} | {_alpha_cell(rec.get('alpha'))} |")
    lines.append("")
    return lines


def _alpha_cell(alpha: dict[str, Any] | None) -> str:
    """``alpha (R, C, P)`` for a table: n/a with its reason when undefined."""
    if not alpha:
        return "—"
    c = "n/a" if alpha["C"] is None else f"{alpha['C']:.4f}"
    parts = f"R {_fmt(alpha['R'])}, C {c}, P {alpha['P']:.2f}"
    if alpha["alpha"] is None:
        note = alpha["note"]
        reason = "zero cost" if "zero cost" in note else "cost unknown" if "unknown" in note else "no score"
        return f"n/a: {reason} ({parts})"
    return f"{alpha['alpha']:.2f} ({parts})"


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def terminal_table(card: Scorecard) -> str:
    """The per-symbol table and the means, for printing."""
    out = []
    headers = ["env", "symbol", "policy", "CR %", SR_STD, "MDD %", "CR % (H)", SR_H, "MDD % (H)", "in mkt %",
               "positions"]
    rows = [
        [r.env_id, r.symbol, _policy_label(r),
         _fmt(r.standard["cumulative_return"], 100), _fmt(r.standard["sharpe"]), _fmt(r.standard["max_drawdown"], 100),
         _fmt(r.herculean["cumulative_return"], 100), _fmt(r.herculean["sharpe"]), _fmt(r.herculean["max_drawdown"], 100),
         _fmt(r.time_in_market, 100), str(r.round_trips)]
        for r in sorted(card.results, key=lambda r: (r.env_id, r.oracle, r.symbol, r.policy))
    ]
    mean = mean_rows(card.results)
    if rows:  # no market family in this run (e.g. --suite fabpp): no empty market tables
        out += [_table(headers, rows), "", "Mean over symbols:", _table(
            ["env", "policy", "n", "CR %", SR_STD, "MDD %", "CR % (H)", SR_H, "MDD % (H)"],
            [
                [m["env"], m["policy"] + (ORACLE_MARK if m.get("oracle") else ""), str(m["n"]),
                 _fmt(m["standard"]["cumulative_return"], 100), _fmt(m["standard"]["sharpe"]),
                 _fmt(m["standard"]["max_drawdown"], 100), _fmt(m["herculean"]["cumulative_return"], 100),
                 _fmt(m["herculean"]["sharpe"]), _fmt(m["herculean"]["max_drawdown"], 100)]
                for m in mean
            ],
        )]
    agents = [e for r in card.results if (e := r.efficiency) is not None]
    if agents:
        out.append("")
        out.append(
            f"Scripted agent through the text interface: {len(agents)} episode(s), "
            f"{sum(e['decisions'] for e in agents)} decisions, "
            f"{sum(e['format_errors'] for e in agents)} format errors, "
            f"{np.mean([e['tool_calls_per_decision'] for e in agents]):.2f} tool calls/decision, "
            f"{sum(e['look_ahead_attempts'] for e in agents)} look-ahead attempts."
        )
    reports = [q for r in card.results if (q := r.quality) is not None]
    if reports:
        out.append("")
        out.append(
            f"FinReport-v0 report quality (0-10) over {sum(q['reports'] for q in reports)} reports: "
            f"{np.mean([q['score'] for q in reports]):.2f}; "
            + ", ".join(f"{d} {np.mean([q['dimensions'][d] for q in reports]):.2f}"
                        for d in ("structure", "content", "evidence", "reasoning"))
        )
    for task in _card_tasks(card):
        section = card.sections.get(task.family)
        if section is not None:
            out.append("")
            terminal = task.bench.terminal
            out += terminal(section) if terminal else [ln for ln in _section_markdown(task, section) if ln]
        runs = [r for r in card.agents if r["family"] == task.family]
        if runs:
            out.append("")
            out.append(f"{task.env_id} agents: " + "; ".join(
                f"{r['agent']} ({r['split']}, {len(r['episodes'])} episodes"
                + (f", {r['failed']} failed" if r["failed"] else "") + "): "
                + ", ".join(f"{c.label} {c.cell(r['metrics'])}" for c in task.columns[:4]) for r in runs))
    if card.herculean:
        out.append("")
        out += [ln for ln in herculean_markdown(card.herculean, tuple(card.herculean))[3:] if ln]
    if card.aggregate:
        out.append("")
        out.append("Section aggregate (" + ", ".join(f"{k} {100 * v:.0f}%" for k, v in card.aggregate["weights"].items())
                   + "):")
        out.append(_table(["profile", *card.aggregate["weights"], "overall", "alpha (R, C, P)"], [
            [name, *("n/a" if rec["sections"][k]["score"] is None else f"{rec['sections'][k]['score']:.2f}"
                     for k in card.aggregate["weights"]),
             "n/a" if rec["overall"] is None else f"{rec['overall']:.2f}", _alpha_cell(rec.get("alpha"))]
            for name, rec in card.aggregate["profiles"].items()]))
    if card.reproduction:
        ok = sum(c["match"] for c in card.reproduction)
        out.append("")
        out.append(
            f"HERCULEAN Table 2 buy-and-hold reproduced on {ok}/{len(card.reproduction)} rows "
            f"({', '.join(sorted({c['env'] for c in card.reproduction}))}; CR, SR, MDD to the published 2 decimals)."
        )
    if card.windows:
        from finenvs.evaluation.windows import suite_terminal

        out += suite_terminal(card.windows)
    return "\n".join(out)
