"""Run a policy through one episode of a finenvs env and collect its scores."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from finenvs.tasks.common import position_stats
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
    #: agent episodes only: format errors, tool calls, tokens, cost, ... (see finenvs.evaluation.score)
    efficiency: dict[str, Any] | None = None
    #: FinHedging-v0: the selected ordered pair ("AAPL/MSFT"; long the first on LONG_SHORT)
    pair: str | None = None
    #: The policy read the future (an upper bound, not a baseline).
    oracle: bool = False
    #: FinHedging-v0: the pair's log price ratio on ``dates``
    spread: list[float] | None = field(default=None, repr=False)
    #: FinReport-v0 reports: mean quality score (0-10), its four dimensions, invalid ratings
    quality: dict[str, Any] | None = None

    @property
    def time_in_market(self) -> float:
        """Fraction of the episode's days with a position held."""
        return position_stats(self.positions)[0]

    @property
    def round_trips(self) -> int:
        """Positions opened (a reversal opens one); each is closed by the episode's end."""
        return position_stats(self.positions)[1]

    def row(self) -> dict[str, Any]:
        """Flat JSON-able summary (no curves)."""
        extra: dict[str, Any] = {"efficiency": self.efficiency} if self.efficiency is not None else {}
        if self.pair is not None:
            extra["pair"] = self.pair
        if self.oracle:
            extra["oracle"] = True
        if self.quality is not None:
            extra["quality"] = self.quality
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
            "time_in_market": self.time_in_market,
            "round_trips": self.round_trips,
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
    pair = info.get("pair")
    spread_path = getattr(env.unwrapped, "spread_path", None)
    spread = spread_path() if callable(spread_path) else None
    return EpisodeResult(
        env_id=env_id,
        policy=policy_name,
        symbol=str(first_info.get("symbol", pair or "")),
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
        pair=pair,
        oracle=bool(getattr(policy, "oracle", False)),
        spread=None if spread is None else spread.tolist(),
        quality=info.get("quality_summary"),
    )


def _has_metrics(env: gym.Env) -> bool:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, EpisodeMetrics):
            return True
        env = env.env
    return False


def play_episode(env: gym.Env, policy: Callable[[Any, dict[str, Any]], Any], *, seed: int | None = None,
                 options: dict[str, Any] | None = None, policy_name: str = "") -> dict[str, Any]:
    """Play one episode of any finenvs env with ``policy(obs, info) -> action``; the family's metrics of it.

    Returns:
        ``{"env", "policy", "seed", "obs", "info" (reset info), "action" (the last), "actions", "reward"
        (total), "steps", "final" (the last step's info), "metrics" (the task spec's episode metrics),
        "oracle", "seconds"}``.
    """
    from finenvs.tasks import task_of

    task = task_of(env)
    began = time.perf_counter()
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, info = env.reset(seed=seed, options=options)
    first_obs, reset_info = obs, info
    infos: list[dict[str, Any]] = []
    actions: list[Any] = []
    total = 0.0
    while True:
        action = policy(obs, info)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        infos.append(info)
        total += float(reward)
        if terminated or truncated:
            break
    return {"env": task.env_id, "policy": policy_name, "seed": seed, "obs": first_obs, "info": reset_info,
            "action": actions[-1], "actions": actions, "reward": total, "steps": len(infos), "final": infos[-1],
            "metrics": task.metrics_of_episode(env.unwrapped, reset_info, infos),
            "oracle": bool(getattr(policy, "oracle", False)), "seconds": time.perf_counter() - began}


def generic_run_output(env: gym.Env, result: dict[str, Any], flags: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """What ``finenvs run`` prints for a family without a printer of its own: its columns, and the metrics."""
    from finenvs.tasks import task_of

    task = task_of(env)
    single = task.metrics_of_run([result["metrics"]])
    cells = ", ".join(f"{c.label} {c.cell(single)}" for c in task.columns)
    lines = [f"{task.env_id} {result['metrics'].get('label', '')} policy={result['policy']} steps={result['steps']}: "
             f"{cells}"]
    return lines, {"env": task.env_id, "policy": result["policy"], "seed": result["seed"], "steps": result["steps"],
                   "reward": result["reward"], "metrics": result["metrics"]}
