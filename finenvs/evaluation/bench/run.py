"""``finenvs bench``'s run: every family's section, the windows part, the agents, HERCULEAN's tables and FAB++'s
aggregate, then the scorecard files."""

from __future__ import annotations

import datetime as _dt
import json
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import finenvs
from finenvs.baselines.registry import make_policy
from finenvs.data.splits import SPLITS
from finenvs.evaluation.agent_runs import BenchAgent
from finenvs.evaluation.bench.agents import bench_agents, run_agents, split_skips
from finenvs.evaluation.bench.aggregate import run_debates, section_aggregate
from finenvs.evaluation.bench.config import (
    BenchConfig,
    config_record,
    family_env_kwargs,
    instances_key,
    run_dir,
    select_tasks,
)
from finenvs.evaluation.bench.herculean import herculean_record, reproduction_check
from finenvs.evaluation.bench.plots import write_plots
from finenvs.evaluation.bench.render import write_scorecard
from finenvs.evaluation.bench.scorecard import Scorecard, json_default
from finenvs.evaluation.episodes import play_episode, run_episode
from finenvs.scoring.aggregate import resolve_weights
from finenvs.scoring.presets import SHARPE_CONVENTIONS, SHARPE_LABELS
from finenvs.tasks import Selection, TaskSpec, tasks
from finenvs.tasks.market_section import EpisodeResult
from finenvs.tasks.section import BenchContext


def _prepare(config: BenchConfig) -> tuple[BenchConfig, Any]:
    """Check the config before any work; the config with an evaluation config's selection applied, and that
    selection (None without ``eval_config``)."""
    if config.split not in SPLITS:
        raise ValueError(f"unknown split {config.split!r}; valid splits: {sorted(SPLITS)}")
    selection = None
    if config.eval_config is not None:  # a bad config fails here, before any work
        from finenvs.evaluation.eval_config import bench_pools, read_config, select

        selection = select(read_config(config.eval_config), bench_pools(config.split, config.seed),
                           source=str(config.eval_config))
        chosen = [t for t in tasks() if t.family in selection.families]
        instances = {t.family: selection.instances(t.family) for t in chosen}
        instances.update({instances_key(t, x): selection.instances(t.family, x) for t in chosen
                          for x in t.bench.extra_splits})  # an empty tuple: none of that split's tasks
        config = replace(config, envs=[t.env_id for t in chosen], instances=instances)
    return config, selection


def _check(config: BenchConfig, catalog: Any) -> list[BenchAgent]:
    """The rest of the checks before any work (weights, windows, symbols, endpoint, published files); the agents."""
    resolve_weights(config.weights)  # fail before any work on bad weights
    if config.windows:  # a bad window spec fails here
        from finenvs.evaluation.windows import parse_windows

        parse_windows(config.windows)
    for symbol in [*(config.symbols or []), *(config.universe or [])]:  # fail fast, before any work
        if not config.windows and symbol not in catalog.symbols("core"):  # long histories hold more names
            raise KeyError(f"unknown symbol {symbol!r}; valid symbols: {catalog.symbols('core')}")
    agents = bench_agents(config)  # a bad endpoint or A2A URL fails here
    for path in config.published:  # a bad published-results file fails here
        from finenvs.evaluation.agent_runs import load_published

        load_published(path)
    return agents


def _check_weights(config: BenchConfig, specs: list[TaskSpec]) -> None:
    """Every FAB++ section the selected families score has a weight (fails before any work, naming them)."""
    weights = resolve_weights(config.weights)
    sections = dict.fromkeys(s for t in specs for s in t.bench.fabpp_sections)
    missing = [s for s in sections if s not in weights]
    if missing:
        raise ValueError(f"--weights {', '.join(f'{k}={v:g}' for k, v in weights.items())} gives no weight to "
                         f"section(s) {', '.join(missing)}, which this run scores; give each of "
                         f"{', '.join(sections)} a weight (0 leaves one out of the aggregate) or choose the families "
                         "with --envs")


def context(task: TaskSpec, config: BenchConfig, catalog: Any) -> BenchContext:
    """What a family's section gets from the bench: the config, the catalog and the evaluation machinery."""
    from tqdm.auto import tqdm

    def progress(items: Any) -> Any:
        return tqdm(items, desc=f"finenvs bench {task.env_id}", unit="episode", disable=not config.progress or None)

    return BenchContext(task=task, config=config, catalog=catalog,
                        selection=Selection(split=config.split, seeds=(config.seed,),
                                            env_kwargs=family_env_kwargs(config, task)),
                        make_policy=make_policy, run_episode=run_episode, play=play_episode, progress=progress)


