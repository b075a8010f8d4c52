"""Baselines for FinOptions-v0 and FinDeltaHedge-v0, and the bench's Options section.

FinOptions-v0 policies (``policy(obs, info) -> action``; text answers are dicts or strings):

| name | answer |
|---|---|
| ``engine_reference`` | the engine's exact answer (:func:`~finenvs.envs.options_core.reference_answer`): the ceiling, 100 by construction; it reads the task, never the future |
| ``template_rule`` | RL action: the requested template at the money, one-strike wings, first expiry, full budget |
| ``random`` | a uniform RL action from its own seeded generator |
| ``keyword_stuffer`` | the answer that fooled FAB++'s keyword scorer: every expected word, wrong numbers |

FinDeltaHedge-v0 uses :mod:`finenvs.baselines.deltahedge` (``bs_delta``, ``no_hedge``, ``random``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.envs.options_core import TEMPLATE_NAMES, reference_answer

KEYWORD_STUFFED = (
    "Using the Black-Scholes model with the annualized volatility and time to expiration, the fair value of the "
    "option is computed from d1 and d2. Delta 0.5, Gamma 0.05, Theta -0.10, Vega 0.20: delta measures direction, "
    "gamma convexity, theta time decay, vega volatility exposure. The iron condor / bull call spread / straddle "
    "has max profit 1, max loss 1 and breakeven points at the strikes; probability of profit 50%. Position size "
    "follows the 2% account risk rule; hedge delta with shares of the underlying; exit at 50% of max profit or "
    "a stop loss at 2x credit. Risk management, Kelly criterion, implied volatility, put-call parity."
)


class EngineReference:
    """The engine's own answer to every task (it reads the env's full task: a bank item's published position)."""

    name = "engine_reference"

    def __init__(self, env: Any = None) -> None:
        self.env = getattr(env, "unwrapped", env)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> EngineReference:
        return cls(env)

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
        task = self.env.task if self.env is not None and self.env.task is not None else info["task"]
        return reference_answer(task)


@dataclass
class TemplateRule:
    """RL action: the requested template (bull call spread when none is asked), centred, full budget."""

    name: str = "template_rule"

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> TemplateRule:
        return cls()

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        template = info["task"].get("template") or "bull_call_spread"
        return np.array([TEMPLATE_NAMES.index(template), 3, 0, 0, 3], dtype=np.int64)


class RandomOptions:
    """A uniform MultiDiscrete action from its own generator."""

    name = "random"

    def __init__(self, nvec: Any, seed: int | None = 0) -> None:
        self.nvec = np.asarray(nvec)
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomOptions:
        return cls(getattr(env, "unwrapped", env).action_space.nvec, seed)

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.array([self.rng.integers(0, n) for n in self.nvec], dtype=np.int64)


@dataclass
class KeywordStuffer:
    """Prose with every keyword a keyword scorer looks for and wrong numbers."""

    name: str = "keyword_stuffer"

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> KeywordStuffer:
        return cls()

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> str:
        return KEYWORD_STUFFED


OPTIONS_POLICIES: dict[str, tuple[type, str]] = {
    "engine_reference": (EngineReference, "the engine's exact answer (ceiling, 100 by construction)"),
    "template_rule": (TemplateRule, "RL action: requested template at the money, full budget"),
    "random": (RandomOptions, "uniform RL action"),
    "keyword_stuffer": (KeywordStuffer, "every expected keyword, wrong numbers (the FAB++ scorer's blind spot)"),
}


