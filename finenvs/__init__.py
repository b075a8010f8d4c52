"""finenvs: Gymnasium environments for financial agents.

``import finenvs`` registers every env with gymnasium::

    import gymnasium as gym
    import finenvs  # noqa: F401
    env = gym.make("FinTrading-v0")

Each shipped task family is a folder ``finenvs/tasks/<family>/`` whose ``spec.py``
declares its ``SPEC``; :data:`BUILTIN` lists them, one line each. Importing them
loads gymnasium, numpy and scipy; data (duckdb, pandas), charts (matplotlib) and
the optional extras load when first used.
"""

from finenvs.tasks.audit.spec import SPEC as AUDIT
from finenvs.tasks.deltahedge.spec import SPEC as DELTAHEDGE
from finenvs.tasks.hedging.spec import SPEC as HEDGING
from finenvs.tasks.options.spec import SPEC as OPTIONS
from finenvs.tasks.qa.spec import SPEC as QA
from finenvs.tasks.registry import env_ids, register_task, task_of
from finenvs.tasks.registry import tasks as _registered_tasks
from finenvs.tasks.report.spec import SPEC as REPORT
from finenvs.tasks.trading.spec import SPEC as TRADING

__version__ = "0.1.0"

#: The shipped families, in the order tables list them.
BUILTIN = (TRADING, HEDGING, REPORT, AUDIT, QA, OPTIONS, DELTAHEDGE)


def register_envs() -> None:
    """Register the shipped families and their gymnasium ids (idempotent)."""
    registered = {spec.family for spec in _registered_tasks()}
    for spec in BUILTIN:
        if spec.family not in registered:
            register_task(spec)


register_envs()

__all__ = ["BUILTIN", "__version__", "env_ids", "register_envs", "task_of"]
