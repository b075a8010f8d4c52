"""Task families: one :class:`TaskSpec` per family, registered here when ``import finenvs`` runs.

Each family is a folder ``finenvs/tasks/<family>/`` whose ``spec.py`` builds its
``SPEC``; the one line per family in :data:`BUILTIN` registers it. Generic code
(CLI, runner, MCP, A2A, score, bench, scorecard, conformance tests) reads the
specs through :func:`tasks` and :func:`task_of` and never branches on a family.
"""

from finenvs.tasks.registry import env_ids, register_task, task, task_of, tasks, unregister_task
from finenvs.tasks.spec import (
    BenchSection,
    Column,
    EpisodeSpec,
    RunFlag,
    Selection,
    TaskSpec,
    finish_plan,
    load,
)

#: The shipped families, in the order tables list them.
BUILTIN = ("trading", "hedging", "report", "audit", "qa", "options", "deltahedge")


def register_builtin() -> None:
    """Register the shipped families (idempotent)."""
    for family in BUILTIN:
        spec = load(f"finenvs.tasks.{family}.spec:SPEC")
        if spec.family not in {s.family for s in tasks()}:
            register_task(spec)


__all__ = ["BUILTIN", "BenchSection", "Column", "EpisodeSpec", "RunFlag", "Selection", "TaskSpec", "env_ids", "finish_plan",
           "load", "register_builtin", "register_task", "task", "task_of", "tasks", "unregister_task"]
