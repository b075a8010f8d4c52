"""The task spec: one declaration per task family, which every generic piece of finenvs reads.

A :class:`TaskSpec` names everything the generic machinery needs about a family:
its env ids and registry defaults, the default episodes a run covers
(:meth:`TaskSpec.plan`), the toolset its text env offers, its offline scripted
chat agent, its baseline policies, how an episode's metrics are computed from the
env's own ``info`` dicts (the same function live and when ``finenvs score``
replays a recorded run), how episodes aggregate into a run's metrics, the columns
tables show, and where the family sits in the HERCULEAN and FAB++ tables.

``finenvs list/run/llm/mcp/score/bench``, the runner, the MCP and A2A paths, the
scorecard and the conformance tests iterate over :func:`finenvs.tasks.tasks`; none
of them branches on a family name. A new family is one module that builds a
``TaskSpec`` and calls :func:`finenvs.tasks.register_task`.

A spec holds real objects (classes and functions), so an editor follows them and
the layer test counts them as imports. The modules a family's objects live in
import their heavy libraries (pandas, duckdb, matplotlib) inside the functions
that need them, so declaring a family stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from finenvs.tasks.section import PlanSection, Section
from finenvs.text.markdown import fmt_number
from finenvs.tools.registry import CLOSED_BOOK_TOOLSET

if TYPE_CHECKING:
    from finenvs.tools.registry import Tool

#: What the metrics of a debated episode keep of its ``info["debate"]`` (:class:`finenvs.wrappers.debate.Debate`).
DEBATE_RECORD = ("outcome", "multiplier", "first_score", "final_score", "debated_score", "max_score", "mistake",
                 "first_correct", "final_correct", "debate_rule")


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a run: which env, with which arguments, seed and reset options."""

    index: int
    env_id: str
    env_kwargs: dict[str, Any]
    seed: int | None = None
    options: dict[str, Any] | None = None

    def label(self) -> str:
        what = (self.env_kwargs.get("symbol") or (self.options or {}).get("symbol")
                or (self.options or {}).get("task_id") or (self.options or {}).get("index"))
        what = "?" if what is None else what
        return f"#{self.index} {self.env_id} {what} seed={self.seed}"

    def describe(self) -> str:
        """The episode in words for a person (a server's banner): ``FinTrading-v0 MSFT (eval split, seed 0)``,
        ``FinAudit-v0 instance 3 (eval split, seed 0)``, ``FinTrading-v0 AAPL (2026-01-02..2026-02-27, seed 0)``.
        :meth:`label` is the compact form tables and records use."""
        kwargs, options = self.env_kwargs, self.options or {}
        what = [self.env_id]
        if kwargs.get("symbol"):
            what.append(str(kwargs["symbol"]))
        elif kwargs.get("symbols"):
            what.append("universe " + " ".join(str(s) for s in kwargs["symbols"]))
        if options.get("task_id") is not None:
            what.append(f"task {options['task_id']}")
        elif options.get("index") is not None:
            what.append(f"instance {options['index']}")
        where = []
        if kwargs.get("start") or kwargs.get("end"):
            where.append(f"{kwargs.get('start') or '...'}..{kwargs.get('end') or '...'}")
        elif kwargs.get("split"):
            where.append(f"{kwargs['split']} split")
        if self.seed is not None:
            where.append(f"seed {self.seed}")
        return " ".join(what) + (f" ({', '.join(where)})" if where else "")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeSpec:
        return cls(int(data["index"]), str(data["env_id"]), dict(data["env_kwargs"]), data.get("seed"),
                   data.get("options"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Selection:
    """Which episodes of a family's plan a run covers (what ``--split/--symbols/--instances/--limit/--seeds`` say).

    Attributes:
        split: Named split (``train``, ``eval``, ``live``); None: no split (a window's ``start``/``end`` choose
            the days).
        symbols: Symbols (market families: one episode each; pairs: the universe).
        instances: Indices into the family's default plan (items, questions, tasks, paths).
        limit: Keep the first ``limit`` episodes of the plan.
        seeds: Reset seeds (market families: one episode per symbol and seed).
        env_kwargs: Further env arguments for every episode (``start``/``end``, fees, ...).
    """

    split: str | None = "eval"
    symbols: tuple[str, ...] | None = None
    instances: tuple[int, ...] | None = None
    limit: int | None = None
    seeds: tuple[int, ...] = (0,)
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 1):
            raise ValueError(f"limit={self.limit!r} must be None or an integer >= 1")
        if not self.seeds:
            raise ValueError("seeds=() is empty; give at least one seed")


#: Env arguments a plan sets from the selection (``split``, ``symbols``): in ``env_kwargs`` too, they must agree.
PLANNED_KEYS = ("split", "symbol", "symbols")


def one_seed(env_id: str, selection: Selection) -> int:
    """The seed of a plan that plays every item at one seed (its items are the episodes, not the seeds).

    Raises:
        ValueError: ``seeds`` holds more than one (the others would be recorded and never played).
    """
    if len(selection.seeds) > 1:
        raise ValueError(f"{env_id} plays its plan at one seed (its episodes are the plan's items); --seeds gives "
                         f"{len(selection.seeds)}: give one, or one run per seed")
    return int(selection.seeds[0])


def finish_plan(episodes: Sequence[tuple[str, dict[str, Any], int | None, dict[str, Any] | None]],
                selection: Selection) -> list[EpisodeSpec]:
    """Apply ``instances`` and ``limit`` to a family's episodes and number them.

    Raises:
        ValueError: An instance out of range; or ``selection.env_kwargs`` names a key the plan sets
            (:data:`PLANNED_KEYS`) to another value: a run records what it plays, so it is refused.
    """
    for key in PLANNED_KEYS:
        if key in selection.env_kwargs:
            given = selection.env_kwargs[key]
            played = next((kw.get(key) for _, kw, _, _ in episodes if key in kw and kw.get(key) != given), given)
            if played != given:
                raise ValueError(f"env argument {key}={str(given)[:60]!r} is not what the episodes play "
                                 f"({key}={str(played)[:60]!r}, from the selection: --split/--symbols); give it "
                                 "there, not as an env argument")
    if selection.instances is not None:
        bad = [i for i in selection.instances if not 0 <= i < len(episodes)]
        if bad:
            raise ValueError(f"instances {bad} are out of range: this plan has {len(episodes)} episodes "
                             f"(0..{len(episodes) - 1})")
        episodes = [episodes[i] for i in selection.instances]
    if selection.limit is not None:
        episodes = episodes[: selection.limit]
    return [EpisodeSpec(k, env_id, dict(kwargs), seed, None if options is None else dict(options))
            for k, (env_id, kwargs, seed, options) in enumerate(episodes)]


@dataclass(frozen=True)
class Column:
    """One metric column of a table: ``run_metrics[key] * scale`` shown with ``digits`` decimals."""

    key: str
    label: str
    scale: float = 1.0
    digits: int = 2

    def cell(self, metrics: Mapping[str, Any] | None) -> str:
        if metrics is None:  # a failed episode (HERCULEAN's rule) or one that did not run
            return "—"
        return fmt_number(metrics.get(self.key), self.scale, self.digits)


@dataclass(frozen=True)
class BenchSection:
    """Where a family sits in ``finenvs bench``.

    Attributes:
        title: Section heading (``"Trading"``, ``"Options"``, ...).
        suites: Suites that include the family (``"herculean"``, ``"fabpp"``).
        section: The family's section of the scorecard (:class:`finenvs.tasks.section.Section`): it runs the
            baselines, turns agent runs into rows of its tables and renders its tables, terminal lines and charts.
            Default: :class:`~finenvs.tasks.section.PlanSection` (every baseline over the family's plan, one table
            of its columns).
        market: A market family: its episodes are the bench's symbols (``--symbols``, one episode each, or with
            ``universe`` the ``--universe`` of one episode), the agents play those too, and ``--windows`` plays it
            over many windows.
        universe: The family's ``symbols`` are one episode's universe (``--universe``), not one episode each.
        episode_part: The class of the family's own part of its market episode records (a
            :class:`finenvs.tasks.market_section.EpisodePart` subclass: its fields, how a played and a recorded
            episode fill them, which join the scorecard row); None: no fields of its own.
        live: The family has a live regime of its own (False: its live split asks the eval items again).
        herculean: The HERCULEAN workflow this family is (Table 2/3 layout); None if it is not one of the four.
        herculean_columns: The columns of its HERCULEAN table (default: ``columns``).
        herculean_per_label: One column group per episode label (symbols) rather than one for the run.
        herculean_labels: The labels (symbols) of the paper's table; the table keeps those the agents played.
        herculean_baseline: The baseline shown as HERCULEAN's "BL" row (Buy&Hold), run over the agents' plan.
        published: HERCULEAN's published rows of the eval window (its Table 2), ``{agent: {label: {column key:
            value}}}``.
        published_live: The same for the live window (its Table 3).
        published_block: The block of HERCULEAN's published-results JSON (``--herculean-published``) that holds
            the workflow's rows (``"trading"``, ``"hedging"``, ``"insights"``, ``"auditing"``).
        herculean_decisions: HERCULEAN's trading-decision files record this family's episodes
            (:mod:`finenvs.evaluation.herculean_files` reads, scores and writes them through it).
        fabpp_sections: FAB++ aggregate sections the family's tasks count in; each episode's metrics name its
            ``section`` and its 0-100 ``task_score``; its section's record lists
            ``record["tasks"][policy] = [{"section", "task_id", "score", "error"}]``.
        profiles: FAB++ aggregate profiles the family's baselines answer, ``{profile: policy}``.
        closed_book: The bench also runs the scripted agent closed book (``tools="none"``: the commit tool only)
            beside its run with the family's tools.
        extra_splits: Further splits of the family's plan the bench plays beside its own split, whatever that is
            (FinQA-v0: ``fab_public``, the Finance Agent Benchmark's public questions): the agents play them as
            runs of their own, their tasks join the family's FAB++ sections, and its ``section`` runs the baselines
            on them.
        gradings: How the bench may grade the family's FAB++ Analysis tasks (``finenvs bench --analysis-grading``):
            grading name -> the env arguments that select it (``{"fabpp": {"analysis_score": "fabpp"}, ...}``);
            every path of the bench (baselines, agents, debate) plays the family with them.
        herculean_env_kwargs: The env arguments of HERCULEAN's own protocol for the workflow, beyond its split and
            labels (FinAudit-v0: ``{"grading": "herculean"}``, the paper's reading of the answer): what its named
            Inspect task (``inspect eval finenvs/herculean_<published_block>``) plays with.
        fabpp_env_kwargs: FAB++ section -> the env arguments that narrow the family's plan to that section's tasks
            (FinQA-v0: ``{"knowledge": {"section": "knowledge"}, ...}``); a section not listed is the whole plan.
            The named Inspect task of a section (``inspect eval finenvs/fabpp_<section>``) plays with them.
    """

    title: str
    suites: tuple[str, ...]
    section: Section = field(default_factory=PlanSection)
    market: bool = False
    universe: bool = False
    episode_part: type | None = None
    live: bool = True
    herculean: str | None = None
    herculean_columns: tuple[Column, ...] = ()
    herculean_per_label: bool = True
    herculean_labels: tuple[str, ...] = ()
    herculean_baseline: str | None = None
    published: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    published_live: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    published_block: str | None = None
    herculean_decisions: bool = False
    fabpp_sections: tuple[str, ...] = ()
    profiles: Mapping[str, str] = field(default_factory=dict)
    closed_book: bool = False
    extra_splits: tuple[str, ...] = ()
    gradings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    herculean_env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    fabpp_env_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def published_for(self, split: str) -> Mapping[str, Mapping[str, Mapping[str, float]]]:
        """HERCULEAN's published rows of a split's window: ``published`` on ``eval`` (Table 2), ``published_live``
        on ``live`` (Table 3), none on any other window (the paper publishes no figure for it)."""
        return {"eval": self.published, "live": self.published_live}.get(split, {})

#: How a real evaluation split's episodes are chosen (:attr:`RLSpec.eval_episodes`).
RL_EVAL_EPISODES = ("universe", "fixed", "seeded")


@dataclass(frozen=True)
class RLSpec:
    """What the stable-baselines3 baselines (``finenvs train``, ``finenvs.baselines.rl``) need about a family.

    The action kind (Discrete or Box, hence which algorithms apply) is read from the built env's action
    space, not declared. A family whose ``TaskSpec.rl`` is None has no RL baseline.

    Attributes:
        train_kwargs: Env arguments of training episodes when a run gives none (``{"episode_length": 63}``:
            random sub-windows about as long as an evaluation episode).
        synthetic: ``(market | None) -> env kwargs``: the env arguments of a synthetic market
            ``{"model": ..., "params": {...}}`` (None: the env's default market). None: the env takes the
            market itself, ``{"source": "synthetic", "synthetic": market}``.
        eval_episodes: The episodes of a real evaluation split whose env plays whole windows (no
            ``episode_length``): ``"universe"`` (one per symbol of ``env.unwrapped.universe``, cycling),
            ``"fixed"`` (window and universe are fixed: one episode unless more are asked for) or
            ``"seeded"`` (seeds from ``eval_seed``). Synthetic splits and random sub-windows are seeded.
        wealth: ``(reset info, info) -> float``: the episode's wealth after a step, starting at the reset
            info's (``wealth(reset_info, reset_info)``). None: ``info["equity"]``.
        episode_scores: ``(reset info, last info) -> dict``: JSON-able scores of an episode beside CR/SR/MDD.
        run_scores: ``(per-episode scores) -> dict``: aggregates of a split's episodes beside the means.
        columns: Columns of those aggregates the RL tables show after CR/SR/MDD (when a result has them).
        build_hints: ``{text: hint}``: ``hint`` is appended to an env-building error whose message has ``text``.
    """

    train_kwargs: Mapping[str, Any] = field(default_factory=dict)
    synthetic: Callable[[dict[str, Any] | None], dict[str, Any]] | None = None
    eval_episodes: str = "seeded"
    wealth: Callable[[dict[str, Any], dict[str, Any]], float] | None = None
    episode_scores: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None
    run_scores: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    columns: tuple[Column, ...] = ()
    build_hints: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.eval_episodes not in RL_EVAL_EPISODES:
            raise ValueError(f"eval_episodes={self.eval_episodes!r}; choose one of {list(RL_EVAL_EPISODES)}")

    def synthetic_kwargs(self, market: dict[str, Any] | None) -> dict[str, Any]:
        if self.synthetic is None:
            return {"source": "synthetic"} if market is None else {"source": "synthetic", "synthetic": dict(market)}
        return self.synthetic(market)

    def wealth_of(self, reset_info: dict[str, Any], info: dict[str, Any]) -> float:
        return float(info["equity"]) if self.wealth is None else float(self.wealth(reset_info, info))

    def scores_of_episode(self, reset_info: dict[str, Any], last_info: dict[str, Any]) -> dict[str, Any]:
        return {} if self.episode_scores is None else dict(self.episode_scores(reset_info, last_info))

    def scores_of_run(self, episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {} if self.run_scores is None else dict(self.run_scores(list(episodes)))

    def hint(self, message: str) -> str:
        """``message`` with the hints whose text it contains appended in parentheses."""
        hints = [hint for text, hint in self.build_hints.items() if text in message]
        return f"{message} ({'; '.join(hints)})" if hints else message


@dataclass(frozen=True)
class RunFlag:
    """A ``finenvs run`` flag of one family, beside the flags any family may accept (:attr:`TaskSpec.run_options`).

    ``finenvs run`` offers the flags of every registered family; a family refuses the flags it does not declare.

    Attributes:
        name: The flag without its dashes, ``_`` for ``-`` (``"topic"`` is ``--topic``); also its key in the
            flags the family's ``run_printer`` receives.
        help: Its help text (``finenvs run --help`` names the env ids that declare it before it).
        type: Converts the command-line text (``int``, ``pathlib.Path``, ...).
        metavar: The value's name in the help (None: the name in capitals).
        excludes: Flags it cannot be given with (``("instance",)``).
        options: ``(episode options, value, seed) -> reset options``: how the value reaches the episode (None:
            only the family's ``run_printer`` reads it, e.g. a folder to write into).
    """

    name: str
    help: str
    type: Callable[[str], Any] = str
    metavar: str | None = None
    excludes: tuple[str, ...] = ()
    options: Callable[[dict[str, Any] | None, Any, int], dict[str, Any] | None] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower() or self.name.startswith("_"):
            raise ValueError(f"run flag name {self.name!r}: give the flag without dashes in lower case, "
                             "e.g. 'topic' or 'fee_bps'")

    @property
    def flag(self) -> str:
        """The command-line form, ``--topic``."""
        return "--" + self.name.replace("_", "-")


def _import_path(obj: Any) -> Any:
    """``"module:Qualname"`` of a class importable by that path (gymnasium serialises only such entry points);
    a class it cannot find there (declared inside a function, or in ``__main__``) is returned itself."""
    import sys

    found: Any = sys.modules.get(obj.__module__)
    for part in obj.__qualname__.split("."):
        found = getattr(found, part, None)
    return f"{obj.__module__}:{obj.__qualname__}" if found is obj and obj.__module__ != "__main__" else obj


EpisodeMetricsFn = Callable[[Any, dict[str, Any], list[dict[str, Any]]], dict[str, Any]]
RunMetricsFn = Callable[[list[dict[str, Any]]], dict[str, Any]]


class EnvPolicy(Protocol):
    """A baseline class built from the env it acts in (``cls.from_env(env, seed)``), then called
    ``policy(obs, info) -> action``; :func:`finenvs.baselines.make_policy` builds every class with ``from_env``
    this way, and a family's bench runs its baselines with it."""

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> EnvPolicy: ...

    def __call__(self, obs: Any, info: dict[str, Any]) -> Any: ...


@dataclass(frozen=True)
class TaskSpec:
    """One task family, declared once (see the module docstring).

    Attributes:
        family: Short name (``"trading"``).
        env_id: Base env id (``"FinTrading-v0"``).
        text_env_id: Its text variant (``"FinTrading-text-v0"``), built by the one text wrapper.
        description: One line for ``finenvs list`` and the docs tables.
        env: The base env's class (gymnasium registers it by its import path, :attr:`entry_point`).
        kwargs: Registry defaults of the base env (JSON-serialisable).
        plan: ``(selection) -> list[EpisodeSpec]``: the episodes a run covers (env ids are ``env_id``).
        episode_metrics: ``(env.unwrapped, reset_info, step_infos) -> dict``: an episode's metrics, JSON-able,
            with a ``"label"`` (symbol, task id, ...). Computed from the env's own infos, live and on replay.
        run_metrics: ``(episode metrics list) -> dict``: the run's headline metrics.
        columns: Columns of ``run_metrics`` that tables show (the first is the family's main score).
        scripted_agent: The offline chat agent's class (tools, then a committed answer).
        baselines: ``{policy: (class, description)}`` for the base env.
        tools: The family's tools (registered as its toolset in :data:`finenvs.tools.TOOLSETS` under the
            family's name; None: the commit tool only).
        text_kwargs: Base env arguments of the text variant (a text action mode).
        vector_env: The class ``gym.make_vec`` builds, if the family has a batched env.
        run_options: The flags of ``finenvs run`` that any family may accept which this family accepts, beyond
            ``--split/--seed``: ``symbol``, ``symbols``, ``start``, ``end``, ``fee_bps``, ``fill``, ``chart``,
            ``instance``.
        run_flags: The family's own ``finenvs run`` flags (``--topic``), each with how its value reaches the
            episode.
        judge: ``(env, env_action) -> dict``: the rubric checklist a judge model verifies
            for one decision (``{"text", "items": [{"id", "claim", "expect"}]}``), anchored in the facts the env
            computed for it; reported beside the family's deterministic score, never replacing it (None: no judge).
        max_tool_calls: Tool calls an agent may make per decision (the family's limit; ``finenvs llm
            --max-tool-calls`` overrides it).
        run_printer: ``(env, result, flags) -> (lines, record)``: what ``finenvs run``
            prints and its ``--json`` record (None: the family's columns); ``result`` is
            :func:`finenvs.evaluation.episodes.play_episode`'s, ``flags`` the run flags given.
        bench: The family's place in ``finenvs bench``.
        default_decision: ``"default"`` (an invalid reply takes the protocol's documented default) or
            ``"fail"`` (HERCULEAN's rule applies when asked for).
        rl: What the stable-baselines3 baselines need (``finenvs train``); None: the family has none.
        debate: ``(unwrapped env) -> DebateRound``: the counter-argument of FAB++'s
            adversarial debate for the current task and what counts as a correct answer
            (:class:`finenvs.wrappers.debate.Debate`; None: the family has no debate round).
    """

    family: str
    env_id: str
    text_env_id: str
    description: str
    env: type
    kwargs: Mapping[str, Any]
    plan: Callable[[Selection], list[EpisodeSpec]]
    episode_metrics: EpisodeMetricsFn
    run_metrics: RunMetricsFn
    columns: tuple[Column, ...]
    scripted_agent: type
    baselines: Mapping[str, tuple[type, str]]
    bench: BenchSection
    tools: Sequence[Tool] | None = None
    text_kwargs: Mapping[str, Any] = field(default_factory=dict)
    vector_env: type | None = None
    run_options: tuple[str, ...] = ()
    run_flags: tuple[RunFlag, ...] = ()
    run_printer: Callable[[Any, dict[str, Any], dict[str, Any]], tuple[list[str], dict[str, Any]]] | None = None
    judge: Callable[[Any, Any], dict[str, Any]] | None = None
    max_tool_calls: int = 8
    rl: RLSpec | None = None
    debate: Callable[[Any], Any] | None = None

    @property
    def ids(self) -> tuple[str, str]:
        return self.env_id, self.text_env_id

    @property
    def entry_point(self) -> Any:
        """The base env's gymnasium entry point: ``"module:Class"`` (so ``gymnasium.spec(id).to_json()`` works),
        or the class itself when it cannot be imported by that path."""
        return _import_path(self.env)

    @property
    def vector_entry_point(self) -> Any:
        return None if self.vector_env is None else _import_path(self.vector_env)

    @property
    def toolset(self) -> str:
        """The name of the family's toolset in :data:`finenvs.tools.TOOLSETS` (a family without tools: the
        closed-book toolset, the commit tool only)."""
        return CLOSED_BOOK_TOOLSET if self.tools is None else self.family

    def load_baselines(self) -> dict[str, tuple[type, str]]:
        return dict(self.baselines)

    def make_scripted_agent(self, **kwargs: Any) -> Any:
        return self.scripted_agent(**kwargs)

    def metrics_of_episode(self, env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
        """The family's episode metrics; a debated episode (FAB++'s debate) adds ``"debate"``: its outcome,
        multiplier, first and final score and the debated score."""
        metrics = self.episode_metrics(env, reset_info, infos)
        debate = infos[-1].get("debate") if infos else None
        if isinstance(debate, dict) and "multiplier" in debate:
            metrics = {**metrics, "debate": {k: debate.get(k) for k in DEBATE_RECORD}}
        return metrics

    def metrics_of_run(self, episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The family's run metrics; debated episodes add the mean multiplier (overall and per section), the
        outcomes and the mean debated score on the 0-100 scale, beside the plain scores (never replacing them)."""
        episodes = list(episodes)
        out = self.run_metrics(episodes)
        debated = [e for e in episodes if isinstance(e.get("debate"), dict)]
        if debated:
            sections: dict[str, list[float]] = {}
            outcomes: dict[str, int] = {}
            for e in debated:
                sections.setdefault(str(e.get("section", "all")), []).append(float(e["debate"]["multiplier"]))
                outcomes[str(e["debate"]["outcome"])] = outcomes.get(str(e["debate"]["outcome"]), 0) + 1
            out = {**out, "debated": len(debated),
                   "debate_multiplier": sum(float(e["debate"]["multiplier"]) for e in debated) / len(debated),
                   "debate_section_multipliers": {k: sum(v) / len(v) for k, v in sorted(sections.items())},
                   "debate_outcomes": dict(sorted(outcomes.items())),
                   "debated_score": sum(100.0 * float(e["debate"]["debated_score"]) / float(e["debate"]["max_score"])
                                        for e in debated) / len(debated)}
        return out


__all__ = ["DEBATE_RECORD", "RL_EVAL_EPISODES", "BenchSection", "Column", "EpisodeSpec", "RLSpec", "RunFlag", "Selection",
           "TaskSpec", "finish_plan", "one_seed"]
