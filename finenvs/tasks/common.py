"""Pieces several task specs share: market episode metrics from ``info`` dicts, symbol plans, mean aggregation.

Market envs report ``date``, ``equity``, ``equity_at_decision`` and ``position``
in every step's ``info`` (a step spanning several days lists them in
``info["days"]``). :func:`market_curves` turns those into the daily curves and
:func:`market_episode_metrics` into CR/SR/MDD under both presets (see
:mod:`finenvs.scoring.presets`) — the same function for the runner's live
record, ``finenvs score``'s replay and :class:`finenvs.wrappers.EpisodeMetrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from finenvs.scoring.presets import SHARPE_CONVENTIONS, SHARPE_LABELS
from finenvs.tasks.spec import Column, EpisodeSpec, Selection, finish_plan, one_seed

REQUIRED_INFO = ("date", "equity", "equity_at_decision", "position")
METRIC_KEYS = ("cumulative_return", "sharpe", "max_drawdown")

#: CR/SR/MDD under the standard convention, then HERCULEAN's (``h_`` keys).
MARKET_COLUMNS = (
    Column("cumulative_return", "CR %", 100.0),
    Column("sharpe", SHARPE_LABELS["standard"]),
    Column("max_drawdown", "MDD %", 100.0),
    Column("h_cumulative_return", "CR % (H)", 100.0),
    Column("h_sharpe", SHARPE_LABELS["herculean"]),
    Column("h_max_drawdown", "MDD % (H)", 100.0),
)


#: HERCULEAN's own columns (its Table 2 and 3).
HERCULEAN_MARKET_COLUMNS = MARKET_COLUMNS[3:]


def market_curves(reset_info: dict[str, Any], infos: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Daily curves of a market episode: ``dates`` and ``wealth`` from the reset close, the equity at each
    decision and the position held over each day.

    Raises:
        KeyError: A step's info lacks one of :data:`REQUIRED_INFO`.
    """
    dates, wealth = [reset_info["date"]], [float(reset_info["equity"])]
    decision_equity: list[float] = []
    positions: list[float] = []
    for info in infos:
        missing = [k for k in REQUIRED_INFO if k not in info]
        if missing:
            raise KeyError(f"market metrics need info keys {list(REQUIRED_INFO)}; the env did not report {missing}")
        for day in info.get("days") or (info,):
            dates.append(day["date"])
            wealth.append(float(day["equity"]))
            decision_equity.append(float(day["equity_at_decision"]))
            positions.append(float(day["position"]))
    return {"dates": dates, "wealth": wealth, "decision_equity": decision_equity, "positions": positions}


def curve_metrics(curves: dict[str, list[Any]], *, periods: int | None = None, risk_free: float = 0.0
                  ) -> dict[str, Any]:
    """Both presets' metrics of :func:`market_curves`, with the curves the charts draw."""
    from finenvs.scoring import TRADING_DAYS_PER_YEAR, herculean_metrics, standard_metrics

    periods = periods or TRADING_DAYS_PER_YEAR
    herculean_equity = [*curves["decision_equity"], curves["wealth"][-1]]
    return {
        "standard": standard_metrics(curves["wealth"], curves["positions"], periods=periods, risk_free=risk_free),
        "herculean": herculean_metrics(herculean_equity, periods=periods),
        "sharpe_conventions": dict(SHARPE_CONVENTIONS),
        "dates": list(curves["dates"]),
        "wealth": list(curves["wealth"]),
        "herculean_equity": herculean_equity,
        "positions": list(curves["positions"]),
    }


def market_episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """A market episode's metrics: both presets, final equity, fees, look-ahead attempts and curves."""
    final = infos[-1] if infos else reset_info
    metrics = curve_metrics(market_curves(reset_info, infos))
    label = reset_info.get("symbol") or final.get("pair") or ""
    return {
        "label": str(label),
        "window": f"{reset_info.get('window_start', reset_info.get('date', ''))}..{final.get('date', '')}",
        "final_equity": float(final["equity"]),
        "fees": float(final.get("fees", 0.0)),
        "look_ahead_attempts": int(final.get("look_ahead_attempts", 0)),
        **metrics,
    }


def mean(values: Sequence[Any]) -> float:
    """Mean of the finite numbers in ``values`` (NaN when there is none)."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def market_run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over episodes of CR/SR/MDD (standard, and HERCULEAN's as ``h_*``)."""
    out: dict[str, Any] = {"episodes": len(episodes)}
    for key in METRIC_KEYS:
        out[key] = mean([(e.get("standard") or {}).get(key) for e in episodes])
        out[f"h_{key}"] = mean([(e.get("herculean") or {}).get(key) for e in episodes])
    return out


