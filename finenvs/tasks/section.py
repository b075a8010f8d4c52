"""A family's section of ``finenvs bench``: what the bench hands it, what it gives back, and how it renders.

The bench runs every family through one path: its spec's ``bench.section`` (a :class:`Section`)
runs the family's baselines (:meth:`Section.run`), turns the bench's agent runs into rows of its
tables (:meth:`Section.agent_rows`), and renders its part of the finished scorecard as Markdown,
terminal lines and charts. A family folder sits below :mod:`finenvs.evaluation` and never imports
it: the bench passes the machinery a section needs in, as a :class:`BenchContext` (config, catalog,
the policy builder and the episode players) and a :class:`SectionView` (the family's share of the
scorecard, its agents table and the chart shelf).

The shapes a family picks from:

* :class:`PlanSection` (the default): every baseline over the family's plan, one table of its columns;
* :class:`RecordSection`: the family's own function runs its baselines into one JSON record and its own
  functions draw the tables and charts (FinAudit-v0, FinQA-v0, FinOptions-v0, FinDeltaHedge-v0);
* :class:`finenvs.tasks.market_section.MarketSection`: the per-symbol CR/SR/MDD tables and equity charts the
  market families share (FinTrading-v0; FinHedging-v0 and FinReport-v0 add their own parts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finenvs.text.markdown import md_table, md_text


def _as_is(items: Sequence[Any]) -> Iterable[Any]:
    return items


@dataclass(frozen=True)
class BenchContext:
    """What ``finenvs bench`` hands a family's section to run its baselines.

    Attributes:
        task: The family's :class:`~finenvs.tasks.spec.TaskSpec`.
        config: The bench's :class:`~finenvs.evaluation.bench.BenchConfig` (``split``, ``seed``, ``symbols``,
            ``universe``, ``env_kwargs``, ...).
        selection: The family's plan as the bench plays it: a :class:`~finenvs.tasks.spec.Selection` of the
            bench's split, seed and env arguments.
        catalog: The shipped data's catalog (``catalog.symbols(dataset)``).
        make_policy: ``(name, env_id, env, seed=...) -> policy``: one of the family's baselines for an env.
        run_episode: ``(env, policy, *, env_id, policy_name, seed) -> EpisodeResult``: one market episode with
            its curves and CR/SR/MDD (:func:`finenvs.evaluation.episodes.run_episode`).
        play: ``(env, policy, *, seed, options) -> dict``: one episode of any family with its spec's metrics
            under ``"metrics"`` (:func:`finenvs.evaluation.episodes.play_episode`).
        progress: ``(items) -> items``: iterate over a section's episodes with a progress bar, when the bench
            shows one.
    """

    task: Any
    config: Any
    selection: Any
    catalog: Any
    make_policy: Callable[..., Any]
    run_episode: Callable[..., Any]
    play: Callable[..., dict[str, Any]]
    progress: Callable[[Sequence[Any]], Iterable[Any]] = _as_is


@dataclass
class SectionPart:
    """What a family's section gives back after running its baselines.

    Attributes:
        record: Its JSON record, ``scorecard.json["sections"][family]`` (None: the family keeps none). A family
            with FAB++ sections (``bench.fabpp_sections``) lists each policy's tasks in it for the aggregate:
            ``record["tasks"][policy] = [{"section", "task_id", "score", "error"}, ...]``.
        rows: Its episode rows (:class:`~finenvs.tasks.market_section.EpisodeResult`): ``scorecard.json["rows"]``
            and the ``means`` over them.
        errors: Episodes that raised, one ``{"env", "symbol", "policy", "error"}`` each (reported, never dropped).
    """

    record: dict[str, Any] | None = None
    rows: list[Any] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


class Charts:
    """The run's PNG charts, each placed once, under the section it illustrates (the rest go to "Charts")."""

    def __init__(self, files: Iterable[str]) -> None:
        self.names = [Path(f).name for f in files if f.endswith(".png")]
        self.placed: set[str] = set()

    def take(self, *, prefix: str = "", contains: str = "") -> list[str]:
        """Markdown image lines of the unplaced charts whose name starts with ``prefix`` and contains ``contains``."""
        picked = [n for n in self.names if n not in self.placed and n.startswith(prefix) and contains in n]
        self.placed.update(picked)
        return [*(f"![{md_text(Path(n).stem)}]({n})" for n in picked), ""] if picked else []

    def rest(self) -> list[str]:
        left = [n for n in self.names if n not in self.placed]
        self.placed.update(left)
        return ["## Charts", "", *(f"![{md_text(Path(n).stem)}]({n})" for n in left), ""] if left else []


@dataclass(frozen=True)
class SectionView:
    """A family's share of a finished scorecard, as its section renders it.

    Attributes:
        task: The family's spec.
        config: The scorecard's config record (``split``, ``seed``, ...).
        record: Its section's JSON record (None: none, or the section failed).
        rows: Its episode rows: the baselines', then the agents' (those with ``efficiency``).
        runs: Its agent runs (every split).
        agents: The Markdown of its agents table (one row per agent run; empty without runs).
        charts: The scorecard's chart shelf: ``charts.take(prefix=..., contains=...)`` places a chart once.
        folder: The run folder (charts are written there).
    """

    task: Any
    config: Mapping[str, Any]
    record: Mapping[str, Any] | None
    rows: list[Any]
    runs: list[dict[str, Any]]
    agents: list[str]
    charts: Charts
    folder: Path

    @property
    def has_content(self) -> bool:
        """The section produced something to show (a record or episode rows)."""
        return self.record is not None or bool(self.rows)


