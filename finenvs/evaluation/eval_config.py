"""Evaluation configs: which FAB++ tasks a bench run scores, read from FAB++'s YAML shape.

``finenvs bench --config FILE.yaml`` (or ``.json``) takes the config of FAB++'s
Appendix C::

    name: "FAB++ sample"
    datasets:
      - type: bizfinbench          # or knowledge: FinQA-v0's Knowledge Retrieval questions
        task_types: [close_price, xbrl_metric]
        limit: 4
      - type: synthetic            # or analysis: FinQA-v0's Analytical Reasoning questions
        limit: 4
      - type: options              # FinOptions-v0: generated tasks and the FAB++ bank
        task_types: [strategy, bank]
        limit: 4
      - type: crypto               # FAB++ datasets finenvs has no task for: recorded as skipped
    sampling:
      strategy: stratified         # stratified | random | sequential
      total_limit: 10
      seed: 42

Each dataset draws from its pool — the family's bench plan on the run's split
(FinQA-v0's 150 eval questions; FinOptions-v0's generated tasks, then the bank)
— filtered by ``task_types`` (a question's topic; an options task's kind, or
``bank``):

* ``sequential`` takes the first ``limit`` in plan order;
* ``random`` draws ``limit`` with ``numpy.random.default_rng(seed)``;
* ``stratified`` takes the task types in turn (sorted by name), each type's
  tasks in a seeded random order, until ``limit``.

``total_limit`` then keeps the datasets' picks in turn (the first of each, the
second of each, ...) up to the total. ``limit`` defaults to the whole pool. The
selection is a pure function of the config, the split and the seed: the same
config gives the same questions. The config, its digest (SHA-256 of its
canonical JSON) and the selected tasks are recorded in the run folder
(``eval_config.json``) and the scorecard; the scripted agents and the model play
exactly those tasks and the section aggregate counts only them (the family tables
still show every baseline over the family's whole plan).

A malformed config is a :class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

#: FAB++ dataset types -> the FAB++ section that answers them (the family is the task spec whose bench lists
#: that section in ``fabpp_sections``).
DATASETS: dict[str, str] = {
    "bizfinbench": "knowledge",
    "knowledge": "knowledge",
    "synthetic": "analysis",
    "analysis": "analysis",
    "options": "options",
}
#: FAB++ dataset types finenvs has no task for, and why (recorded as skipped, never silently dropped).
UNAVAILABLE = {
    "public_csv": "the Finance Agent Benchmark's public questions are FinQA-v0's split fab_public (run them with "
                  "finenvs llm --env FinQA-v0 --split fab_public); a bench run's FAB++ sections use one split",
    "prbench": "PRBench is judged by an LLM rubric; finenvs ships no PRBench questions",
    "crypto": "finenvs has no crypto trading task (its adversarial transforms are not shipped)",
    "gdpval": "GDPVal's professional tasks are judged by an LLM and are not shipped",
}
STRATEGIES = ("stratified", "random", "sequential")
MAX_LIMIT = 100_000


class ConfigError(ValueError):
    """A malformed evaluation config (the message names the file and the key)."""


@dataclass(frozen=True)
class PoolTask:
    """One task a dataset can draw: its family, index in the family's bench plan, id, type and FAB++ section."""

    family: str
    index: int
    task_id: str
    task_type: str
    section: str


@dataclass
class EvalSelection:
    """The tasks a config selects.

    Attributes:
        name: The config's name.
        source: The file it was read from.
        digest: SHA-256 of the config's canonical JSON.
        config: The config as read.
        tasks: The selected tasks, datasets in turn.
        skipped: Datasets finenvs has no task for, with the reason.
    """

    name: str
    source: str
    digest: str
    config: dict[str, Any]
    tasks: list[PoolTask] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def instances(self, family: str) -> tuple[int, ...]:
        """Plan indices of ``family``'s selected tasks, in plan order."""
        return tuple(sorted({t.index for t in self.tasks if t.family == family}))

    def task_ids(self, family: str) -> set[str]:
        return {t.task_id for t in self.tasks if t.family == family}

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(t.family for t in self.tasks))

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "digest": self.digest, "config": self.config,
                "tasks": [t.__dict__ for t in self.tasks], "skipped": self.skipped}


