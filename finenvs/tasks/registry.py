"""The task registry: registered :class:`~finenvs.tasks.spec.TaskSpec` objects and their gymnasium ids.

:func:`register_task` registers a family's base env, its text variant (the base env
with the spec's ``text_kwargs`` inside :class:`finenvs.wrappers.text.TextInterface`)
and, if it has one, its batched vector env, all with gymnasium; every generic
command finds the family through :func:`task_of`.

The envs enforce reset-before-step themselves (``gymnasium.error.ResetNeeded``)
and validate every action, and CI runs gymnasium's full ``check_env`` on each
one, so they register with ``order_enforce=False`` and
``disable_env_checker=True``: ``gym.make`` returns the env itself, without two
wrapper layers on every step. ``gym.make(id, disable_env_checker=False)`` brings
gymnasium's passive checker back.
"""

from __future__ import annotations

import gymnasium as gym

from finenvs.tasks.spec import TaskSpec
from finenvs.tools.registry import TOOLSETS, register_tools

#: The text variants' gymnasium entry point, a "module:attr" string on purpose (the one left in the package): a
#: registry entry whose entry point is a string serialises (``gym.spec(id).to_json()``) and a string keeps this tier
#: from importing the wrappers tier above it (tests/test_layers.py). TaskSpec fields stay real objects.
TEXT_ENTRY_POINT = "finenvs.wrappers.text:make_text_env"

_TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec, *, replace: bool = False) -> TaskSpec:
    """Register a task family and its gymnasium ids.

    Raises:
        ValueError: The family or one of its ids is already registered (unless ``replace``).
    """
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"register_task takes a TaskSpec, got {type(spec).__name__}")
    taken = {s.family for s in _TASKS.values()} | {i for s in _TASKS.values() for i in s.ids}
    clash = sorted({spec.family, *spec.ids} & taken)
    if clash and not replace:
        raise ValueError(f"task family {spec.family!r}: {clash} already registered")
    if replace:
        unregister_task(spec.family)
    _TASKS[spec.family] = spec
    if spec.tools is not None:
        register_tools(spec.family, spec.tools)
    for env_id in spec.ids:
        gym.registry.pop(env_id, None)
    gym.register(id=spec.env_id, entry_point=spec.entry_point, vector_entry_point=spec.vector_entry_point,
                 kwargs=dict(spec.kwargs), order_enforce=False, disable_env_checker=True)
    gym.register(id=spec.text_env_id, entry_point=TEXT_ENTRY_POINT, kwargs={"base_id": spec.env_id},
                 order_enforce=False, disable_env_checker=True)
    return spec


def unregister_task(family: str) -> None:
    """Remove a family and its gymnasium ids (tests that declare a family of their own clean up with it)."""
    spec = _TASKS.pop(family, None)
    if spec is not None:
        if spec.tools is not None:
            TOOLSETS.pop(spec.family, None)
        for env_id in spec.ids:
            gym.registry.pop(env_id, None)


def tasks() -> list[TaskSpec]:
    """Every registered family, in registration order."""
    return list(_TASKS.values())


def task(family: str) -> TaskSpec:
    """The spec of a family name.

    Raises:
        KeyError: Unknown family (lists the registered ones).
    """
    if family not in _TASKS:
        raise KeyError(f"unknown task family {family!r}; families: {list(_TASKS)}")
    return _TASKS[family]


def task_of(env: str | object) -> TaskSpec:
    """The spec of an env id (base or text variant) or of an env instance.

    Raises:
        KeyError: Not a registered finenvs env (lists the valid ids).
    """
    if not isinstance(env, str):
        env_spec = getattr(getattr(env, "unwrapped", env), "spec", None)
        if env_spec is None:
            raise KeyError(f"{type(env).__name__} was not made by gym.make from a finenvs id")
        env = env_spec.kwargs.get("base_id") or env_spec.id
    for spec in _TASKS.values():
        if env in spec.ids:
            return spec
    raise KeyError(f"unknown env {env!r}; valid envs: {env_ids(text=True)}")


def env_ids(*, text: bool = False) -> list[str]:
    """Registered base env ids (and their text variants with ``text=True``)."""
    return [i for s in _TASKS.values() for i in (s.ids if text else (s.env_id,))]


def text_variant(env_id: str) -> str:
    """The registered text variant of a base env id."""
    return task_of(env_id).text_env_id


def env_arguments(env_id: str) -> tuple[frozenset[str], bool]:
    """The constructor arguments of the env registered as ``env_id``, and whether it takes any keyword
    (a ``**kwargs`` parameter)."""
    import inspect

    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).entry_point  # "module:Class", or the class itself (a family declared in code)
    if entry is None:
        raise ValueError(f"{env_id} is registered without an entry point")
    params = inspect.signature(entry if callable(entry) else load_env_creator(entry)).parameters
    return frozenset(params), any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


__all__ = ["TEXT_ENTRY_POINT", "env_arguments", "env_ids", "register_task", "task", "task_of", "tasks", "text_variant",
           "unregister_task"]
