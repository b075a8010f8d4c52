"""What ``finenvs bench`` runs: its config, the suites, the families a config selects and the run folder."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finenvs.tasks import TaskSpec, task_of, tasks


def suites() -> dict[str, list[str]]:
    """``--suite`` presets from the task specs: suite name -> env ids (HERCULEAN's four workflows, FAB++'s)."""
    out: dict[str, list[str]] = {}
    for task in tasks():
        for suite in task.bench.suites:
            out.setdefault(suite, []).append(task.env_id)
    return out


def suite_choices() -> tuple[str, ...]:
    return ("all", *suites())


@dataclass
class BenchConfig:
    """What ``finenvs bench`` runs.

    Attributes:
        split: Named split every env runs on.
        symbols: Symbols of single-asset envs, one episode each (default: the env's dataset).
        universe: Universe of pairs envs (FinHedging-v0; default: the env's own, 8 stocks).
        envs: Env ids (default: every registered finenvs env).
        seed: Seed of resets and stochastic policies.
        out: Parent folder of the run folder.
        run_name: Run folder name (default: a UTC timestamp).
        plots: Write PNG charts (needs matplotlib).
        progress: Show a progress bar.
        agents: Also run the offline scripted agent through each env's text interface and tools.
        suite: ``all`` (default), ``herculean`` (Trading, Hedging, Market Insights, Auditing) or
            ``fabpp`` (Knowledge, Analysis, Options); ``envs`` overrides it.
        weights: Section weights of the aggregate (a preset name of
            :data:`finenvs.scoring.aggregate.WEIGHT_PRESETS` or a mapping).
        html: Also write the self-contained ``scorecard.html``.
        base_url: An OpenAI-compatible endpoint whose ``model`` runs as an agent in every section (else
            ``$OPENAI_BASE_URL`` when ``model`` is given).
        model: The endpoint's model name.
        a2a_url: A remote A2A agent that runs as an agent in every section (instead of an endpoint).
        endpoint: Further :class:`~finenvs.evaluation.endpoints.OpenAIChatAgent` arguments (``api_key_env``,
            ``timeout``, ``temperature``, ``max_tokens``, ``tool_choice``, ``extra_body``).
        agent_limit: Episodes per family for the model (None: the family's whole plan).
        concurrency: Episodes of an agent in flight at once.
        retries: The model's retries of a transient endpoint failure per request (``RunConfig.max_retries``).
        resume: A bench run folder to continue: agent runs that finished are reused, the rest continue.
        herculean_rule: Run the model under HERCULEAN's rule (five attempts, then the episode fails, "—").
        published: HERCULEAN's published-results files (its Table 2 and Table 3 as JSON) whose rows join the
            HERCULEAN tables beside the agents.
        alpha_cost_floor: Dollar floor of the cost in FAB++'s Alpha score (None: alpha is undefined at zero
            cost; see :mod:`finenvs.scoring.alpha`).
        eval_config: A FAB++ evaluation config (YAML or JSON, :mod:`finenvs.evaluation.eval_config`): the FAB++
            tasks the agents play and the section aggregate counts; recorded with its digest.
        instances: Plan indices the agents play, per family on the bench's split and per ``family/split`` on a
            split the family's bench section adds (``bench.extra_splits``; :func:`instances_key`); set from
            ``eval_config`` (an empty tuple: none of that split); None: every plan.
        price_in: Dollars per million prompt tokens of the model (with ``price_out``): its runs' cost, and so its
            FAB++ Alpha score (:mod:`finenvs.scoring.alpha`). None: the cost is unknown (alpha n/a).
        price_out: Dollars per million completion tokens of the model.
        prices: A price table file (JSON ``{model: {input_per_million, output_per_million}}``, or one flat entry)
            looked up by the model's name, instead of ``price_in``/``price_out``.
        debate: Also play every baseline of the families with a debate round (FinQA-v0, FinOptions-v0) under
            FAB++'s adversarial debate (:mod:`finenvs.evaluation.debate_runs`), and every agent through the text
            interface with ``debate=True`` (``<agent> (debate)`` runs); the aggregate gains an overall with
            debate: the aggregate of the tasks' debated scores (:func:`finenvs.text.debate.debate_verdict`).
        windows: Also play the market families' rule baselines and the bench's agents (not the closed-book or
            debate variants) over many windows (``quarterly:START:END``, :mod:`finenvs.evaluation.windows`) on
            the long shipped histories: per policy and agent the distribution of CR/SR/MDD with bootstrap
            intervals and the paired difference to Buy&Hold.
        after: With ``windows``: keep only windows starting after this date (a model's knowledge cutoff).
        analysis_grading: How FAB++'s Analysis tasks are graded: ``"fabpp"`` (default: methodology 30 /
            calculation 30 / answer 40, as the paper scores them) or ``"answer"`` (the named answer-only variant);
            each family that has Analysis tasks maps it to its env arguments (``BenchSection.gradings``). Recorded
            in ``bench.json`` and the scorecard.
    """

    split: str = "eval"
    symbols: list[str] | None = None
    universe: list[str] | None = None
    envs: list[str] | None = None
    seed: int = 0
    out: Path = Path("finenvs-results")
    run_name: str | None = None
    plots: bool = True
    progress: bool = True
    agents: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    suite: str = "all"
    weights: str | dict[str, float] = "fabpp"
    html: bool = True
    base_url: str | None = None
    model: str | None = None
    a2a_url: str | None = None
    endpoint: dict[str, Any] = field(default_factory=dict)
    agent_limit: int | None = None
    concurrency: int = 4
    retries: int = 4
    resume: Path | None = None
    herculean_rule: bool = False
    published: list[Path] = field(default_factory=list)
    alpha_cost_floor: float | None = None
    eval_config: Path | None = None
    instances: dict[str, tuple[int, ...]] | None = None
    price_in: float | None = None
    price_out: float | None = None
    prices: Path | None = None
    debate: bool = False
    windows: str | None = None
    after: str | None = None
    analysis_grading: str = "fabpp"

    @property
    def has_model(self) -> bool:
        return bool(self.base_url or self.model or self.a2a_url)


def select_tasks(config: BenchConfig) -> list[TaskSpec]:
    """The families a config runs, in its order: ``envs``, else the suite's (all registered for ``all``)."""
    if config.suite not in suite_choices():
        raise ValueError(f"unknown suite {config.suite!r}; suites: {list(suite_choices())}")
    if config.envs:
        return [task_of(e) for e in config.envs]  # unknown env -> KeyError naming the valid ids
    wanted = suites().get(config.suite) if config.suite != "all" else None
    return [t for t in tasks() if wanted is None or t.env_id in wanted]


def analysis_gradings() -> tuple[str, ...]:
    """The Analysis gradings the registered families offer (``--analysis-grading``), the default first."""
    return tuple(dict.fromkeys(["fabpp", *(g for t in tasks() for g in t.bench.gradings)]))


def family_env_kwargs(config: BenchConfig, task: TaskSpec) -> dict[str, Any]:
    """The env arguments every bench path plays ``task`` with: the config's, and those of its Analysis grading
    (``BenchSection.gradings``; a family without gradings: none)."""
    if config.analysis_grading not in analysis_gradings():
        raise ValueError(f"unknown analysis grading {str(config.analysis_grading)[:40]!r}; gradings: "
                         f"{list(analysis_gradings())}")
    return {**config.env_kwargs, **task.bench.gradings.get(config.analysis_grading, {})}


def run_dir(config: BenchConfig) -> Path:
    """The run folder: ``resume``'s, else ``<out>/<run_name or UTC time>`` (``-2``, ``-3``, ... when taken)."""
    if config.resume is not None:
        if not (Path(config.resume) / "bench.json").is_file():
            raise FileNotFoundError(f"{config.resume}: no bench.json; not a finenvs bench run folder")
        return Path(config.resume)
    name = config.run_name or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = Path(config.out) / name
    suffix = 1
    while path.exists():
        suffix += 1
        path = Path(config.out) / f"{name}-{suffix}"
    return path


def instances_key(task: TaskSpec, split: str) -> str:
    """The key of ``BenchConfig.instances`` for ``task``'s plan on ``split``: ``family/split`` on a split its bench
    section adds (``bench.extra_splits``), else the family."""
    return f"{task.family}/{split}" if split in task.bench.extra_splits else task.family


def herculean_splits(config: BenchConfig) -> tuple[str, ...]:
    """The backtest split (the bench's) and, when it is the eval quarter, the live one (HERCULEAN's Table 3)."""
    return (config.split, "live") if config.split == "eval" else (config.split,)


def config_record(config: BenchConfig, specs: list[TaskSpec]) -> dict[str, Any]:
    """The config as ``bench.json`` and the scorecard record it."""
    return {"split": config.split, "seed": config.seed, "suite": config.suite, "envs": [t.env_id for t in specs],
            "symbols": config.symbols, "universe": config.universe, "env_kwargs": config.env_kwargs,
            "agents": config.agents, "model": config.model, "base_url": config.base_url, "a2a_url": config.a2a_url,
            "agent_limit": config.agent_limit, "retries": config.retries, "herculean_rule": config.herculean_rule,
            "alpha_cost_floor": config.alpha_cost_floor,
            "prices": {"price_in": config.price_in, "price_out": config.price_out,
                       "file": None if config.prices is None else str(config.prices)}, "debate": config.debate, "windows": config.windows,
            "after": config.after, "analysis_grading": config.analysis_grading,
            "eval_config": None if config.eval_config is None else str(config.eval_config),
            "instances": config.instances}


__all__ = ["BenchConfig", "analysis_gradings", "config_record", "family_env_kwargs", "herculean_splits",
           "instances_key", "run_dir", "select_tasks", "suite_choices", "suites"]
