"""The task spec of FinDeltaHedge-v0."""

from __future__ import annotations

import math
from typing import Any

from finenvs.tasks.common import mean
from finenvs.tasks.deltahedge.baselines import (
    DELTAHEDGE_POLICIES,
    ScriptedDeltaHedgeAgent,
    bench_markdown,
    run_bench,
    run_output,
)
from finenvs.tasks.deltahedge.env import FinDeltaHedgeEnv
from finenvs.tasks.section import RecordSection
from finenvs.tasks.spec import (
    BenchSection,
    Column,
    EpisodeSpec,
    RLSpec,
    Selection,
    TaskSpec,
    finish_plan,
    one_seed,
)
from finenvs.tools.options import DELTAHEDGE_TOOLS

ENV_ID = "FinDeltaHedge-v0"
#: GBM paths of an agent run (30 daily decisions each); the bench's baselines hedge 200.
PATHS = 20


def plan(selection: Selection) -> list[EpisodeSpec]:
    """``PATHS`` synthetic paths seeded ``seed, seed + 1, ...`` (GBM unless ``env_kwargs`` name another model);
    with ``symbols``, one real path per symbol and seed in the split (the option written on the symbol's closes)."""
    if selection.symbols:
        episodes = [(ENV_ID, {**selection.env_kwargs, "source": "real", "symbol": sym, "split": selection.split},
                     int(s), None) for sym in selection.symbols for s in selection.seeds]
    else:
        seed = one_seed(ENV_ID, selection)
        episodes = [(ENV_ID, dict(selection.env_kwargs), seed + i, None) for i in range(PATHS)]
    return finish_plan(episodes, selection)


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The final hedging error (currency units and % of the initial spot), costs and payoff."""
    final = infos[-1]
    return {"label": f"path {env.np_random_seed}" if getattr(env, "np_random_seed", None) is not None else "path",
            "hedging_error": float(final["hedging_error"]), "hedging_error_pct": float(final["hedging_error_pct"]),
            "costs": float(final.get("costs", 0.0)), "payoff": float(final["payoff"]), "steps": len(infos)}


def run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean squared and mean hedging error over the paths (the classical delta hedge's is near its cost)."""
    errors = [e["hedging_error"] for e in episodes]
    mse = mean([x * x for x in errors])
    return {"episodes": len(episodes), "mse": mse, "rmse": math.sqrt(mse) if math.isfinite(mse) else math.nan,
            "mean_error": mean(errors), "mean_error_pct": mean([e["hedging_error_pct"] for e in episodes])}


def rl_synthetic(market: dict[str, Any] | None) -> dict[str, Any]:
    """A synthetic market ``{"model", "params"}`` as env arguments: ``model`` is the ``source``, ``params``
    give ``mu`` and ``sigma`` and the rest ``model_params`` (None: GBM with the env's sigma)."""
    market = dict(market or {})
    model = market.pop("model", "gbm")
    params = dict(market.pop("params", None) or {})
    if market:
        raise ValueError(f"unknown synthetic key(s) {sorted(market)} for {ENV_ID}; valid keys: model, params")
    out: dict[str, Any] = {"source": model}
    for key in ("mu", "sigma"):
        if key in params:
            out[key] = params.pop(key)
    if params:
        out["model_params"] = params
    return out


def rl_wealth(reset_info: dict[str, Any], info: dict[str, Any]) -> float:
    """The hedging book on a notional of one initial spot: ``1 + pnl / S_0``."""
    return 1.0 + float(info["pnl"]) / float(reset_info["spot"])


def rl_episode_scores(reset_info: dict[str, Any], last_info: dict[str, Any]) -> dict[str, Any]:
    """The final hedging error in % of the initial spot."""
    return {"hedging_error_pct": float(last_info["hedging_error_pct"])}


def rl_run_scores(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean, std (``ddof=1``; None for one episode) and RMSE of the episodes' hedging errors in %."""
    import numpy as np

    errors = np.array([e["hedging_error_pct"] for e in episodes])
    return {"hedging_error_pct_mean": float(errors.mean()),
            "hedging_error_pct_std": float(errors.std(ddof=1)) if errors.size > 1 else None,
            "hedging_error_pct_rmse": float(np.sqrt(np.mean(errors**2)))}


SPEC = TaskSpec(
    family="deltahedge",
    env_id=ENV_ID,
    text_env_id="FinDeltaHedge-text-v0",
    description="Short one option, choose the hedge ratio each step until expiry; reward -(hedging P&L error)^2; "
    "costs.",
    env=FinDeltaHedgeEnv,
    kwargs={"option": "call", "moneyness": 1.0, "maturity_days": 30, "steps_per_day": 1, "source": "gbm",
            "sigma": 0.2, "cost_bps": 0.0, "action_type": "box"},
    plan=plan,
    episode_metrics=episode_metrics,
    run_metrics=run_metrics,
    columns=(Column("mse", "MSE", digits=4), Column("rmse", "RMSE", digits=4), Column("mean_error", "Mean error",
                                                                                       digits=4)),
    scripted_agent=ScriptedDeltaHedgeAgent,
    baselines=DELTAHEDGE_POLICIES,
    tools=DELTAHEDGE_TOOLS,
    run_options=("symbol",),
    run_printer=run_output,
    bench=BenchSection(title="Delta hedging", suites=("fabpp",), closed_book=True,
                       section=RecordSection(baselines=run_bench, tables=bench_markdown)),
    rl=RLSpec(synthetic=rl_synthetic, wealth=rl_wealth, episode_scores=rl_episode_scores, run_scores=rl_run_scores,
              columns=(Column("hedging_error_pct_rmse", "hedge err RMSE %"),),
              build_hints={"maturity_days": 'maturity_days <= 20 fits every split: env_kwargs={"maturity_days": 20}'}),
)
