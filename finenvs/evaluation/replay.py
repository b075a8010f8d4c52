"""Replaying a recorded run offline: its recorded env actions into fresh envs of its episodes, rewards checked
(``finenvs score`` re-scores a run folder this way, without the agent, the tools or the endpoint)."""

from __future__ import annotations

from typing import Any

from finenvs.evaluation.envpool import EnvPool, make_base_env
from finenvs.evaluation.runlog import jsonable
from finenvs.tasks import EpisodeSpec, task_of


class ReplayMismatch(RuntimeError):
    """A recorded trajectory does not replay to the same rewards (data, code or env arguments changed)."""


def replay_episode(spec: EpisodeSpec, actions: list[Any], *, complete: bool = True, envs: dict[str, Any] | None = None
                   ) -> tuple[list[float], dict[str, Any] | None, dict[str, Any]]:
    """Replay recorded env actions (as the trajectory encoded them) into a fresh env of the episode.

    The offline re-scorer: it needs only the run's episode spec and the recorded
    actions, not the agent, the tools or the endpoint.

    Args:
        spec: The episode.
        actions: The recorded ``env_action`` of every step, in order.
        complete: The actions must end the episode (False: a failed episode's prefix; no metrics).
        envs: Base envs to reuse across the episodes of a run, by arguments (reset starts each afresh);
            None builds one for this episode and closes it.

    Returns:
        ``(rewards, episode metrics or None, final info)``.

    Raises:
        ReplayMismatch: An action is not an action of the env, or the episode ends early (or, with
            ``complete``, not at all).
    """
    task = task_of(spec.env_id)
    key = EnvPool._key(spec)
    env = envs.get(key) if envs is not None else None
    if env is None:
        env = make_base_env(spec)
        if envs is not None:
            envs[key] = env
    base: Any = env.unwrapped  # a family's env: it has a text protocol
    protocol = base.text_protocol
    try:
        _, reset_info = env.reset(seed=spec.seed, options=spec.options)
        rewards: list[float] = []
        infos: list[dict[str, Any]] = []
        done = False
        for k, action in enumerate(actions):
            if done:
                raise ReplayMismatch(f"{spec.label()}: the episode ends after {k} of {len(actions)} recorded actions")
            try:
                _, reward, terminated, truncated, info = env.step(protocol.decode(action))
            except (ValueError, TypeError, KeyError) as exc:
                raise ReplayMismatch(f"{spec.label()} step {k}: the recorded action is not an action of "
                                     f"{spec.env_id} ({str(exc)[:200]})") from None
            rewards.append(float(reward))
            infos.append(info)
            done = terminated or truncated
        if not complete:
            return rewards, None, infos[-1] if infos else reset_info
        if not done:
            raise ReplayMismatch(f"{spec.label()}: the {len(actions)} recorded actions do not end the episode")
        metrics = jsonable(task.metrics_of_episode(env.unwrapped, reset_info, infos))
        return rewards, metrics, infos[-1]
    finally:
        if envs is None:
            env.close()

__all__ = [
    "ReplayMismatch",
    "replay_episode",
]
