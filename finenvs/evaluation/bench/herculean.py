"""HERCULEAN in ``finenvs bench``: its Table 2 (backtest) and Table 3 (live) layout and the reproduction of its
published Buy&Hold rows."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from finenvs.baselines.registry import make_policy
from finenvs.evaluation.agent_runs import PUBLISHED_SPLITS, herculean_tables
from finenvs.evaluation.bench.agents import agent_selection
from finenvs.evaluation.bench.config import BenchConfig, herculean_splits
from finenvs.evaluation.episodes import play_episode
from finenvs.tasks import TaskSpec, tasks
from finenvs.tasks.market_section import SR_H, EpisodeResult
from finenvs.text.markdown import fmt_number, md_table, md_text
from finenvs.text.plural import counted


def herculean_baselines(specs: list[TaskSpec], agent_runs: list[dict[str, Any]], splits: tuple[str, ...],
                        config: BenchConfig, catalog: Any) -> dict[str, Any]:
    """HERCULEAN's "BL" rows: each workflow's ``herculean_baseline`` over the episodes the agents played."""
    out: dict[str, Any] = {}
    for task in specs:
        name = task.bench.herculean_baseline
        if name is None:
            continue
        for split in splits:
            runs = [r for r in agent_runs if r["family"] == task.family and r["split"] == split]
            if not runs:
                continue
            selection = agent_selection(task, split, config, model=False, catalog=catalog)
            if selection is None:
                continue
            labels = {e["index"]: e["label"] for e in runs[0]["episodes"]}
            cells = {}
            for ep in task.plan(selection):
                env = gym.make(task.env_id, **ep.env_kwargs)
                result = play_episode(env, make_policy(name, task.env_id, env, seed=config.seed), seed=ep.seed,
                                      options=ep.options)
                env.close()
                cells[labels.get(ep.index, result["metrics"]["label"])] = task.metrics_of_run([result["metrics"]])
            out.setdefault(task.family, {})[split] = {f"{name} (BL)": cells}
    return out


def herculean_record(specs: list[TaskSpec], agent_runs: list[dict[str, Any]], config: BenchConfig,
                     catalog: Any) -> dict[str, Any] | None:
    """The HERCULEAN tables of the workflows in the run (None without a workflow or an agent run)."""
    workflows = [t for t in specs if t.bench.herculean]
    if not workflows or not agent_runs:
        return None
    splits = herculean_splits(config)
    baselines = herculean_baselines(workflows, agent_runs, splits, config, catalog)
    return herculean_tables(workflows, agent_runs, baselines, splits, config.published)


def reproduction_check(results: list[EpisodeResult], split: str) -> list[dict[str, Any]]:
    """Compare finenvs' herculean baseline rows with the figures HERCULEAN publishes for them: Table 2 on the eval
    split, Table 3 on the live split (its Market Insights rows give CR and MDD only: those are compared)."""
    out = []
    for task in tasks():
        baseline = task.bench.herculean_baseline
        for published in task.bench.published_for(split).values():
            for r in results:
                pub = published.get(r.symbol)
                if r.env_id != task.env_id or r.policy != baseline or pub is None:
                    continue
                theirs = {m: round(scale * pub[key], 2) for m, (key, scale) in REPRODUCED.items() if key in pub}
                ours = {"CR": round(100.0 * r.herculean["cumulative_return"], 2), "SR": round(r.herculean["sharpe"], 2),
                        "MDD": round(100.0 * r.herculean["max_drawdown"], 2)}
                out.append({"env": r.env_id, "symbol": r.symbol, "published": theirs, "finenvs": ours,
                            "match": all(ours[m] == v for m, v in theirs.items())})
    return out


#: The figures the reproduction check compares: name -> (published row key, scale to the paper's unit).
REPRODUCED = {"CR": ("h_cumulative_return", 100.0), "SR": ("h_sharpe", 1.0), "MDD": ("h_max_drawdown", 100.0)}


def _table_of(split: str) -> str:
    return "Table 3" if split == PUBLISHED_SPLITS["live"] else "Table 2"


def reproduction_markdown(checks: list[dict[str, Any]], split: str = "eval") -> list[str]:
    """The reproduction check's table (none without checks)."""
    if not checks:
        return []
    return [
        f"## Reproduction check: HERCULEAN {_table_of(split)} buy-and-hold baseline",
        "",
        "finenvs' `herculean` preset on the shipped data beside the figures the paper publishes for its "
        "Trading and Market Insights workflows (CR %, SR, MDD %; rounded to 2 decimals as published). "
        + ("The live window (Table 3) is checked by the tests." if _table_of(split) == "Table 2" else
           "n/a: not published (Table 3 gives no SR for Market Insights). The eval window (Table 2) is checked "
           "by the tests."),
        "",
        md_table(
            ["env", "symbol", "CR pub", "CR finenvs", f"{SR_H} pub", f"{SR_H} finenvs", "MDD pub", "MDD finenvs",
             "match"],
            [
                [c["env"], md_text(c["symbol"]), *(cell for m in REPRODUCED for cell in (
                    fmt_number(c["published"].get(m)), fmt_number(c["finenvs"][m]))),
                 "yes" if c["match"] else "NO"]
                for c in checks
            ],
        ),
        "",
    ]


def reproduction_terminal(checks: list[dict[str, Any]], split: str = "eval") -> list[str]:
    """The reproduction check in one line (none without checks)."""
    if not checks:
        return []
    ok = sum(c["match"] for c in checks)
    return ["", f"HERCULEAN {_table_of(split)} buy-and-hold reproduced on {ok}/{counted(len(checks), 'row')} "
                f"({', '.join(sorted({c['env'] for c in checks}))}; CR, SR, MDD to the published 2 decimals)."]


__all__ = ["herculean_baselines", "herculean_record", "reproduction_check",
           "reproduction_markdown", "reproduction_terminal"]
