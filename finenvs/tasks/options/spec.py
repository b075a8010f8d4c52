"""The task spec of FinOptions-v0 (its text variant answers in JSON: ``action_mode="text"``)."""

from __future__ import annotations

from typing import Any

from finenvs.tasks.common import mean
from finenvs.tasks.options.baselines import (
    OPTIONS_POLICIES,
    ScriptedOptionsAgent,
    options_markdown,
    run_options_bench,
    run_output,
)
from finenvs.tasks.options.bench import options_plot
from finenvs.tasks.options.debate import debate_round
from finenvs.tasks.options.env import FinOptionsEnv
from finenvs.tasks.section import RecordSection
from finenvs.tasks.spec import BenchSection, Column, EpisodeSpec, Selection, TaskSpec, finish_plan, one_seed
from finenvs.tools.options import OPTIONS_TOOLS
from finenvs.tools.risk import RISK_TOOLS

ENV_ID = "FinOptions-v0"
#: Generated tasks of an agent run (seeds 0..N-1 of the split), then the FAB++ bank's items.
GENERATED_TASKS = 25
BANK_IDS = ("opt_pricing_001", "opt_pricing_002", "greeks_001", "greeks_002", "strategy_001", "pnl_001",
            "risk_001", "risk_002", "copy_001")
DIMENSIONS = ("pnl", "greeks", "strategy", "risk")


def plan(selection: Selection) -> list[EpisodeSpec]:
    """``GENERATED_TASKS`` generated tasks of the split (seeds ``seed, seed + 1, ...``), then the bank's items."""
    if selection.symbols:
        raise ValueError(f"{ENV_ID} episodes are chosen by --instances, not --symbols")
    seed = one_seed(ENV_ID, selection)
    generated = [(ENV_ID, {**selection.env_kwargs, "split": selection.split}, seed + i, None)
                 for i in range(GENERATED_TASKS)]
    bank = [(ENV_ID, {**selection.env_kwargs, "bank": "fabpp"}, seed, {"task_id": t}) for t in BANK_IDS]
    return finish_plan([*generated, *bank], selection)


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The task's score (0-100), its four dimensions (None where a dimension does not apply) and kind."""
    final = infos[-1]
    return {"label": reset_info["task_id"], "kind": reset_info["kind"], "section": "options",
            "score": float(final["score"]), "task_score": float(final["score"]),
            "dimensions": dict(final["dimensions"]), "parse_error": final.get("parse_error"),
            "bank": reset_info["task_id"] in BANK_IDS}


def run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean score, and per dimension the mean % of its weight earned where it applies."""
    out: dict[str, Any] = {"episodes": len(episodes), "score": mean([e["score"] for e in episodes])}
    for dim in DIMENSIONS:
        values = []
        for e in episodes:
            applicable = [v for v in e["dimensions"].values() if v is not None]
            if e["dimensions"].get(dim) is not None:
                values.append(100.0 * e["dimensions"][dim] / (100.0 / len(applicable)))
        out[dim] = mean(values)
    out["generated"] = mean([e["score"] for e in episodes if not e["bank"]])
    out["bank"] = mean([e["score"] for e in episodes if e["bank"]])
    return out


SPEC = TaskSpec(
    family="options",
    env_id=ENV_ID,
    text_env_id="FinOptions-text-v0",
    description="One options task per episode (pricing, Greeks, strategy, P&L attribution, sizing) scored 0-100 "
    "by the engine.",
    env=FinOptionsEnv,
    kwargs={"kinds": None, "source": "real", "chain": "generated", "split": "train", "bank": None,
            "hold_to_expiry": False},
    text_kwargs={"action_mode": "text"},
    plan=plan,
    episode_metrics=episode_metrics,
    run_metrics=run_metrics,
    columns=(Column("score", "Score"), Column("pnl", "P&L %", digits=1), Column("greeks", "Greeks %", digits=1),
             Column("strategy", "Strategy %", digits=1), Column("risk", "Risk %", digits=1)),
    scripted_agent=ScriptedOptionsAgent,
    baselines=OPTIONS_POLICIES,
    tools=(*OPTIONS_TOOLS, *RISK_TOOLS),
    run_options=("instance",),
    run_printer=run_output,
    debate=debate_round,
    bench=BenchSection(title="Options", suites=("fabpp",), fabpp_sections=("options",),
                       profiles={"reference": "engine_reference", "naive": "keyword_stuffer", "random": "random"},
                       closed_book=True,
                       section=RecordSection(baselines=run_options_bench, tables=options_markdown, draw=options_plot)),
)
