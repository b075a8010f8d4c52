"""The agents of a bench run (each family's scripted agent, and a model when given one) and the episodes they play."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from finenvs.evaluation.agent_runs import SCRIPTED, BenchAgent, run_agent
from finenvs.evaluation.bench.config import BenchConfig, family_env_kwargs, herculean_splits, instances_key
from finenvs.tasks import Selection, TaskSpec, tasks
from finenvs.tasks.market_section import playable_symbols, refused_symbols, split_symbols


def bench_agents(config: BenchConfig) -> list[BenchAgent]:
    """The agents of a bench run: each family's scripted agent (unless ``agents=False``) and the model, if any."""
    from finenvs.evaluation.agents import make_agent

    out = []
    if config.agents:
        out.append(BenchAgent(SCRIPTED, lambda task: task.make_scripted_agent()))
        out.append(BenchAgent(f"{SCRIPTED} (closed book)", lambda task: task.make_scripted_agent(),
                              env_kwargs={"tools": "none"}, closed_book_only=True))
        if config.debate:
            out.append(BenchAgent(f"{SCRIPTED} (debate)", lambda task: task.make_scripted_agent(),
                                  env_kwargs={"debate": True}, debate_of=SCRIPTED))
    if config.has_model:
        probe = make_agent(tasks()[0].env_id, base_url=config.base_url, model=config.model, a2a_url=config.a2a_url,
                           **config.endpoint)
        name = config.model or probe.name
        prices = model_prices(config, name)
        out.append(BenchAgent(name, lambda task: make_agent(task.env_id, base_url=config.base_url, model=config.model,
                                                            a2a_url=config.a2a_url, **config.endpoint), model=True,
                              prices=prices))
        if config.debate:
            out.append(BenchAgent(f"{name} (debate)", out[-1].make, model=True, env_kwargs={"debate": True},
                                  debate_of=name, prices=prices))
    elif config.price_in is not None or config.price_out is not None or config.prices is not None:
        raise ValueError("--price-in/--price-out/--prices price a model's tokens: give one with --base-url/--model "
                         "or --a2a-url (the baselines and the offline scripted agents cost $0)")
    return out


