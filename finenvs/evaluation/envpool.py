"""The envs of a run's episodes: the text env an agent acts in, the base env a recorded run replays into, and
the pool that reuses text envs across a run's episodes."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

from finenvs.tasks import EpisodeSpec, task_of
from finenvs.wrappers.debate import Debate
from finenvs.wrappers.text import DEFAULT_HISTORY, TextInterface, split_text_kwargs


def make_text_env(spec: EpisodeSpec, *, history: int = DEFAULT_HISTORY, tool_max_chars: int | None = None,
                  **toolbox_kwargs: Any) -> TextInterface:
    """The text env of an episode: its family's base env (with the spec's ``text_kwargs``) in a
    :class:`~finenvs.wrappers.TextInterface` with the family's tools (the wrapper's own arguments among the
    episode's ``env_kwargs``, e.g. ``tools="none"``, go to the wrapper)."""
    task = task_of(spec.env_id)
    env_kwargs, wrapper_kwargs = split_text_kwargs(spec.env_kwargs)
    base = gym.make(task.env_id, **{**task.text_kwargs, **env_kwargs})
    kwargs: dict[str, Any] = {**toolbox_kwargs, **wrapper_kwargs}
    if tool_max_chars is not None:
        kwargs["tool_max_chars"] = tool_max_chars
    return TextInterface(base, history=history, toolset=task.toolset, **kwargs)


def make_base_env(spec: EpisodeSpec) -> gym.Env:
    """The env an episode's recorded env actions replay into: its family's base env with the spec's
    ``text_kwargs``, under :class:`~finenvs.wrappers.debate.Debate` when the episode is debated (the text
    wrapper's own arguments, such as ``tools``, change no reward and are left out)."""
    task = task_of(spec.env_id)
    env_kwargs, wrapper_kwargs = split_text_kwargs(spec.env_kwargs)
    env = gym.make(task.env_id, **{**task.text_kwargs, **env_kwargs})
    if not wrapper_kwargs.get("debate"):
        return env
    rule = wrapper_kwargs.get("debate_rule")
    return Debate(env) if rule is None else Debate(env, rule=rule)


class EnvPool:
    """Text envs of one run, reused across its episodes: an episode takes a free env of its arguments (or a new
    one) and gives it back when it ends; ``reset`` starts every episode afresh. Building an env can cost more
    than an episode (FinQA-v0 generates its question bank, FinAudit-v0 reads its filings)."""

    def __init__(self, *, history: int = DEFAULT_HISTORY, tool_max_chars: int | None = None) -> None:
        self.history, self.tool_max_chars = history, tool_max_chars
        self._free: dict[str, list[TextInterface]] = {}

    @staticmethod
    def _key(spec: EpisodeSpec) -> str:
        return spec.env_id + json.dumps(spec.env_kwargs, sort_keys=True, default=str)

    def take(self, spec: EpisodeSpec) -> TextInterface:
        free = self._free.get(self._key(spec))
        return free.pop() if free else make_text_env(spec, history=self.history, tool_max_chars=self.tool_max_chars)

    def give(self, spec: EpisodeSpec, env: TextInterface) -> None:
        self._free.setdefault(self._key(spec), []).append(env)

    def close(self) -> None:
        for envs in self._free.values():
            for env in envs:
                env.close()
        self._free.clear()

__all__ = [
    "EnvPool",
    "make_base_env",
    "make_text_env",
]
