"""The task spec of FinHedging-v0."""

from __future__ import annotations

from typing import Any

from finenvs.tasks.common import (
    HERCULEAN_MARKET_COLUMNS,
    MARKET_COLUMNS,
    market_episode_metrics,
    market_run_metrics,
    market_run_output,
)
from finenvs.tasks.hedging.agent import ScriptedPairsAgent
from finenvs.tasks.hedging.baselines import HEDGING_POLICIES
from finenvs.tasks.hedging.bench import PairEpisode, PairsSection
from finenvs.tasks.hedging.env import FinHedgingEnv
from finenvs.tasks.hedging.tools import HEDGING_TOOLS
from finenvs.tasks.spec import BenchSection, EpisodeSpec, RLSpec, Selection, TaskSpec, finish_plan

ENV_ID = "FinHedging-v0"


def plan(selection: Selection) -> list[EpisodeSpec]:
    """One episode per seed on the universe (``selection.symbols``, default the env's 8 stocks)."""
    if selection.instances is not None:
        raise ValueError(f"{ENV_ID} episodes are chosen by --seeds (and --symbols for the universe), "
                         "not --instances")
    kwargs: dict[str, Any] = {**selection.env_kwargs, "split": selection.split}
    if selection.symbols:
        kwargs["symbols"] = list(selection.symbols)
    return finish_plan([(ENV_ID, kwargs, int(seed), None) for seed in selection.seeds], selection)


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """Market metrics of the book, labelled with the selected pair, and the pair's log price ratio."""
    metrics = market_episode_metrics(env, reset_info, infos)
    pair = (infos[-1] if infos else reset_info).get("pair")
    metrics["label"] = metrics["pair"] = pair
    spread = env.spread_path() if pair else None
    metrics["spread"] = None if spread is None else [float(x) for x in spread]
    return metrics


def rl_episode_scores(reset_info: dict[str, Any], last_info: dict[str, Any]) -> dict[str, Any]:
    """The pair the episode traded."""
    return {"pair": last_info.get("pair")}


SPEC = TaskSpec(
    family="hedging",
    env_id=ENV_ID,
    text_env_id="FinHedging-text-v0",
    description="Choose an ordered pair of 8 stocks on day 1, then trade it dollar-neutral daily; 5 bp per leg; "
    "CR/SR/MDD.",
    env=FinHedgingEnv,
    kwargs={"symbols": None, "split": "default", "fee_bps": 5.0, "invalid_action": "hold", "source": "real",
            "dataset": "core"},
    plan=plan,
    episode_metrics=episode_metrics,
    run_metrics=market_run_metrics,
    columns=MARKET_COLUMNS,
    scripted_agent=ScriptedPairsAgent,
    baselines=HEDGING_POLICIES,
    tools=HEDGING_TOOLS,
    run_printer=market_run_output,
    run_options=("symbols", "start", "end", "fee_bps", "chart"),
    bench=BenchSection(title="Hedging", suites=("herculean",), section=PairsSection(), market=True, universe=True,
                       episode_part=PairEpisode, herculean="Hedging", herculean_per_label=False,
                       published_block="hedging",
                       herculean_columns=HERCULEAN_MARKET_COLUMNS),
    rl=RLSpec(train_kwargs={"episode_length": 63}, eval_episodes="fixed", episode_scores=rl_episode_scores),
)