def model_prices(config: BenchConfig, name: str) -> Any:
    """The model's token prices (a :class:`~finenvs.evaluation.llm.PriceTable`): ``price_in``/``price_out``, or
    ``name``'s entry of the ``prices`` file; both unknown (None) without either, so its cost is unknown.

    Raises:
        ValueError: Only one of ``price_in``/``price_out``, a negative or non-finite price, both a table and
            prices, or a table without ``name`` (the message names the flag or the file).
    """
    import math

    from finenvs.evaluation.llm import PriceTable

    if config.prices is not None:
        if config.price_in is not None or config.price_out is not None:
            raise ValueError("give --prices FILE or --price-in/--price-out, not both")
        table = PriceTable.load(config.prices, name)
    elif (config.price_in is None) != (config.price_out is None):
        raise ValueError("--price-in and --price-out go together (dollars per million prompt and completion tokens)")
    else:
        table = PriceTable(config.price_in, config.price_out)
    for flag, value in (("--price-in", table.input_per_million), ("--price-out", table.output_per_million)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ValueError(f"{flag}: a price is a finite number of dollars >= 0 per million tokens, got {value!r}")
    return table


def split_skips(specs: list[TaskSpec], config: BenchConfig, catalog: Any) -> list[str]:
    """One line per market family whose split part leaves out symbols: asked-for ones with a long history only,
    and those its env refuses (a user symbol FinReport-v0 has no peer basket for), each with the env's reason."""
    out = []
    for task in specs:
        if not task.bench.market:
            continue
        asked = config.universe if task.bench.universe else config.symbols
        if asked:
            kept = split_symbols(task, list(asked), catalog)
            left = [s for s in asked if s not in kept]
            if left:
                what = "the universe" if task.bench.universe else ", ".join(left)
                out.append(f"{task.env_id}: {what} played in the windows part only ({', '.join(left)} "
                           f"{'has' if len(left) == 1 else 'have'} no rows in the split's dataset)")
        else:
            kept = catalog.symbols(gym.spec(task.env_id).kwargs.get("dataset", "core"))
        for symbol, reason in refused_symbols(task, list(kept), config).items():
            out.append(f"{task.env_id}: {symbol} not played (its env refuses it: {reason})")
    return out


def agent_selection(task: TaskSpec, split: str, config: BenchConfig, model: bool, catalog: Any = None,
                    env_kwargs: dict[str, Any] | None = None) -> Selection | None:
    """The episodes an agent plays. Market families: the bench's symbols (or universe); without ``--symbols`` the
    scripted agents play every symbol the baselines play and a model the family's plan (HERCULEAN's four stocks).
    Other families: their plan (a model's cut to ``agent_limit``). None when ``--windows`` left the split part no
    symbol to play (see :func:`~finenvs.tasks.market_section.split_symbols`) or an evaluation config selected
    none of the split's tasks."""
    symbols = None
    if task.bench.market:
        symbols = config.universe if task.bench.universe else config.symbols
        if symbols is not None and catalog is not None:
            symbols = playable_symbols(task, list(symbols), config, catalog)
            if not symbols:
                return None
        if symbols is None and not model and not task.bench.universe and catalog is not None:
            symbols = playable_symbols(task, catalog.symbols(gym.spec(task.env_id).kwargs.get("dataset", "core")),
                                       config, catalog)
    instances = (config.instances or {}).get(instances_key(task, split))
    if instances == ():  # an evaluation config selected none of this split's tasks
        return None
    return Selection(split=split, symbols=tuple(symbols) if symbols else None, seeds=(config.seed,),
                     instances=instances, limit=config.agent_limit if model else None,
                     env_kwargs={**family_env_kwargs(config, task), **(env_kwargs or {})})


def run_agents(agents: list[BenchAgent], specs: list[TaskSpec], config: BenchConfig, root: Path,
               errors: list[dict[str, str]], catalog: Any) -> list[dict[str, Any]]:
    """Every agent over every family's plan (and, for HERCULEAN's workflows, the live split too; for a family with
    ``bench.extra_splits``, those splits too)."""
    runs = []
    for agent in agents:
        for task in specs:
            if agent.closed_book_only and not task.bench.closed_book:
                continue
            if agent.debate_of is not None and task.debate is None:
                continue
            splits = herculean_splits(config) if task.bench.herculean and task.bench.live else (config.split,)
            if agent.debate_of is None:  # the family's further splits; a debated run plays the bench's split only
                splits += tuple(s for s in task.bench.extra_splits if s not in splits)
            for split in splits:
                if config.progress:
                    print(f"finenvs bench: agent {agent.name} on {task.env_id} ({split})", flush=True)
                try:
                    extra: dict[str, Any] = {"failure_rule": "herculean"} if agent.model and config.herculean_rule \
                        else {}
                    if agent.model:
                        extra["max_retries"] = config.retries
                    selection = agent_selection(task, split, config, agent.model, catalog, dict(agent.env_kwargs))
                    if selection is None:  # --windows symbols with long histories only, or a --config that
                        # selected none of this split's tasks: nothing to play
                        continue
                    if agent.prices is not None:
                        extra["prices"] = agent.prices
                    run = run_agent(agent, task, selection, root, concurrency=config.concurrency,
                                    progress=config.progress, **extra)
                    run["sections"] = list(task.bench.fabpp_sections)
                    runs.append(run)
                    if run.get("unfinished"):  # a failed evaluation is a failure: the bench exits non-zero
                        errors.append({"env": task.env_id, "symbol": split, "policy": agent.name,
                                       "error": f"the run did not finish ({run['status']}): {run['unfinished']}; "
                                                f"continue it with finenvs llm --resume {run['run_dir']}"})
                    elif run.get("endpoint_failure"):  # so is an episode the endpoint never answered
                        errors.append({"env": task.env_id, "symbol": split, "policy": agent.name,
                                       "error": f"failed, not scored: {run['endpoint_failure']}; run folder "
                                                f"{run['run_dir']}"})
                except Exception as exc:  # reported, never dropped
                    errors.append({"env": task.env_id, "symbol": split, "policy": agent.name,
                                   "error": f"{type(exc).__name__}: {exc}"})
    return runs


__all__ = ["agent_selection", "bench_agents", "model_prices", "run_agents", "split_skips"]
