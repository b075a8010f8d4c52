"""Evaluation configs: which FAB++ tasks a bench run scores, read from FAB++'s YAML shape.

``finenvs bench --config FILE.yaml`` (or ``.json``) takes the config of FAB++'s
Appendix C as printed there::

    name: "FAB++ Full Evaluation"
    datasets:
      - type: synthetic            # or analysis: FinQA-v0's Analytical Reasoning questions
        path: data/synthetic_questions/questions.json
        limit: 50
      - type: bizfinbench          # or knowledge: FinQA-v0's Knowledge Retrieval questions
        path: data/BizFinBench.v2
        task_types: [event_logic_reasoning, financial_quantitative_computation]
        languages: [en]
        limit_per_task: 20
      - type: public_csv           # the Finance Agent Benchmark's public questions (FinQA-v0 split fab_public)
        path: finance-agent/data/public.csv
        limit: 100
    sampling:
      strategy: stratified         # stratified | random | sequential
      total_limit: 100
      seed: 42

and the other dataset types of FAB++'s code: ``options`` (FinOptions-v0: generated
tasks and the FAB++ bank; ``task_types`` an options task's kind, or ``bank``) and
those finenvs has no task for (``crypto``, ``gdpval``, ``prbench``: recorded as
skipped, with the reason).

Each dataset draws from its pool — the family's bench plan on the run's split
(FinQA-v0's 150 eval questions; FinOptions-v0's generated tasks, then the bank),
or for ``public_csv`` the family's further split that holds the Finance Agent
Benchmark's 50 public questions (``fab_public``) — filtered by ``task_types`` (a
question's topic; an options task's kind, or ``bank``):

* ``sequential`` takes the first ``limit`` in plan order;
* ``random`` draws ``limit`` with ``numpy.random.default_rng(seed)``;
* ``stratified`` takes the task types in turn (sorted by name), each type's
  tasks in a seeded random order, until ``limit``.

``limit_per_task`` keeps at most that many tasks of each task type (before
``limit``). ``total_limit`` then keeps the datasets' picks in turn (the first of
each, the second of each, ...) up to the total. ``limit`` defaults to the whole
pool. The selection is a pure function of the config, the split and the seed: the
same config gives the same questions. The config, its digest (SHA-256 of its
canonical JSON) and the selected tasks are recorded in the run folder
(``eval_config.json``) and the scorecard; the scripted agents and the model play
exactly those tasks and the section aggregate counts only them (the family tables
still show every baseline over the family's whole plan).

**BizFinBench stand-ins.** finenvs ships no BizFinBench questions. Each
BizFinBench task type Appendix C names is played by the shipped generator that
asks the same skill (:data:`BIZFINBENCH_STAND_INS`), and the run says so in its
output and scorecard ("BizFinBench event_logic_reasoning -> finenvs filing_order,
stand-in"). finenvs' own topic names are accepted too. Any other task type is a
:class:`ConfigError` naming the file and the key. ``path`` names FAB++'s data
file: finenvs does not read it (noted). ``languages``: finenvs' questions are
English; a dataset whose ``languages`` leave out ``en`` is skipped, other
languages are noted.

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
    "public_csv": "knowledge",
    "synthetic": "analysis",
    "analysis": "analysis",
    "options": "options",
}
#: Dataset types that draw from a further split of the family's plan (its bench's ``extra_splits``), not the run's:
#: FAB++'s ``public_csv`` (the Finance Agent Benchmark's public questions, in Knowledge Retrieval as FAB++ counts
#: them) is FinQA-v0's ``fab_public`` split.
DATASET_SPLITS: dict[str, str] = {"public_csv": "fab_public"}
#: BizFinBench task types (the ones FAB++'s Appendix C names) -> the shipped FinQA-v0 topic that stands in for
#: each: BizFinBench's event logic reasoning orders events in time (filing_order: which filing came first), its
#: financial quantitative computation computes a figure from a company's financial data (xbrl_metric: a margin,
#: growth rate, EPS or EBITDA from the filing's XBRL facts). Stand-ins, not BizFinBench's questions.
BIZFINBENCH_STAND_INS: dict[str, str] = {
    "event_logic_reasoning": "filing_order",
    "financial_quantitative_computation": "xbrl_metric",
}
#: FAB++ dataset types finenvs has no task for, and why (recorded as skipped, never silently dropped).
UNAVAILABLE = {
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
    """One task a dataset can draw: its family, index in the family's bench plan, id, type and FAB++ section, and
    the plan's split (None: the run's; else a further split of the family, ``bench.extra_splits``)."""

    family: str
    index: int
    task_id: str
    task_type: str
    section: str
    split: str | None = None


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
        notes: What finenvs played instead of what the config names ("BizFinBench <type> -> finenvs <topic>,
            stand-in"), and the keys it does not read.
    """

    name: str
    source: str
    digest: str
    config: dict[str, Any]
    tasks: list[PoolTask] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def instances(self, family: str, split: str | None = None) -> tuple[int, ...]:
        """Plan indices of ``family``'s selected tasks on the run's split (or on the further ``split``), in plan
        order."""
        return tuple(sorted({t.index for t in self.tasks if t.family == family and t.split == split}))

    def task_ids(self, family: str) -> set[str]:
        return {t.task_id for t in self.tasks if t.family == family}

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(t.family for t in self.tasks))

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "digest": self.digest, "config": self.config,
                "tasks": [t.__dict__ for t in self.tasks], "skipped": self.skipped, "notes": self.notes}


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
    notes: list[str] = []
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
        if isinstance(ds.get("path"), str):
            notes.append(f"{where} ({kind}) path {ds['path'][:200]!r} not read: finenvs draws the dataset from its "
                         "shipped questions")
        if not _languages(source, where, kind, ds.get("languages"), skipped, notes):
            continue
        section, split = DATASETS[kind], DATASET_SPLITS.get(kind)
        pool = [t for t in pool_of(section) if t.section == section and t.split == split]
        types = _task_types(source, where, kind, ds.get("task_types"), pool, notes)
        if types is not None:
            pool = [t for t in pool if t.task_type in types]
        limit = _int(source, f"{where}.limit", ds.get("limit"), len(pool))
        per_type = _int(source, f"{where}.limit_per_task", ds.get("limit_per_task"), None)
        picks.append(_draw(pool, strategy, np.random.default_rng([seed, k]), limit, per_type))
    tasks: list[PoolTask] = []
    seen: set[tuple[str, str | None, int]] = set()
    depth = max((len(p) for p in picks), default=0)
    for i in range(depth):  # the datasets' picks in turn, up to the total
        for p in picks:
            key = (p[i].family, p[i].split, p[i].index) if i < len(p) else None
            if key is not None and key not in seen and (total is None or len(tasks) < total):
                seen.add(key)
                tasks.append(p[i])
    if not tasks:
        raise ConfigError(f"{source}: the config selects no task finenvs can run "
                          f"(skipped: {[s['type'] for s in skipped]})")
    name = str(config.get("name") or Path(source).stem)[:200]
    return EvalSelection(name, source, canonical_digest(config), config, tasks, skipped, notes)


