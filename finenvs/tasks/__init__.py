"""Task families: one :class:`TaskSpec` per family, each in its own folder ``finenvs/tasks/<family>/``.

A family folder holds all of the family: its pure core, Gymnasium env, text
protocol, tools, scripted agent and baselines, bench section, judge and the
``spec.py`` that declares its ``SPEC``. ``import finenvs`` registers the shipped
families (one line each in :data:`finenvs.BUILTIN`). Generic code (CLI, runner,
MCP, A2A, score, bench, scorecard, conformance tests) reads the specs through
:func:`tasks` and :func:`task_of` and never imports a family's folder.
"""

from finenvs.tasks.registry import (
    env_arguments,
    env_ids,
    register_task,
    task,
    task_of,
    tasks,
    text_variant,
    unregister_task,
)
from finenvs.tasks.spec import (
    BenchSection,
    Column,
    EpisodeSpec,
    RLSpec,
    RunFlag,
    Selection,
    TaskSpec,
    finish_plan,
)

__all__ = ["BenchSection", "Column", "EpisodeSpec", "RLSpec", "RunFlag", "Selection", "TaskSpec", "env_arguments", "env_ids",
           "finish_plan", "register_task", "task", "task_of", "tasks", "text_variant", "unregister_task"]