def read_config(path: Path | str) -> dict[str, Any]:
    """The config file as a dict (YAML, or JSON by its extension)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc.strerror or exc})") from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # a YAML or JSON syntax error, named with the file
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: "
                          f"{str(exc).splitlines()[0][:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with 'datasets' (got {type(data).__name__})")
    return data


_Default = TypeVar("_Default", int, None)


def _int(path: Path | str, key: str, value: Any, default: _Default) -> int | _Default:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_LIMIT:
        raise ConfigError(f"{path}: {key} must be an integer from 1 to {MAX_LIMIT:,} (got {value!r})")
    return value


def canonical_digest(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def select(config: dict[str, Any], pools: dict[str, list[PoolTask]] | Callable[[str], list[PoolTask]], *,
           source: str = "<config>") -> EvalSelection:
    """The tasks ``config`` selects from ``pools`` (FAB++ section -> the tasks of the family answering it, or a
    function giving them).

    Raises:
        ConfigError: An unknown dataset type, strategy or task type, a bad limit or seed, or no dataset.
    """
    datasets = config.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise ConfigError(f"{source}: 'datasets' must be a non-empty list of {{type, limit, task_types}}")
    sampling = config.get("sampling") or {}
    if not isinstance(sampling, dict):
        raise ConfigError(f"{source}: 'sampling' must be a mapping (strategy, total_limit, seed)")
    strategy = sampling.get("strategy", "stratified")
    if strategy not in STRATEGIES:
        raise ConfigError(f"{source}: sampling.strategy {strategy!r} is not one of {list(STRATEGIES)}")
    seed = sampling.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"{source}: sampling.seed must be an integer >= 0 (got {seed!r})")
    total = _int(source, "sampling.total_limit", sampling.get("total_limit"), None)
    cache: dict[str, list[PoolTask]] = {}

    def pool_of(section: str) -> list[PoolTask]:
        if section not in cache:
            cache[section] = list(pools[section] if isinstance(pools, dict) else pools(section))
        return cache[section]

    picks: list[list[PoolTask]] = []
    skipped: list[dict[str, str]] = []
    for k, ds in enumerate(datasets):
        where = f"datasets[{k}]"
        if not isinstance(ds, dict) or not isinstance(ds.get("type"), str):
            raise ConfigError(f"{source}: {where} must be a mapping with a string 'type'")
        kind = ds["type"].strip().lower()
        if kind in UNAVAILABLE:
            skipped.append({"type": kind, "reason": UNAVAILABLE[kind]})
            continue
        if kind not in DATASETS:
            raise ConfigError(f"{source}: {where}.type {ds['type']!r} is not a dataset finenvs knows; known: "
                              f"{sorted(DATASETS)}; recorded as skipped: {sorted(UNAVAILABLE)}")
        section = DATASETS[kind]
        pool = [t for t in pool_of(section) if t.section == section]
        types = ds.get("task_types")
        if types is not None:
            if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
                raise ConfigError(f"{source}: {where}.task_types must be a list of names")
            known = sorted({t.task_type for t in pool})
            unknown = [t for t in types if t not in known]
            if unknown:
                raise ConfigError(f"{source}: {where}.task_types {unknown} are not task types of {kind!r}; "
                                  f"known: {known}")
            pool = [t for t in pool if t.task_type in types]
        limit = _int(source, f"{where}.limit", ds.get("limit"), len(pool))
        rng = np.random.default_rng([seed, k])
        if strategy == "sequential":
            chosen = pool[:limit]
        elif strategy == "random":
            order = rng.permutation(len(pool))[:limit]
            chosen = [pool[i] for i in sorted(order)]
        else:
            by_type: dict[str, list[PoolTask]] = {}
            for t in pool:
                by_type.setdefault(t.task_type, []).append(t)
            queues = {name: [items[i] for i in rng.permutation(len(items))] for name, items in sorted(by_type.items())}
            chosen = []
            while len(chosen) < min(limit, len(pool)):
                for name in list(queues):
                    if queues[name] and len(chosen) < limit:
                        chosen.append(queues[name].pop(0))
        picks.append(chosen)
    tasks: list[PoolTask] = []
    seen: set[tuple[str, int]] = set()
    depth = max((len(p) for p in picks), default=0)
    for i in range(depth):  # the datasets' picks in turn, up to the total
        for p in picks:
            if i < len(p) and (p[i].family, p[i].index) not in seen and (total is None or len(tasks) < total):
                seen.add((p[i].family, p[i].index))
                tasks.append(p[i])
    if not tasks:
        raise ConfigError(f"{source}: the config selects no task finenvs can run "
                          f"(skipped: {[s['type'] for s in skipped]})")
    name = str(config.get("name") or Path(source).stem)[:200]
    return EvalSelection(name, source, canonical_digest(config), config, tasks, skipped)


def bench_pools(split: str, seed: int) -> Callable[[str], list[PoolTask]]:
    """The pool of each FAB++ section on ``split``: the bench plan of the family whose task spec answers it
    (``bench.fabpp_sections``), each task typed by its reset info's ``topic`` or ``kind`` — indices into that
    plan."""
    import gymnasium as gym

    from finenvs.tasks import Selection, tasks

    def pools(section: str) -> list[PoolTask]:
        owners = [t for t in tasks() if section in t.bench.fabpp_sections]
        if not owners:
            raise ConfigError(f"no task family answers the FAB++ section {section!r}")
        task = owners[0]
        plan = task.plan(Selection(split=split, seeds=(seed,)))
        out = []
        envs: dict[tuple[Any, ...], Any] = {}
        for i, ep in enumerate(plan):
            key = tuple(sorted(ep.env_kwargs.items()))
            if key not in envs:
                envs[key] = gym.make(ep.env_id, **ep.env_kwargs)
            _, info = envs[key].reset(seed=ep.seed, options=ep.options)
            own = task.bench.fabpp_sections[0] if len(task.bench.fabpp_sections) == 1 else info.get("section")
            out.append(PoolTask(task.family, i, str(info.get("task_id") or info.get("id") or i),
                                str(info.get("topic") or info.get("kind") or "task"), str(own)))
        for env in envs.values():
            env.close()
        return out

    return pools


__all__ = ["DATASETS", "STRATEGIES", "UNAVAILABLE", "ConfigError", "EvalSelection", "PoolTask", "bench_pools",
           "read_config", "select"]
