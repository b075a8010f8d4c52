"""Run a policy through one episode of a finenvs env and collect its scores."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from finenvs.wrappers.metrics import EpisodeMetrics


@dataclass
class EpisodeResult:
    """Scores and curves of one episode."""

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
    #: agent episodes only: format errors, tool calls, tokens, cost, ... (see finenvs.baselines.llm_score)
    efficiency: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        """Flat JSON-able summary (no curves)."""
        extra = {"efficiency": self.efficiency} if self.efficiency is not None else {}
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
            **extra,
        }


def run_episode(
    env: gym.Env,
    policy: Callable[[Any, dict[str, Any]], Any],
    *,
    env_id: str,
    policy_name: str,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Play one episode of ``env`` with ``policy(obs, info) -> action``.

    The env is wrapped in :class:`~finenvs.wrappers.EpisodeMetrics` unless it
    already is.
    """
    wrapped = env if _has_metrics(env) else EpisodeMetrics(env)
    began = time.perf_counter()
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, info = wrapped.reset(seed=seed, options=options)
    first_info = info
    total = 0.0
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = wrapped.step(policy(obs, info))
        total += float(reward)
        steps += 1
        if terminated or truncated:
            break
    metrics = info["episode_metrics"]
    return EpisodeResult(
        env_id=env_id,
        policy=policy_name,
        symbol=str(first_info.get("symbol", "")),
        window_start=str(first_info.get("window_start", first_info.get("date", ""))),
        window_end=str(info.get("date", "")),
        steps=steps,
        total_reward=total,
        final_equity=float(info["equity"]),
        fees=float(info.get("fees", 0.0)),
        look_ahead_attempts=int(info.get("look_ahead_attempts", 0)),
        standard=metrics["standard"],
        herculean=metrics["herculean"],
        dates=metrics["dates"],
        wealth=metrics["wealth"],
        herculean_equity=metrics["herculean_equity"],
        positions=metrics["positions"],
        seconds=time.perf_counter() - began,
    )


def _has_metrics(env: gym.Env) -> bool:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, EpisodeMetrics):
            return True
        env = env.env
    return False
