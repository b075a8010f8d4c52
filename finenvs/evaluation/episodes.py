"""Run a policy through one episode of a finenvs env and collect its scores.

:class:`EpisodeResult` (a market episode's record) lives with the market tables that show it,
:mod:`finenvs.tasks.market_section`; it is importable from here too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from finenvs.tasks.market_section import EpisodeResult, episode_part
from finenvs.wrappers.metrics import EpisodeMetrics


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
    already is. The family's own fields of the episode (its spec's ``bench.episode_part``) fill
    :attr:`EpisodeResult.extra`.
    """
    from finenvs.tasks import task_of

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
    extra = episode_part(task_of(env_id)).of_episode(env.unwrapped, info)
    return EpisodeResult(
        env_id=env_id,
        policy=policy_name,
        symbol=str(first_info.get("symbol", extra.label or "")),
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
        oracle=bool(getattr(policy, "oracle", False)),
        extra=extra,
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