def _languages(source: str, where: str, kind: str, languages: Any, skipped: list[dict[str, str]],
               notes: list[str]) -> bool:
    """Whether the dataset is played: finenvs' questions are English (``languages`` without ``en``: skipped)."""
    if languages is None:
        return True
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise ConfigError(f"{source}: {where}.languages must be a list of language codes (finenvs has en)")
    codes = [x.strip().lower() for x in languages]
    others = [x for x in codes if x != "en"]
    if "en" not in codes:
        skipped.append({"type": kind, "reason": f"{where}.languages {languages[:10]} leave out en: finenvs' "
                        "questions are in English only"})
        return False
    if others:
        notes.append(f"{where} ({kind}) languages {others[:10]}: finenvs' questions are in English only")
    return True


def _task_types(source: str, where: str, kind: str, types: Any, pool: list[PoolTask], notes: list[str]
                ) -> list[str] | None:
    """The finenvs task types ``types`` names (None: every type); a BizFinBench type becomes its stand-in topic
    (:data:`BIZFINBENCH_STAND_INS`, noted)."""
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ConfigError(f"{source}: {where}.task_types must be a list of names")
    known = sorted({t.task_type for t in pool})
    stand_ins = BIZFINBENCH_STAND_INS if kind == "bizfinbench" else {}
    out, unknown = [], []
    for name in types:
        if name in stand_ins and stand_ins[name] in known:
            out.append(stand_ins[name])
            notes.append(f"BizFinBench {name} -> finenvs {stand_ins[name]}, stand-in")
        elif name in known:
            out.append(name)
        else:
            unknown.append(name)
    if unknown:
        also = (f"; BizFinBench types with a finenvs stand-in: {sorted(stand_ins)} (no shipped generator stands in "
                "for the others)") if stand_ins else ""
        raise ConfigError(f"{source}: {where}.task_types {unknown[:20]} are not task types of {kind!r}; "
                          f"known: {known}{also}")
    return out


