"""Which baseline policies apply to which env, and how to build them."""

from __future__ import annotations

from typing import Any

from finenvs.tasks import task_of


def policies_of(env_id: str) -> dict[str, tuple[type, str]]:
    """``{policy name: (class, one-line description)}`` of an env's family (its task spec's baselines).

    Raises:
        KeyError: Not a finenvs env (lists the valid ids).
    """
    return task_of(env_id).load_baselines()


def applicable_policies(env_id: str) -> list[str]:
    """Names of the baselines that can act in ``env_id``."""
    return list(policies_of(env_id))


def make_policy(name: str, env_id: str, env: Any = None, seed: int | None = 0) -> Any:
    """Build baseline ``name`` for ``env_id``.

    Args:
        name: Policy name (see :func:`applicable_policies`).
        env_id: Registered env id.
        env: The env instance: policies that read its observation layout or as-of view
            (every FinHedging-v0 baseline) need it; others use it to check the policy's
            history fits the observation window.
        seed: Seed of stochastic policies.

    Raises:
        KeyError: Unknown policy, or one that does not apply to the env (lists the valid ones).
        ValueError: The env's observation window is shorter than the policy needs.
    """
    table = policies_of(env_id)
    if name not in table:
        raise KeyError(f"unknown policy {name!r} for {env_id}; valid policies: {sorted(table)}")
    cls = table[name][0]
    if hasattr(cls, "from_env"):
        if env is None:
            raise ValueError(f"policy {name!r} for {env_id} needs the env it acts in (pass env=)")
        return cls.from_env(env, seed)
    policy = cls(seed=seed) if getattr(cls, "seeded", False) else cls()
    if env is not None:
        window = getattr(getattr(env, "unwrapped", env), "params", None)
        window = getattr(window, "window", None)
        if window is not None and window < getattr(policy, "min_window", 1):
            raise ValueError(f"policy {name!r} needs an observation window >= {policy.min_window}, env has {window}")
    return policy
