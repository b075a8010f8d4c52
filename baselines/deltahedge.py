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
hedging errors (``info["hedging_error"]``, currency units).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.envs.deltahedge import DELTA, MAX_HEDGE


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
        """The action for ``hedge``: a float32 array of shape (1,) clipped to +-1.5, or the nearest bin."""
        if self.bins is None:
            return np.array([min(max(hedge, -MAX_HEDGE), MAX_HEDGE)], dtype=np.float32)
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
            return np.array([self._rng.uniform(-MAX_HEDGE, MAX_HEDGE)], dtype=np.float32)
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

__all__ = [
    "DELTAHEDGE_POLICIES",
    "BSDeltaHedge",
    "HedgePolicy",
    "NoHedge",
    "RandomHedge",
    "run_hedge_episodes",
]
