"""Stable-baselines3 baselines, the rl-zoo shape: one ``train.py`` over a table of algorithms (needs ``finenvs[rl]``).

| algo | algorithm | action space | default env |
|---|---|---|---|
| ``ppo`` | PPO | Discrete or Box | FinTrading-v0 (also FinHedging-v0, FinDeltaHedge-v0) |
| ``a2c`` | A2C | Discrete or Box | FinTrading-v0 (also FinHedging-v0, FinDeltaHedge-v0) |
| ``dqn`` | DQN | Discrete | FinTrading-v0 (also FinHedging-v0) |
| ``sac`` | SAC | Box | FinDeltaHedge-v0 |
| ``td3`` | TD3 | Box | FinDeltaHedge-v0 |

``algos.py`` holds the table (each algorithm's ``Args``: SB3 class, action spaces,
default hyperparameters), ``train.py`` trains any of them, ``common.py`` what every
run shares (checks, evaluation beside the rule baselines, results, run folders).
A run trains on the ``train`` split (real and/or synthetic), evaluates the saved
model deterministically on ``eval`` and ``live`` beside the rule baselines on the
same episodes, and writes ``model.zip``, ``vecnormalize.pkl`` and ``result.json``::

    python -m finenvs.baselines.rl.train --algo ppo --env-id FinTrading-v0 --timesteps 100000
    finenvs train --algo dqn --env FinTrading-v0 --timesteps 100000 --seeds 0,1,2

Importing this package loads neither torch nor stable-baselines3; training imports
them and raises ``ImportError`` naming the extra when they are missing.
"""

from __future__ import annotations

from types import SimpleNamespace

from finenvs.baselines.rl.algos import ALGORITHMS, ALGOS
from finenvs.baselines.rl.common import RL_EXTRA


def load_algo(name: str) -> SimpleNamespace:
    """Algorithm ``name`` as ``finenvs train`` runs it: ``.Args`` (its defaults), ``.train(args)``, ``.run(args)``.

    Raises:
        ValueError: Unknown algorithm (lists the valid ones).
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algo {name!r}; valid algos: {list(ALGOS)}")
    from finenvs.baselines.rl import train

    return SimpleNamespace(name=name, Args=ALGORITHMS[name], train=train.train, run=train.run, main=train.main)


__all__ = ["ALGORITHMS", "ALGOS", "RL_EXTRA", "load_algo"]
