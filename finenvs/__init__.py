"""finenvs: Gymnasium environments for financial agents.

``import finenvs`` registers every env with gymnasium::

    import gymnasium as gym
    import finenvs  # noqa: F401
    env = gym.make("FinTrading-v0")

It imports only gymnasium and numpy; data (duckdb, pandas), charts
(matplotlib) and the optional extras load when first used.
"""

from finenvs.registration import ENVIRONMENTS, env_ids, register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["ENVIRONMENTS", "__version__", "env_ids", "register_envs"]
