"""Baselines for FinDeltaHedge-v0 (hedging a short European option).

| name | hedge ratio each step |
|---|---|
| ``bs_delta`` | the option's Black-Scholes delta at the pricing vol (observation index 5); discrete: the nearest bin |
| ``no_hedge`` | 0: the premium alone against the payoff; discrete: the bin nearest 0 (0 when ``n_bins`` is odd) |
| ``random`` | uniform over the action space, from the policy's own seeded generator |

A policy is a callable ``policy(obs, info) -> action``; ``from_env(env, seed)``
builds it for an env's action space (box or discrete). Each reads only the
current observation, so none can see the future.

:func:`run_hedge_episodes` plays ``n`` seeded episodes and returns the final
hedging errors (``info["hedging_error"]``, currency units); :func:`run_bench`
is the bench's FinDeltaHedge-v0 table and :class:`ScriptedDeltaHedgeAgent` the
offline chat agent of ``FinDeltaHedge-text-v0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.tasks.deltahedge.core import DELTA, MAX_HEDGE, hedge_action
from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent
from finenvs.text.markdown import fmt_number, md_table


def _deltahedge_env(env: Any) -> Any:
    base = getattr(env, "unwrapped", env)
    if base is None or getattr(base, "task_family", None) != "deltahedge":
        raise ValueError("delta-hedging baselines need the FinDeltaHedge-v0 env they act in (pass env=)")
    return base


@dataclass
class HedgePolicy:
    """Base class of FinDeltaHedge-v0 baselines: ``policy(obs, info) -> action``.

    Args:
        bins: The env's ``hedge_bins`` when its action space is discrete; None for the box space.
    """

    bins: np.ndarray | None = None
    name: str = "hedge"
    #: True for policies that read the future (none here).
    oracle: bool = False

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> HedgePolicy:
        base = _deltahedge_env(env)
        return cls(bins=base.hedge_bins if base.action_type == "discrete" else None)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode."""

    def action_for(self, hedge: float) -> Any:
        """The action for ``hedge`` clipped to +-1.5: the normalised box action ``[hedge / 1.5]`` (float32), or
        the nearest bin."""
        if self.bins is None:
            return hedge_action(min(max(hedge, -MAX_HEDGE), MAX_HEDGE))
        return int(np.argmin(np.abs(self.bins - hedge)))

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> Any:  # pragma: no cover
        raise NotImplementedError


@dataclass
class BSDeltaHedge(HedgePolicy):
    """``bs_delta``: hold the option's Black-Scholes delta (observation index 5) in shares."""

    name: str = "bs_delta"

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> Any:
        return self.action_for(float(obs[DELTA]))


@dataclass
class NoHedge(HedgePolicy):
    """``no_hedge``: hold no shares."""

    name: str = "no_hedge"

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> Any:
        return self.action_for(0.0)


