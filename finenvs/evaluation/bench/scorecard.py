"""The scorecard a bench run measured, and each family's share of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.evaluation.agent_runs import agents_markdown
from finenvs.tasks import TaskSpec, task_of
from finenvs.tasks.market_section import EpisodeResult, mean_rows
from finenvs.tasks.section import Charts, SectionView


@dataclass
class Scorecard:
    """Everything a bench run measured."""

    config: dict[str, Any]
    #: the episode rows of the families' sections (the market tables'), the baselines' then the agents'
    results: list[EpisodeResult]
    errors: list[dict[str, str]]
    reproduction: list[dict[str, Any]]
    run_dir: Path
    seconds: float
    files: list[str] = field(default_factory=list)
    #: family -> its section's JSON record (:attr:`finenvs.tasks.section.SectionPart.record`)
    sections: dict[str, Any] = field(default_factory=dict)
    #: agent runs (:func:`finenvs.evaluation.agent_runs.run_agent`), every family and split
    agents: list[dict[str, Any]] = field(default_factory=list)
    herculean: dict[str, Any] | None = None
    aggregate: dict[str, Any] | None = None
    #: env id -> :func:`finenvs.evaluation.windows.run_windows`'s record (``--windows``)
    windows: dict[str, Any] = field(default_factory=dict)

    def section(self, family: str) -> dict[str, Any] | None:
        return self.sections.get(family)

    def tasks(self) -> list[TaskSpec]:
        """The families of the scorecard, in the order its config lists them."""
        return [task_of(e) for e in self.config["envs"]]

    def view(self, task: TaskSpec, charts: Charts | None = None) -> SectionView:
        """A family's share of the scorecard, for its section to render (``charts``: the page's chart shelf)."""
        runs = [r for r in self.agents if r["family"] == task.family]
        return SectionView(task=task, config=self.config, record=self.sections.get(task.family),
                           rows=[r for r in self.results if r.env_id == task.env_id], runs=runs,
                           agents=agents_markdown(task, runs), charts=charts or Charts(()), folder=self.run_dir)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "rows": [r.row() for r in self.results],
            "means": mean_rows(self.results),
            "errors": self.errors,
            "reproduction_check": self.reproduction,
            "sections": self.sections,
            "agents": self.agents,
            "herculean": self.herculean,
            "aggregate": self.aggregate,
            "windows": self.windows,
            "tokens": self.tokens(),
            "seconds": self.seconds,
        }

    def tokens(self) -> list[dict[str, Any]]:
        """Tokens per decision of every agent run (family, agent, split): prompt, completion and cached prefix, the
        cached share, and how they were counted (``estimate``: ``o200k_base``; ``n/a``: unknown, never 0)."""
        return [{"env": r["env"], "agent": r["agent"], "split": r["split"],
                 **(r.get("efficiency") or {}).get("per_decision_tokens", {"counted": "n/a"})} for r in self.agents]


def json_default(obj: Any) -> Any:
    """``json.dumps``'s ``default``: numpy scalars and paths."""
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


__all__ = ["Scorecard", "json_default"]
