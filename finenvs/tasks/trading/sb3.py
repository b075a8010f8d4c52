"""Stable-Baselines3 adapter for :class:`~finenvs.tasks.trading.vector.FinTradingVectorEnv`.

SB3 trains on its own ``VecEnv`` interface (same-step autoreset, the terminal
observation in ``infos[i]["terminal_observation"]``, ``TimeLimit.truncated``
for truncations, a list of per-env info dicts). :func:`to_sb3` wraps a batched
vector env in one, so ``PPO("MlpPolicy", to_sb3(FinTradingVectorEnv(64)))``
collects 64 episodes per numpy step instead of 64 Python steps.

Needs ``stable-baselines3`` (``pip install torch==2.13.0 && pip install 'finenvs[rl]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def to_sb3(vector_env: Any) -> Any:
    """An SB3 ``VecEnv`` stepping ``vector_env`` (a FinTradingVectorEnv, or its keyword arguments as a dict).

    The vector env is rebuilt in ``same_step`` autoreset mode if it was built in
    another one (SB3 expects the first observation of the next episode in the
    step that ends one).
    """
    from finenvs.tasks.trading.vector import FinTradingVectorEnv

    if isinstance(vector_env, dict):
        vector_env = FinTradingVectorEnv(autoreset_mode="same_step", **vector_env)
    elif not isinstance(vector_env, FinTradingVectorEnv):
        raise TypeError(f"to_sb3 takes a FinTradingVectorEnv (or its kwargs), not {type(vector_env).__name__}")
    elif not vector_env._same_step:
        vector_env = FinTradingVectorEnv(vector_env.num_envs, autoreset_mode="same_step", **vector_env.env_kwargs)
    return _adapter_class()(vector_env)


_ADAPTER: type | None = None


def _adapter_class() -> type:
    global _ADAPTER
    if _ADAPTER is not None:
        return _ADAPTER
    try:
        from stable_baselines3.common.vec_env.base_vec_env import VecEnv
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "finenvs.tasks.trading.sb3 needs stable-baselines3: pip install torch==2.13.0 && pip install 'finenvs[rl]'"
        ) from exc

    class FinTradingSB3VecEnv(VecEnv):
        """SB3 ``VecEnv`` view of a same-step-autoreset FinTradingVectorEnv."""

        def __init__(self, venv: Any) -> None:
            self.venv = venv
            super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
            self._actions: np.ndarray | None = None
            self.render_mode = None

        def reset(self) -> np.ndarray:
            seeds = [s for s in self._seeds]
            seed = None if all(s is None for s in seeds) else seeds
            obs, _ = self.venv.reset(seed=seed)
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64, copy=False)

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            obs, reward, terminated, truncated, info = self.venv.step(self._actions)
            dones = terminated | truncated
            infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
            if dones.any():
                final_obs = info["final_obs"]
                for i in np.flatnonzero(dones).tolist():
                    infos[i]["terminal_observation"] = final_obs[i]
                    infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                    infos[i]["equity"] = float(info["final_info"]["equity"][i])
            return obs, reward.astype(np.float32), dones, infos

        def close(self) -> None:
            self.venv.close()

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            raise AttributeError("FinTradingSB3VecEnv: sub-envs share one batched env; set attributes on it directly")

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            raise AttributeError(
                f"FinTradingSB3VecEnv has no per-sub-env {method_name!r}: the sub-envs are rows of one batched env"
            )

        def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
            return [False for _ in self._get_indices(indices)]

        def get_images(self) -> Sequence[np.ndarray | None]:
            return [None] * self.num_envs

    _ADAPTER = FinTradingSB3VecEnv
    return _ADAPTER


__all__ = ["to_sb3"]