@dataclass
class RandomHedge(HedgePolicy):
    """``random``: a uniform hedge ratio in [-1.5, 1.5], or a uniform bin, from its own generator."""

    seed: int | None = 0
    name: str = "random"
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomHedge:
        base = _deltahedge_env(env)
        return cls(bins=base.hedge_bins if base.action_type == "discrete" else None, seed=seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> Any:
        if self.bins is None:
            return hedge_action(self._rng.uniform(-MAX_HEDGE, MAX_HEDGE))
        return int(self._rng.integers(len(self.bins)))


def run_hedge_episodes(env: gym.Env, policy: Any, n: int, seed: int = 0) -> np.ndarray:
    """Final hedging errors (currency units) of ``n`` episodes seeded ``seed, seed + 1, ..``.

    The policy's ``reset(seed + i)`` (if it has one) runs before episode ``i``,
    so a stochastic policy replays identically.

    Raises:
        ValueError: ``n`` is not a positive integer.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} must be an integer >= 1")
    errors = np.empty(int(n))
    for i in range(int(n)):
        if hasattr(policy, "reset"):
            policy.reset(seed + i)
        obs, info = env.reset(seed=seed + i)
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs, info))
            if terminated or truncated:
                break
        errors[i] = info["hedging_error"]
    return errors


#: name -> (class, one-line description)
DELTAHEDGE_POLICIES: dict[str, tuple[type[HedgePolicy], str]] = {
    "bs_delta": (BSDeltaHedge, "Black-Scholes delta at the pricing vol, from the observation (nearest bin)"),
    "no_hedge": (NoHedge, "no shares: the premium alone against the payoff"),
    "random": (RandomHedge, "uniform random hedge ratio in [-1.5, 1.5] (or bin), seeded"),
}



# ---------------------------------------------------------------------------- the bench and `finenvs run`
def run_bench(config: Any, n: int = 200, steps: tuple[int, ...] = (1, 4)) -> dict[str, Any]:
    """Every baseline on ``n`` GBM paths (seeds ``config.seed, config.seed + 1, ...``) at each rebalancing
    frequency in ``steps``: ``{"deltahedge": [row, ...]}`` with the mean, sd and mean square of the errors."""
    rows = []
    for steps_per_day in steps:
        env = gym.make("FinDeltaHedge-v0", steps_per_day=steps_per_day)
        for name, (cls, _) in DELTAHEDGE_POLICIES.items():
            errors = run_hedge_episodes(env, cls.from_env(env, config.seed), n, config.seed)
            rows.append({"policy": name, "steps_per_day": steps_per_day, "n": n, "mean_error": float(np.mean(errors)),
                         "sd_error": float(np.std(errors, ddof=1)), "mse": float(np.mean(errors ** 2))})
        env.close()
    return {"deltahedge": rows}


def bench_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's FinDeltaHedge-v0 table (``section["deltahedge"]`` rows of :func:`run_bench`)."""
    header = ["policy", "steps/day", "episodes", "mean error", "sd", "MSE"]
    rows = [[r["policy"], str(r["steps_per_day"]), str(r["n"]), fmt_number(r["mean_error"], digits=4, sign=True),
             fmt_number(r["sd_error"], digits=4), fmt_number(r["mse"], digits=4)] for r in section["deltahedge"]]
    return ["### FinDeltaHedge-v0", "",
            "Short one ATM call (GBM, sigma 20%, 30 trading days, no costs), hedged each step; final hedging error "
            "= hedge book - payoff (0 is a perfect hedge), in currency per option on a 100 spot.", "",
            md_table(header, rows), ""]


def print_episode(env: Any, result: dict[str, Any]) -> list[str]:
    """The line ``finenvs run`` prints for one hedged path.

    Args:
        env: The episode's env (its ``spec.id`` names it when ``result`` has no ``"env"``).
        result: The episode as :func:`finenvs.evaluation.episodes.play_episode` returns it: ``final`` (the last
            step's info), ``reward`` (total), ``steps``, ``policy``.
    """
    final = result["final"]
    return [f"{result.get('env') or env.spec.id} policy={result['policy']} steps={result['steps']}: hedging error "
            f"{final['hedging_error']:+.4f} ({final['hedging_error_pct']:+.3f}% of spot), payoff "
            f"{final['payoff']:.4f}, total reward {result['reward']:.4f}"]


def run_output(env: Any, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """``finenvs run``'s printer form ``(env, result, flags) -> (lines, --json record)``: :func:`print_episode` and
    the path's record (steps, total reward, hedging error, payoff)."""
    final = result["final"]
    record = {"env": result.get("env") or env.spec.id, "policy": result["policy"], "steps": result["steps"],
              "reward": result["reward"], "hedging_error": final["hedging_error"],
              "hedging_error_pct": final["hedging_error_pct"], "payoff": final["payoff"]}
    return print_episode(env, result), record


# ---------------------------------------------------------------------------- the offline chat agent
@dataclass
class ScriptedDeltaHedgeAgent(ScriptedChatAgent):
    """Offline FinDeltaHedge-v0 agent that speaks the chat protocol: ``get_hedge_state``, then commit
    ``{"hedge": bs_delta}`` (the ``bs_delta`` baseline, through the text interface).

    Stateless (the reply is a function of the messages). If the tool fails or gives no
    Black-Scholes delta it commits ``{"hedge": 0.0}`` (flat, the ``no_hedge`` choice)
    with the reason as the reasoning. Without the tools it replies in prose with no
    hedge ratio, so the env keeps the hedge held (a format error).
    """

    name: str = "scripted-delta"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """The next assistant turn for this conversation (pure function of its inputs)."""
        names, results, round_no = self._turn(messages, tools)
        if not {"get_hedge_state", "commit_action"} <= names:
            return ChatReply("I cannot read the book without the hedging tools, so I give no hedge ratio.",
                             usage=NO_USAGE)
        if "get_hedge_state" not in results:
            return self._calls(round_no, ("get_hedge_state", {}))
        state = results["get_hedge_state"]
        delta = state.get("bs_delta") if isinstance(state, dict) else None
        if isinstance(delta, bool) or not isinstance(delta, (int, float)):
            error = state.get("error", "no bs_delta in the result") if isinstance(state, dict) else "no result"
            return self._calls(round_no, ("commit_action", {"hedge": 0.0, "reasoning": f"get_hedge_state gave no "
                                                            f"Black-Scholes delta ({str(error)[:200]}); flat"}))
        return self._calls(round_no, ("commit_action", {"hedge": delta, "reasoning": "hold the Black-Scholes delta"}))


__all__ = [
    "DELTAHEDGE_POLICIES",
    "BSDeltaHedge",
    "HedgePolicy",
    "NoHedge",
    "RandomHedge",
    "ScriptedDeltaHedgeAgent",
    "bench_markdown",
    "print_episode",
    "run_bench",
    "run_hedge_episodes",
    "run_output",
]