class Section:
    """A family's section of the scorecard. Subclasses implement :meth:`run` and :meth:`markdown`."""

    def run(self, ctx: BenchContext) -> SectionPart:
        """Run the family's baselines."""
        raise NotImplementedError

    def agent_rows(self, ctx: BenchContext, run: Mapping[str, Any]) -> list[Any]:
        """An agent run's rows of the section's episode tables (none by default: its agents table shows it)."""
        return []

    def markdown(self, view: SectionView) -> list[str]:
        """The section's Markdown: its tables, its agents beside its baselines, then its charts."""
        raise NotImplementedError

    def terminal(self, view: SectionView) -> list[str]:
        """The lines ``finenvs bench`` prints for the section (default: its Markdown's non-empty lines)."""
        return [ln for ln in self.markdown(view) if ln]

    def plots(self, view: SectionView) -> list[Path]:
        """Write the section's charts into ``view.folder`` (default: none)."""
        return []


def missing_section_markdown(view: SectionView) -> list[str]:
    """A family whose section failed or did not run: its agents still get their section, then its charts."""
    head = [f"## {view.task.env_id}", ""] if view.runs else []
    return [*head, *view.agents, *family_charts(view)]


def family_charts(view: SectionView) -> list[str]:
    """The charts named after the family (``<family>_...``) or its env id."""
    return view.charts.take(prefix=f"{view.task.family}_") + view.charts.take(contains=view.task.env_id)


@dataclass(frozen=True)
class RecordSection(Section):
    """A section the family runs itself into one JSON record and renders with its own functions; its agents table
    and its charts follow its tables.

    Attributes:
        baselines: ``(config) -> dict``: every baseline of the family, as the record (``config``:
            :attr:`BenchContext.config`).
        tables: ``(record) -> list[str]``: the record's Markdown.
        lines: ``(record) -> list[str]``: the terminal's lines (None: the non-empty lines of ``tables``).
        draw: ``(record, folder) -> list[Path]``: the record's charts (None: none).
    """

    baselines: Callable[[Any], dict[str, Any]] | None = None
    tables: Callable[[Any], list[str]] | None = None
    lines: Callable[[Mapping[str, Any]], list[str]] | None = None
    draw: Callable[[Any, Path], list[Path]] | None = None

    def run(self, ctx: BenchContext) -> SectionPart:
        if self.baselines is None:
            raise NotImplementedError(f"{type(self).__name__} has no baselines function")
        return SectionPart(record=self.baselines(ctx.config))

    def own_markdown(self, view: SectionView) -> list[str]:
        """The record's own tables (without the agents and charts)."""
        if self.tables is None:
            raise NotImplementedError(f"{type(self).__name__} has no tables function")
        return list(self.tables(view.record or {}))

    def markdown(self, view: SectionView) -> list[str]:
        return [*self.own_markdown(view), *view.agents, *family_charts(view)]

    def terminal(self, view: SectionView) -> list[str]:
        if self.lines is not None:
            return list(self.lines(view.record or {}))
        return [ln for ln in self.own_markdown(view) if ln]

    def plots(self, view: SectionView) -> list[Path]:
        return [] if self.draw is None or view.record is None else list(self.draw(view.record, view.folder))


class PlanSection(RecordSection):
    """Every baseline of the family over its plan, summarised by its run metrics in one table of its columns: the
    section of a family that declares none."""

    def run(self, ctx: BenchContext) -> SectionPart:
        import gymnasium as gym

        task = ctx.task
        episodes = task.plan(ctx.selection)
        record: dict[str, Any] = {"n": len(episodes), "policies": {}}
        for name, (cls, _) in task.load_baselines().items():
            metrics = []
            for ep in episodes:
                env = gym.make(task.env_id, **{**ep.env_kwargs, **(getattr(cls, "env_kwargs", None) or {})})
                policy = ctx.make_policy(name, task.env_id, env, seed=ctx.config.seed)
                metrics.append(ctx.play(env, policy, seed=ep.seed, options=ep.options)["metrics"])
                env.close()
            record["policies"][name] = task.metrics_of_run(metrics)
        return SectionPart(record=record)

    def own_markdown(self, view: SectionView) -> list[str]:
        task, record = view.task, view.record or {"n": 0, "policies": {}}
        rows = [[name, *(c.cell(m) for c in task.columns)] for name, m in record["policies"].items()]
        return [f"## {task.bench.title} ({task.env_id})", "", f"Every baseline over the family's {record['n']} plan "
                "episodes.", "", md_table(["policy", *(c.label for c in task.columns)], rows), ""]


__all__ = ["BenchContext", "Charts", "PlanSection", "RecordSection", "Section", "SectionPart", "SectionView",
           "family_charts", "missing_section_markdown"]
