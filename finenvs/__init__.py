"""finenvs: Gymnasium environments for financial agents.

``import finenvs`` registers every env with gymnasium::

    import gymnasium as gym
    import finenvs  # noqa: F401
    env = gym.make("FinTrading-v0")

It imports only gymnasium and numpy (the task specs are declarations); data (duckdb, pandas), charts
(matplotlib) and the optional extras load when first used.
"""

from finenvs.registration import env_ids, register_envs
from finenvs.tasks import task_of

__version__ = "0.1.0"

register_envs()

__all__ = ["__version__", "env_ids", "register_envs", "task_of"]
