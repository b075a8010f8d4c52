"""Every finenvs environment registers here, when ``import finenvs`` runs, from its task spec.

Each family's :class:`~finenvs.tasks.TaskSpec` names its base env id, registry
kwargs (JSON-serialisable, so ``gymnasium.spec(id).to_json()`` round-trips), its
``<Name>-text-v0`` variant and any batched vector env; :func:`register_envs`
registers them all (see :mod:`finenvs.tasks.registry`).
"""

from __future__ import annotations

from finenvs.tasks import env_ids as _env_ids
from finenvs.tasks import register_builtin, task_of


def register_envs() -> None:
    """Register every shipped finenvs env and its text variant with gymnasium (idempotent)."""
    register_builtin()


def env_ids() -> list[str]:
    """Ids of the registered finenvs base envs."""
    return _env_ids()


def text_variant(env_id: str) -> str:
    """The registered text variant of a base env id."""
    return task_of(env_id).text_env_id


def env_arguments(env_id: str) -> tuple[frozenset[str], bool]:
    """The constructor arguments of the env registered as ``env_id``, and whether it takes any keyword
    (a ``**kwargs`` parameter)."""
    import inspect

    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).entry_point  # "module:Class", or the class itself (a family declared in code)
    if entry is None:
        raise ValueError(f"{env_id} is registered without an entry point")
    params = inspect.signature(entry if callable(entry) else load_env_creator(entry)).parameters
    return frozenset(params), any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


__all__ = ["env_arguments", "env_ids", "register_envs", "text_variant"]