def indexed_plan(env_id: str, split_sizes: dict[str, int], what: str,
                 recorded: Mapping[str, Any] | None = None, option: Mapping[str, str | None] | None = None) -> Any:
    """A plan of every item of a split by index (``options={"index": i}``); ``live`` asks the eval items again.

    Args:
        env_id: The family's env id.
        split_sizes: Items per split.
        what: What an item is, for errors (``"instances"``, ``"questions"``).
        recorded: Env arguments whose default decides how an episode is scored (FinQA-v0's ``analysis_score``):
            every episode carries them explicitly (the run's arguments win), so a run folder records the grading
            it was scored under and ``finenvs score`` replays it so even if a later release changes the default.
        option: The reset option that names an item, per split (default ``"index"``): a split whose items are
            generated on demand names them by generation seed (FinAudit-v0's train split: ``{"train": "seed"}``);
            None: item ``i`` is the env's own draw at reset seed ``seed + i``, without options (FinQA-v0's train
            split, whose draw also picks the section and topic).
    """

    def plan(selection: Selection) -> list[EpisodeSpec]:
        if selection.symbols:
            raise ValueError(f"{env_id} episodes are chosen by --instances, not --symbols")
        split = "eval" if selection.split == "live" else selection.split
        if split not in split_sizes:
            raise ValueError(f"--split {selection.split!r}: {env_id} runs the {', '.join(split_sizes)} {what}")
        kwargs = {**(recorded or {}), **selection.env_kwargs, "split": split}
        seed = one_seed(env_id, selection)
        key = (option or {}).get(split, "index")
        items = [(env_id, kwargs, seed, {key: i}) if key is not None else (env_id, kwargs, seed + i, None)
                 for i in range(split_sizes[split])]
        return finish_plan(items, selection)

    return plan


def symbol_plan(env_id: str, default_symbols: Sequence[str]) -> Any:
    """A plan of one episode per symbol and seed (``selection.symbols`` or ``default_symbols``)."""

    def plan(selection: Selection) -> list[EpisodeSpec]:
        if selection.instances is not None:
            raise ValueError(f"{env_id} episodes are chosen by --symbols, not --instances")
        episodes = []
        for symbol in selection.symbols or default_symbols:
            for seed in selection.seeds:
                kwargs = {**selection.env_kwargs, "split": selection.split, "symbol": symbol}
                episodes.append((env_id, kwargs, int(seed), None))
        return finish_plan(episodes, selection)

    return plan


__all__ = ["HERCULEAN_MARKET_COLUMNS", "MARKET_COLUMNS", "METRIC_KEYS", "REQUIRED_INFO", "curve_metrics", "market_curves",
           "indexed_plan", "market_episode_metrics", "market_run_metrics", "market_run_output", "mean", "position_stats",
           "symbol_plan"]


def position_stats(positions: Sequence[float]) -> tuple[float, int]:
    """``(time in market, positions opened)`` of a per-day held-position list."""
    if not positions:
        return 0.0, 0
    opened = sum(1 for k, p in enumerate(positions) if p != 0 and p != (positions[k - 1] if k else 0.0))
    return sum(1 for p in positions if p != 0) / len(positions), opened


def market_run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """What ``finenvs run`` prints for a market episode (both presets, costs, exposure) and its ``--json`` row."""
    m = result["metrics"]
    s, h = m["standard"], m["herculean"]
    in_market, opened = position_stats(m["positions"])
    start, end = m["window"].split("..")
    row: dict[str, Any] = {
        "env": result["env"], "policy": result["policy"], "symbol": str(result["info"].get("symbol", m["label"])),
        "window": m["window"], "steps": result["steps"], "final_equity": m["final_equity"], "fees": m["fees"],
        "look_ahead_attempts": m["look_ahead_attempts"], "standard": s, "herculean": h,
        "time_in_market": in_market, "round_trips": opened,
    }
    if m.get("pair"):
        row["pair"] = m["pair"]
    if result.get("oracle"):
        row["oracle"] = True

    def pct(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{100 * x:+.2f}%"

    def mag(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{100 * x:.2f}%"

    def num(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{x:.2f}"

    pair = m.get("pair")
    lines = [
        f"{result['env']} {row['symbol']} {start}..{end} policy={result['policy']} steps={result['steps']}",
        f"  standard : CR {pct(s['cumulative_return'])}  {SHARPE_LABELS['standard']} {num(s['sharpe'])}  MDD {mag(s['max_drawdown'])}  "
        f"Sortino {num(s['sortino'])}  Calmar {num(s['calmar'])}  turnover {num(s['turnover'])}",
        f"  herculean: CR {pct(h['cumulative_return'])}  {SHARPE_LABELS['herculean']} {num(h['sharpe'])}  MDD {mag(h['max_drawdown'])}",
        f"  final equity {m['final_equity']:.4f}, fees {m['fees']:.4f}, look-ahead attempts {m['look_ahead_attempts']}",
        f"  time in market {100 * in_market:.1f}%, positions opened {opened}"
        + (f", pair {pair} (long {pair.split('/')[0]} on LONG_SHORT)" if pair else "")
        + ("  [ORACLE: read the future; an upper bound, not a baseline]" if result.get("oracle") else ""),
    ]
    return lines, row
