"""Stable-baselines3 baselines, one CleanRL-style file per algorithm (needs ``finenvs[rl]``).

| script | algorithm | action space | envs |
|---|---|---|---|
| ``ppo.py`` | PPO | Discrete or Box | FinTrading-v0, FinHedging-v0 (and FinDeltaHedge-v0) |
| ``a2c.py`` | A2C | Discrete or Box | FinTrading-v0, FinHedging-v0 (and FinDeltaHedge-v0) |
| ``dqn.py`` | DQN | Discrete | FinTrading-v0, FinHedging-v0 |
| ``sac.py`` | SAC | Box | FinDeltaHedge-v0 |
| ``td3.py`` | TD3 | Box | FinDeltaHedge-v0 |

Each trains on the ``train`` split (real and/or synthetic), evaluates the saved
model deterministically on ``eval`` and ``live`` beside the rule baselines on
the same episodes, and writes ``model.zip``, ``vecnormalize.pkl`` and
``result.json``::

    python -m finenvs.baselines.rl.ppo --env-id FinTrading-v0 --timesteps 100000
    finenvs train --algo dqn --env FinTrading-v0 --timesteps 100000 --seeds 0,1,2

Importing this package loads neither torch nor stable-baselines3; the scripts
import them when they train and raise ``ImportError`` naming the extra when they
are missing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from finenvs.baselines.rl.common import ALGO_ACTION_SPACES, ALGOS, RL_EXTRA


def load_algo(name: str) -> ModuleType:
    """The script module of algorithm ``name`` (``ppo``, ``a2c``, ``dqn``, ``sac`` or ``td3``).

    Raises:
        ValueError: Unknown algorithm (lists the valid ones).
    """
    if name not in ALGOS:
        raise ValueError(f"unknown algo {name!r}; valid algos: {list(ALGOS)}")
    return importlib.import_module(f"finenvs.baselines.rl.{name}")


__all__ = ["ALGOS", "ALGO_ACTION_SPACES", "RL_EXTRA", "load_algo"]