# ----------------------------------------------------------------------------- the bench section
def run_options_tasks(env: Any, policy: Any, seeds: list[int], options: list[dict[str, Any]] | None = None
                      ) -> list[dict[str, Any]]:
    """One FinOptions-v0 episode per seed (or per reset-options dict); the score breakdown of each."""
    out = []
    runs = options if options is not None else [None] * len(seeds)
    for seed, opts in zip(seeds, runs, strict=True):
        began = time.perf_counter()
        obs, info = env.reset(seed=seed, options=opts)
        _, reward, _, _, step_info = env.step(policy(obs, info))
        out.append({"task_id": info["task_id"], "kind": info["kind"], "score": float(reward),
                    "dimensions": step_info["dimensions"], "invalid": bool(step_info["invalid_action"]),
                    "realised_pnl": step_info.get("realised_pnl"), "seconds": time.perf_counter() - began})
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean score, and per dimension the mean % of its weight earned (over the tasks where it applies)."""
    dims = {}
    for dim in ("pnl", "greeks", "strategy", "risk"):
        values = []
        for r in rows:
            applicable = [v for v in r["dimensions"].values() if v is not None]
            if r["dimensions"].get(dim) is not None:
                values.append(100.0 * r["dimensions"][dim] / (100.0 / len(applicable)))
        dims[dim] = float(np.mean(values)) if values else math.nan
    return {"n": len(rows), "score": float(np.mean([r["score"] for r in rows])) if rows else math.nan,
            "scores": [r["score"] for r in rows],
            "dimensions": dims, "by_kind": {k: float(np.mean([r["score"] for r in rows if r["kind"] == k]))
                                            for k in sorted({r["kind"] for r in rows})}}


def run_options_section(split: str, seed: int, n_generated: int = 25, n_hedge: int = 200,
                        hedge_steps: tuple[int, ...] = (1, 4)) -> dict[str, Any]:
    """FinOptions-v0 (generated tasks and the FAB++ bank) and FinDeltaHedge-v0 for the scorecard."""
    import gymnasium as gym

    from finenvs.baselines.deltahedge import DELTAHEDGE_POLICIES, run_hedge_episodes
    from finenvs.envs.options_bank import load_bank

    section: dict[str, Any] = {"options": {}, "bank": {}, "deltahedge": [], "n_generated": n_generated}
    generated = gym.make("FinOptions-v0", split=split)
    bank_env = gym.make("FinOptions-v0", bank="fabpp")
    bank_ids = [{"task_id": t["id"]} for t in load_bank()]
    seeds = [seed + i for i in range(n_generated)]
    for name, (cls, _) in OPTIONS_POLICIES.items():
        policy = cls.from_env(generated, seed)
        section["options"][name] = summarise(run_options_tasks(generated, policy, seeds))
        policy = cls.from_env(bank_env, seed)
        rows = run_options_tasks(bank_env, policy, [seed] * len(bank_ids), bank_ids)
        section["bank"][name] = {**summarise(rows), "items": {r["task_id"]: r["score"] for r in rows}}
    for steps in hedge_steps:
        env = gym.make("FinDeltaHedge-v0", steps_per_day=steps)
        for name, (cls, _) in DELTAHEDGE_POLICIES.items():
            errors = run_hedge_episodes(env, cls.from_env(env, seed), n_hedge, seed)
            section["deltahedge"].append({"policy": name, "steps_per_day": steps, "n": n_hedge,
                                          "mean_error": float(np.mean(errors)), "sd_error": float(np.std(errors, ddof=1)),
                                          "mse": float(np.mean(errors ** 2))})
    return section


def options_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's Options section."""
    def cell(x: float) -> str:
        return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"

    lines = ["## Options", "",
             "### FinOptions-v0", "",
             f"{section['n_generated']} generated tasks (seeded, all five kinds) and the {len(next(iter(section['bank'].values()))['items'])}-item "
             "FAB++ bank. Score 0-100 = P&L, Greeks, Strategy, Risk at 25 each, every number checked against the "
             "pricing engine; a bank item leaves out a dimension its question does not ask (—). `engine_reference` is "
             "the engine's own answer (the ceiling); RL policies state no numbers (the env states the engine's), so "
             "their signal is Strategy and Risk; `keyword_stuffer` is the answer a keyword scorer rewards. Dimension "
             "columns: the mean % of the dimension's weight earned.", ""]
    header = ["policy", "tasks", "score", "P&L %", "Greeks %", "Strategy %", "Risk %"]
    for title, table in (("Generated tasks", section["options"]), ("FAB++ bank", section["bank"])):
        lines += [f"#### {title}", "", _md_table(header, [
            [name, str(s["n"]), cell(s["score"]), *(cell(s["dimensions"][d]) for d in ("pnl", "greeks", "strategy", "risk"))]
            for name, s in table.items()]), ""]
    kinds = sorted({k for s in section["options"].values() for k in s["by_kind"]})
    lines += ["#### Score by task kind (generated)", "", _md_table(["policy", *kinds], [
        [name, *(cell(s["by_kind"].get(k, math.nan)) for k in kinds)] for name, s in section["options"].items()]), ""]
    lines += ["### FinDeltaHedge-v0", "",
              "Short one ATM call (GBM, sigma 20%, 30 trading days, no costs), hedged each step; final hedging error "
              "= hedge book - payoff (0 is a perfect hedge), in currency per option on a 100 spot.", "",
              _md_table(["policy", "steps/day", "episodes", "mean error", "sd", "MSE"], [
                  [r["policy"], str(r["steps_per_day"]), str(r["n"]), f"{r['mean_error']:+.4f}", f"{r['sd_error']:.4f}",
                   f"{r['mse']:.4f}"] for r in section["deltahedge"]]), ""]
    return lines


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)