def _draw(pool: list[PoolTask], strategy: str, rng: np.random.Generator, limit: int, per_type: int | None
          ) -> list[PoolTask]:
    """``limit`` tasks of ``pool`` under ``strategy``, at most ``per_type`` of each task type."""

    def capped(order: list[PoolTask]) -> list[PoolTask]:
        if per_type is None:
            return order
        count: dict[str, int] = {}
        out = []
        for t in order:
            count[t.task_type] = count.get(t.task_type, 0) + 1
            if count[t.task_type] <= per_type:
                out.append(t)
        return out

    if strategy == "sequential":
        return capped(pool)[:limit]
    if strategy == "random":
        order = capped([pool[i] for i in rng.permutation(len(pool))])[:limit]
        rank = {id(t): i for i, t in enumerate(pool)}
        return sorted(order, key=lambda t: rank[id(t)])
    by_type: dict[str, list[PoolTask]] = {}
    for t in pool:
        by_type.setdefault(t.task_type, []).append(t)
    queues = {name: capped([items[i] for i in rng.permutation(len(items))])
              for name, items in sorted(by_type.items())}
    chosen: list[PoolTask] = []
    available = sum(len(q) for q in queues.values())
    while len(chosen) < min(limit, available):
        for name in list(queues):
            if queues[name] and len(chosen) < limit:
                chosen.append(queues[name].pop(0))
    return chosen


def bench_pools(split: str, seed: int) -> Callable[[str], list[PoolTask]]:
    """The pool of each FAB++ section on ``split``: the bench plan of the family whose task spec answers it
    (``bench.fabpp_sections``), then its plan on each further split its bench plays (``bench.extra_splits``), each
    task typed by its reset info's ``topic`` or ``kind`` — indices into that split's plan."""
    import gymnasium as gym

    from finenvs.tasks import Selection, tasks

    def pools(section: str) -> list[PoolTask]:
        owners = [t for t in tasks() if section in t.bench.fabpp_sections]
        if not owners:
            raise ConfigError(f"no task family answers the FAB++ section {section!r}")
        task = owners[0]
        out = []
        envs: dict[tuple[Any, ...], Any] = {}
        for extra in (None, *task.bench.extra_splits):
            plan = task.plan(Selection(split=extra or split, seeds=(seed,)))
            for i, ep in enumerate(plan):
                key = tuple(sorted(ep.env_kwargs.items()))
                if key not in envs:
                    envs[key] = gym.make(ep.env_id, **ep.env_kwargs)
                _, info = envs[key].reset(seed=ep.seed, options=ep.options)
                own = task.bench.fabpp_sections[0] if len(task.bench.fabpp_sections) == 1 else info.get("section")
                out.append(PoolTask(task.family, i, str(info.get("task_id") or info.get("id") or i),
                                    str(info.get("topic") or info.get("kind") or "task"), str(own), extra))
        for env in envs.values():
            env.close()
        return out

    return pools


__all__ = ["BIZFINBENCH_STAND_INS", "DATASETS", "DATASET_SPLITS", "STRATEGIES", "UNAVAILABLE", "ConfigError", "EvalSelection", "PoolTask", "bench_pools",
           "read_config", "select"]