def run_sections(contexts: dict[str, BenchContext], errors: list[dict[str, str]]
                 ) -> tuple[list[EpisodeResult], dict[str, Any]]:
    """Every family's section: its baselines' episode rows and its JSON records (family -> record). A section that
    raised is an error of its env, never dropped."""
    rows: list[EpisodeResult] = []
    records: dict[str, Any] = {}
    for ctx in contexts.values():
        task = ctx.task
        if ctx.config.progress:
            print(f"finenvs bench: {task.bench.title} section ({task.env_id})", flush=True)
        try:
            part = task.bench.section.run(ctx)
        except Exception as exc:  # reported, never dropped
            errors.append({"env": task.env_id, "symbol": "-", "policy": "-", "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows += part.rows
        errors += part.errors
        if part.record is not None:
            records[task.family] = part.record
    return rows, records


def _run_windows(specs: list[TaskSpec], config: BenchConfig, agents: list[BenchAgent], folder: Path,
                 errors: list[dict[str, str]]) -> dict[str, Any]:
    """``--windows``: the market families' baselines and the agents over many windows (nothing without it)."""
    if not config.windows:
        return {}
    from finenvs.evaluation.windows import run_windows_suite

    windows = run_windows_suite([t.env_id for t in specs], config.windows, symbols=config.symbols,
                                universe=config.universe, after=config.after, seed=config.seed,
                                cache_dir=Path(config.out) / "windows-cache", progress=config.progress,
                                env_kwargs=config.env_kwargs,
                                agents=[a for a in agents if not a.closed_book_only and a.debate_of is None],
                                agent_root=folder / "windows-agents")
    errors += [{"env": e, "symbol": "-", "policy": "windows", "error": r["error"]}
               for e, r in windows.items() if "error" in r]
    return windows


def _aggregate(specs: list[TaskSpec], records: dict[str, Any], agent_runs: list[dict[str, Any]],
               config: BenchConfig, errors: list[dict[str, str]], selection: Any) -> dict[str, Any] | None:
    """FAB++'s section aggregate over the families with FAB++ sections (None without one)."""
    fabpp = [t for t in specs if t.bench.fabpp_sections]
    debates = run_debates(fabpp, agent_runs, config, errors)
    if not fabpp:
        return None
    return section_aggregate(fabpp, records, agent_runs, config.weights, errors, cost_floor=config.alpha_cost_floor,
                             task_ids=None if selection is None else
                             {f: selection.task_ids(f) for f in selection.families}, debates=debates)


def _card_config(config: BenchConfig, specs: list[TaskSpec], folder: Path, catalog: Any, skips: list[str],
                 selection: Any) -> dict[str, Any]:
    lo, hi = SPLITS[config.split]
    return {**config_record(config, specs), "run": folder.name, "split_dates": f"{lo}..{hi}",
            "finenvs_version": finenvs.__version__, "data_manifest": catalog.data_digest,
            "machine": f"{platform.machine()} Python {platform.python_version()}", "split_skipped": skips,
            "sharpe_conventions": {SHARPE_LABELS[k]: v for k, v in SHARPE_CONVENTIONS.items()},
            "eval_config_record": None if selection is None else {
                "name": selection.name, "source": selection.source, "digest": selection.digest,
                "tasks": len(selection.tasks), "skipped": selection.skipped, "notes": selection.notes},
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def run_bench(config: BenchConfig) -> Scorecard:
    """Run the suite and write the scorecard files (``scorecard.json``, ``scorecard.md``, ``scorecard.html`` and the
    PNG charts under ``<out>/<run>/``)."""
    from finenvs.data.catalog import default_catalog

    config, selection = _prepare(config)
    specs = select_tasks(config)
    catalog = default_catalog()
    agents = _check(config, catalog)
    _check_weights(config, specs)
    began = time.perf_counter()
    folder = run_dir(config)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench.json").write_text(json.dumps({"config": config_record(config, specs)}, indent=2,
                                                  default=json_default) + "\n")
    if selection is not None:
        (folder / "eval_config.json").write_text(json.dumps(selection.record(), indent=2, default=str) + "\n")
    skips = split_skips(specs, config, catalog)
    if skips and config.progress:
        print("finenvs bench: " + "; ".join(skips), flush=True)
    errors: list[dict[str, str]] = []
    contexts = {t.family: context(t, config, catalog) for t in specs}
    results, records = run_sections(contexts, errors)
    windows = _run_windows(specs, config, agents, folder, errors)
    agent_runs = run_agents(agents, specs, config, folder / "agents", errors, catalog)
    for run in agent_runs:  # the agents' episodes join their section's tables
        ctx = contexts[run["family"]]
        results += ctx.task.bench.section.agent_rows(ctx, run)
    card = Scorecard(
        config=_card_config(config, specs, folder, catalog, skips, selection), results=results, errors=errors,
        reproduction=reproduction_check(results, config.split), run_dir=folder, seconds=0.0, sections=records,
        agents=agent_runs, herculean=herculean_record(specs, agent_runs, config, catalog),
        aggregate=_aggregate(specs, records, agent_runs, config, errors, selection), windows=windows)
    if config.plots:
        card.files += write_plots(card)
    card.seconds = time.perf_counter() - began
    write_scorecard(card, html=config.html)
    return card


__all__ = ["context", "run_bench", "run_sections"]
