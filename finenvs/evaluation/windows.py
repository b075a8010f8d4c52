"""Many windows, with uncertainty: the market families over every quarter of a long history.

A benchmark that reports one run on one quarter ranks policies by noise until
shown otherwise. :func:`run_windows` plays every (symbol, window, policy) of a
market family (a task spec with ``bench.market``) as one full episode with
the env's ``start``/``end`` set to the window, on a long-history dataset of the
shipped catalog, and records each episode's CR / SR / MDD (standard convention:
``SR (all days)``). :func:`summarize_windows` turns the episodes into, per policy
(overall and per symbol), the distribution of each metric and a bootstrap
interval of its mean, and the paired difference of every policy to the family's
reference baseline (its ``bench.herculean_baseline``, Buy&Hold) with its win rate.

Windows are written ``quarterly:2016-01-01:2025-12-31`` (:func:`parse_windows`;
also ``monthly`` and ``yearly``): the calendar periods lying wholly inside the
range and inside the data (:func:`calendar_windows`), each cut to its first and
last trading day. As in every finenvs market env, an episode starts flat at the
close of its window's first trading day, so consecutive windows do not share a day.

Each finished episode is a small JSON file under ``cache_dir`` keyed by env,
symbol, window, policy, seed, the env arguments and the data (the catalog's
manifest digest, or the content of ``data=``); a second call reuses it (resume).

:func:`windows_markdown` and :func:`windows_plot` render a result for the
scorecard; :func:`run_windows_suite` runs several market families, for
``finenvs bench --windows``.
"""

from __future__ import annotations

import calendar as _calendar
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.baselines.registry import applicable_policies, make_policy, policies_of
from finenvs.data.asof import to_day
from finenvs.errors import DataError, WindowError
from finenvs.evaluation.episodes import run_episode
from finenvs.scoring.bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    bootstrap_ci,
    distribution,
    paired_difference,
)
from finenvs.scoring.presets import SHARPE_LABELS
from finenvs.tasks import TaskSpec, task_of
from finenvs.text.markdown import fmt_number, md_table, md_text

#: Months per period of each ``--windows`` frequency.
FREQUENCIES = {"monthly": 1, "quarterly": 3, "yearly": 12}
#: A period counts as inside the data when the data's first and last trading days lie within this many calendar
#: days of the period's ends (weekends and holidays at a period's edge are not missing data).
EDGE_SLACK_DAYS = 7
#: The label of a pairs family's episode (its whole universe is one episode).
UNIVERSE = "universe"
#: (metric key, column label, scale) of the per-window metrics summarised (standard preset).
METRICS = (("cumulative_return", "CR %", 100.0), ("sharpe", SHARPE_LABELS["standard"], 1.0),
           ("max_drawdown", "MDD %", 100.0))
#: Bumped when a cached record's layout changes (old files are then ignored, never misread).
CACHE_VERSION = 1
_SYNTAX = "FREQ:START:END with FREQ one of {freqs}, e.g. quarterly:2016-01-01:2025-12-31"

Window = tuple[str, str]


@dataclass(frozen=True)
class WindowSpec:
    """``FREQ:START:END``: every calendar period of ``FREQ`` lying wholly in ``START..END`` (and in the data)."""

    frequency: str
    start: str
    end: str

    def __str__(self) -> str:
        return f"{self.frequency}:{self.start}:{self.end}"

    def windows(self, calendar: Any) -> list[Window]:
        """The spec's windows on a trading calendar (see :func:`calendar_windows`)."""
        return calendar_windows(self.start, self.end, calendar, months=FREQUENCIES[self.frequency])


def parse_windows(text: str) -> WindowSpec:
    """Parse ``--windows FREQ:START:END`` (``quarterly:2016-01-01:2025-12-31``).

    Raises:
        ValueError: Not three ``:``-separated parts, an unknown frequency, a date that is not
            ``YYYY-MM-DD``, or a start after the end (each message shows the syntax).
    """
    syntax = _SYNTAX.format(freqs="/".join(FREQUENCIES))
    if not isinstance(text, str):
        raise ValueError(f"windows={text!r} is not a string; use {syntax}")
    parts = [p.strip() for p in text.strip().split(":")]
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"windows {text!r}: expected {syntax}")
    freq, start, end = parts
    if freq.lower() not in FREQUENCIES:
        raise ValueError(f"windows {text!r}: unknown frequency {freq!r}; expected {syntax}")
    days = []
    for name, value in (("start", start), ("end", end)):
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(f"windows {text!r}: {name} {value!r} is not a date YYYY-MM-DD; expected {syntax}")
        try:
            days.append(to_day(value, name=name))
        except WindowError as exc:
            raise ValueError(f"windows {text!r}: {exc}; expected {syntax}") from None
    if days[0] > days[1]:
        raise ValueError(f"windows {text!r}: start {start} is after end {end}")
    return WindowSpec(freq.lower(), str(days[0]), str(days[1]))


def _trading_days(calendar: Any) -> np.ndarray:
    days = np.unique(np.asarray(calendar).astype("datetime64[D]"))
    return days[~np.isnat(days)]


def calendar_windows(start: Any, end: Any, calendar: Any, *, months: int = 3) -> list[Window]:
    """The calendar periods of ``months`` months (aligned to January) inside ``start..end`` and the data.

    A period is kept when it lies wholly in ``start..end`` and the calendar's first and last trading days lie
    within :data:`EDGE_SLACK_DAYS` of its ends (so a period the data only partly covers is left out), and it
    has at least 2 trading days. Each window is ``(first trading day, last trading day)`` of its period, as
    ``YYYY-MM-DD`` strings.

    Args:
        start, end: Range of the periods (dates).
        calendar: The trading days (dates in any form ``numpy.datetime64`` reads).
        months: Months per period: 1 monthly, 3 quarterly, 12 yearly (must divide 12).
    """
    if months not in (1, 2, 3, 4, 6, 12):
        raise ValueError(f"months={months!r} must divide 12")
    lo, hi = to_day(start, name="start"), to_day(end, name="end")
    days = _trading_days(calendar)
    if days.size == 0 or lo > hi:
        return []
    slack = np.timedelta64(EDGE_SLACK_DAYS, "D")
    y, m = int(str(lo)[:4]), int(str(lo)[5:7])
    m = (m - 1) // months * months + 1
    out: list[Window] = []
    while True:
        first = np.datetime64(f"{y:04d}-{m:02d}-01", "D")
        m_end = m + months - 1
        last = np.datetime64(f"{y:04d}-{m_end:02d}-{_calendar.monthrange(y, m_end)[1]:02d}", "D")
        if first > hi:
            break
        if first >= lo and last <= hi and days[0] <= first + slack and days[-1] >= last - slack:
            inside = days[(days >= first) & (days <= last)]
            if inside.size >= 2:
                out.append((str(inside[0]), str(inside[-1])))
        m += months
        if m > 12:
            y, m = y + 1, m - 12
    return out


def quarterly_windows(start: Any, end: Any, calendar: Any) -> list[Window]:
    """Calendar quarters inside ``start..end`` and the data (:func:`calendar_windows` with 3 months)."""
    return calendar_windows(start, end, calendar, months=3)


def _window_of(item: Any) -> Window:
    try:
        start, end = item
    except (TypeError, ValueError):
        raise ValueError(f"window {item!r} is not a (start, end) pair") from None
    lo, hi = to_day(start, name="window start"), to_day(end, name="window end")
    if lo > hi:
        raise ValueError(f"window {item!r}: start after end")
    return str(lo), str(hi)


# ---------------------------------------------------------------------------- data: which dataset, which calendar
def long_dataset(catalog: Any, lo: Any, hi: Any, symbols: Sequence[str] | None = None) -> str:
    """The catalog price dataset that best covers ``lo..hi``: among those holding every symbol given, the one
    whose dates overlap the range most, then the one with most symbols.

    Raises:
        KeyError: No dataset holds every symbol given (lists each dataset's symbols).
    """
    lo_d, hi_d = to_day(lo), to_day(hi)
    best: tuple[Any, ...] | None = None
    for name, entry in catalog.manifest.datasets("prices").items():
        if symbols and not set(symbols) <= set(entry.symbols):
            continue
        first, last = max(lo_d, to_day(entry.date_min)), min(hi_d, to_day(entry.date_max))
        overlap = max(0, int((last - first).astype(int)) + 1)
        key = (overlap, len(entry.symbols), name)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        held = {n: list(e.symbols) for n, e in catalog.manifest.datasets("prices").items()}
        raise KeyError(f"no price dataset holds all of {list(symbols or [])}; datasets: {held}")
    return str(best[2])


@dataclass(frozen=True)
class _Source:
    """Where the episodes' bars come from: a catalog dataset or the user's ``data=``."""

    dataset: str | None
    digest: str
    series: Mapping[str, Any] | None  # the user's series (data=); None: the catalog's

    def calendar(self, catalog: Any, symbols: Sequence[str]) -> np.ndarray:
        """Trading days every one of ``symbols`` has."""
        days = None
        for sym in symbols:
            dates = (self.series[sym] if self.series is not None else catalog.series(sym, self.dataset)).dates
            days = dates if days is None else np.intersect1d(days, dates)
        return np.asarray(days, dtype="datetime64[D]")


def _data_digest(data: Any) -> str:
    """sha256 of a user's ``data=``: a DataFrame's content, or a file's bytes."""
    import pandas as pd

    h = hashlib.sha256()
    if isinstance(data, pd.DataFrame):
        h.update(pd.util.hash_pandas_object(data, index=True).to_numpy().tobytes())
        h.update(json.dumps([str(c) for c in data.columns]).encode())
    else:
        h.update(Path(data).read_bytes())
    return h.hexdigest()


def _source(catalog: Any, env_id: str, env_kwargs: Mapping[str, Any], dataset: str | None, span: tuple[Any, Any],
            symbols: Sequence[str] | None) -> _Source:
    if env_kwargs.get("data") is not None:
        from finenvs.data.catalog import load_prices

        return _Source(None, _data_digest(env_kwargs["data"]), load_prices(env_kwargs["data"]))
    if "dataset" not in gym.spec(env_id).kwargs:
        return _Source(None, catalog.data_digest, None)
    name = dataset or long_dataset(catalog, span[0], span[1], symbols)
    held = catalog.symbols(name)  # unknown dataset -> DataError naming the valid ones
    missing = [s for s in symbols or () if s not in held]
    if missing:
        raise KeyError(f"dataset {name!r} does not hold {missing}; its symbols: {held}")
    return _Source(name, catalog.data_digest, None)


# ---------------------------------------------------------------------------- one episode, and its cache file
def _canonical(value: Any) -> Any:
    """A JSON-able stand-in of an env argument for the cache key (a DataFrame or file by its content)."""
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return {"dataframe_sha256": _data_digest(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def cache_key(env_id: str, label: str, window: Window, policy: str, seed: int, data_digest: str,
              env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What a cached episode is keyed by (its sha256 names the file)."""
    return {"version": CACHE_VERSION, "env": env_id, "symbol": label, "window": list(window), "policy": policy,
            "seed": seed, "data": data_digest, "env_kwargs": _canonical(dict(env_kwargs))}


def _cache_path(cache_dir: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    safe = re.sub(r"[^A-Za-z0-9._^=-]", "_", key["symbol"])[:40]
    start, end = key["window"]
    return Path(cache_dir) / key["env"] / safe / f"{start}_{end}_{key['policy']}_s{key['seed']}_{digest[:16]}.json"


def _read_cached(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("key") == key else None


def _write_cached(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, allow_nan=True) + "\n")
    os.replace(tmp, path)


def _floats(metrics: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def play_window(env_id: str, env_kwargs: Mapping[str, Any], policy: str, seed: int) -> dict[str, Any]:
    """One full episode of ``policy`` in ``gym.make(env_id, **env_kwargs)``: its metrics as a JSON-able record."""
    env = gym.make(env_id, **env_kwargs)
    try:
        result = run_episode(env, make_policy(policy, env_id, env, seed=seed), env_id=env_id, policy_name=policy,
                             seed=seed)
    finally:
        env.close()
    return {"first": result.window_start, "last": result.window_end, "steps": result.steps,
            "final_equity": result.final_equity, "fees": result.fees,
            "look_ahead_attempts": result.look_ahead_attempts, "time_in_market": result.time_in_market,
            "round_trips": result.round_trips, "oracle": result.oracle,
            "standard": _floats(result.standard), "herculean": _floats(result.herculean), **result.extra.row()}


# ---------------------------------------------------------------------------- the run
def _market_task(env_id: str) -> TaskSpec:
    task = task_of(env_id)
    if not task.bench.market:
        raise ValueError(f"{env_id} is not a market family (its task spec has no bench.market); "
                         "windows apply to envs that play a symbol over a date window")
    return task


def run_windows(
    env_id: str,
    symbols: Sequence[str] | None,
    windows: str | WindowSpec | Iterable[Window],
    policies: Sequence[str] | None = None,
    *,
    seed: int = 0,
    after: Any = None,
    cache_dir: Path | str | None = None,
    progress: bool = True,
    dataset: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    reference: str | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    agents: Sequence[Any] = (),
    agent_root: Path | str | None = None,
) -> dict[str, Any]:
    """Play every (symbol, window, policy) of a market family as one full episode, and summarise.

    Args:
        env_id: A market family's env id (its task spec has ``bench.market``), e.g. ``"FinTrading-v0"``.
        symbols: Symbols, one episode each per window (a pairs family's: the universe of its one episode).
            None: every symbol of the dataset (or of ``data=``).
        windows: ``"quarterly:2016-01-01:2025-12-31"``, a :class:`WindowSpec` (cut on each symbol's calendar)
            or explicit ``(start, end)`` pairs.
        policies: Baseline names (default: every baseline of the family).
        seed: Seed of resets and stochastic policies (and of the bootstrap).
        after: Keep only the windows starting after this date (a model's knowledge cutoff).
        cache_dir: Folder of the per-episode JSON files (None: no cache).
        progress: Show a tqdm progress bar.
        dataset: Catalog price dataset (default: :func:`long_dataset` over the windows' range).
        env_kwargs: Further env arguments (``fee_bps``, ``data=`` a user's bars, ...).
        reference: The baseline every policy is paired with (default: the spec's ``bench.herculean_baseline``).
        n_boot, level: Bootstrap replicates and interval coverage.
        agents: Bench agents (:class:`~finenvs.evaluation.agent_runs.BenchAgent`: the scripted agents, a model)
            that play the same (symbol, window) episodes through the text interface and its date-locked tools,
            summarised beside the baselines under their names (paired with the reference on the same windows).
        agent_root: Where the agents' run folders go, one per window (``<window>/<agent>/<family>-None``; each
            is a ``finenvs llm`` run: ``finenvs score`` re-scores it, and a second call resumes it). Required
            with ``agents``.

    Returns:
        ``{"env", "windows", "after", "dataset", "data", "seed", "policies", "reference", "symbols",
        "sharpe_label", "rows" (one per episode), "errors", "summary", "paired", "played", "cached", "seconds"}``;
        see :func:`summarize_windows` for ``summary`` and ``paired``.

    Raises:
        ValueError: Not a market family, bad windows, or unknown policy. An episode that fails is recorded in
            ``errors``, never dropped silently.
    """
    from tqdm.auto import tqdm

    from finenvs.data.catalog import default_catalog

    began = time.perf_counter()
    task = _market_task(env_id)
    env_kwargs = dict(env_kwargs or {})
    known = policies_of(env_id)
    policies = list(policies) if policies is not None else applicable_policies(env_id)
    bad = [p for p in policies if p not in known]
    if bad:
        raise KeyError(f"unknown policies {bad} for {env_id}; valid policies: {sorted(known)}")
    names = [a.name for a in agents]
    clash = [n for n in names if n in known or names.count(n) > 1]
    if clash:
        raise ValueError(f"agent names {clash} repeat a baseline's or each other's name")
    if agents and agent_root is None:
        raise ValueError("agents need agent_root, the folder of their run folders")
    if reference is None:
        reference = task.bench.herculean_baseline
    if isinstance(windows, str):
        windows = parse_windows(windows)
    if isinstance(windows, WindowSpec):
        spec: WindowSpec | None = windows
        fixed: list[Window] = []
        span = (windows.start, windows.end)
    else:
        spec = None
        fixed = [_window_of(w) for w in windows]
        if not fixed:
            raise ValueError("windows=[] is empty")
        span = (min(w[0] for w in fixed), max(w[1] for w in fixed))
    cutoff = None if after is None else to_day(after, name="after")
    catalog = default_catalog()
    source = _source(catalog, env_id, env_kwargs, dataset, span, symbols)
    if symbols is None:
        if source.series is not None:
            symbols = sorted(source.series)
        elif source.dataset is not None:
            symbols = catalog.symbols(source.dataset)
        else:
            raise DataError(f"{env_id} reads no catalog dataset: pass its symbols")
    symbols = list(symbols)
    if not symbols:
        raise ValueError("symbols=[] is empty")
    # (episode label, its env arguments, the symbols its calendar comes from)
    groups: list[tuple[str, dict[str, Any], list[str]]]
    if task.bench.universe:
        groups = [(UNIVERSE, {"symbols": symbols}, symbols)]
    else:
        groups = [(sym, {"symbol": sym}, [sym]) for sym in symbols]
    base = dict(env_kwargs)
    if source.dataset is not None:
        base["dataset"] = source.dataset
    jobs = []
    windows_of: dict[str, list[Window]] = {}
    for label, kwargs, members in groups:
        mine = spec.windows(source.calendar(catalog, members)) if spec is not None else fixed
        mine = [w for w in mine if cutoff is None or to_day(w[0]) > cutoff]
        windows_of[label] = mine
        for window in mine:
            for policy in policies:
                extra = dict(getattr(known[policy][0], "env_kwargs", None) or {})
                jobs.append((label, window, policy,
                             {**base, **kwargs, "split": None, "start": window[0], "end": window[1], **extra}))
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    played = cached = 0
    bar = tqdm(jobs, desc=f"windows {env_id}", unit="episode", disable=not progress or None)
    for label, window, policy, kwargs in bar:
        bar.set_postfix_str(f"{label} {window[0]} {policy}", refresh=False)
        key = cache_key(env_id, label, window, policy, seed, source.digest, kwargs)
        path = None if cache_dir is None else _cache_path(Path(cache_dir), key)
        record = None if path is None else _read_cached(path, key)
        if record is not None:
            cached += 1
        else:
            try:
                record = {"key": key, **play_window(env_id, kwargs, policy, seed)}
            except Exception as exc:  # an errored episode is reported, never dropped
                errors.append({"env": env_id, "symbol": label, "window": list(window), "policy": policy,
                               "error": f"{type(exc).__name__}: {exc}"})
                continue
            played += 1
            if path is not None:
                _write_cached(path, record)
        rows.append({"symbol": label, "window": list(window), "policy": policy,
                     **{k: v for k, v in record.items() if k != "key"}})
    agent_runs = _agent_windows(task, agents, windows_of, groups, base, seed,
                                Path(agent_root) if agent_root is not None else None,
                                rows, errors, progress)
    result: dict[str, Any] = {
        "env": env_id, "windows": str(spec) if spec is not None else [list(w) for w in fixed],
        "after": None if cutoff is None else str(cutoff), "dataset": source.dataset, "data": source.digest,
        "seed": seed, "policies": [*policies, *names], "agents": agent_runs,
        "reference": reference if reference in policies else None,
        "symbols": symbols, "windows_per_symbol": {k: len(v) for k, v in windows_of.items()},
        "sharpe_label": SHARPE_LABELS["standard"], "level": level, "n_boot": n_boot,
        "rows": rows, "errors": errors, "played": played, "cached": cached,
    }
    result.update(summarize_windows(rows, result["policies"], result["reference"], seed=seed, n_boot=n_boot,
                                    level=level))
    result["seconds"] = time.perf_counter() - began
    return result


def _agent_windows(task: TaskSpec, agents: Sequence[Any], windows_of: Mapping[str, list[Window]],
                   groups: list[tuple[str, dict[str, Any], list[str]]], base: Mapping[str, Any], seed: int,
                   root: Path | None, rows: list[dict[str, Any]], errors: list[dict[str, Any]],
                   progress: bool) -> list[dict[str, Any]]:
    """Each agent over the baselines' (symbol, window) episodes: one ``finenvs llm`` run per window, its episodes
    appended to ``rows`` (failed ones to ``errors``). Returns one line per run (agent, window, folder, status)."""
    from tqdm.auto import tqdm

    from finenvs.evaluation.agent_runs import run_agent, slug
    from finenvs.tasks import Selection

    if not agents or root is None:
        return []
    by_window: dict[Window, list[str]] = {}
    for label, _, _ in groups:
        for window in windows_of[label]:
            by_window.setdefault(window, []).append(label)
    members = {label: members for label, _, members in groups}
    out = []
    for agent in agents:
        bar = tqdm(sorted(by_window.items()), desc=f"windows {task.env_id} {agent.name}", unit="window",
                   disable=not progress or None)
        for window, labels in bar:
            bar.set_postfix_str(f"{window[0]} ({len(labels)} episode(s))", refresh=False)
            folder = root / f"{window[0]}_{window[1]}"
            # one run per window (an episode the env refuses, e.g. a symbol without FinReport-v0's peer basket,
            # fails alone inside it); a run that cannot start at all is tried again symbol by symbol
            tries = [(labels, folder)] + ([([label], folder / slug(label)) for label in labels] if len(labels) > 1
                                         and not task.bench.universe else [])
            for chunk, where in tries:
                symbols = tuple(members[chunk[0]]) if task.bench.universe else tuple(chunk)
                selection = Selection(split=None, symbols=symbols, seeds=(seed,),
                                      env_kwargs={**base, "start": window[0], "end": window[1],
                                                  **dict(agent.env_kwargs)})
                try:
                    run = run_agent(agent, task, selection, where)
                except Exception as exc:  # a run that cannot start is reported, never dropped
                    if chunk is labels and len(tries) > 1:
                        continue
                    errors += [{"env": task.env_id, "symbol": label, "window": list(window), "policy": agent.name,
                                "error": f"{type(exc).__name__}: {exc}"} for label in chunk]
                    continue
                _agent_rows(task, agent, window, chunk, run, rows, errors)
                out.append({"agent": agent.name, "window": list(window), "symbols": list(symbols),
                            "run_dir": run["run_dir"], "status": run["status"], "reproduced": run["reproduced"],
                            "signature": run.get("signature")})
                if chunk is labels:
                    break
    return out


def _agent_rows(task: TaskSpec, agent: Any, window: Window, labels: list[str], run: Mapping[str, Any],
                rows: list[dict[str, Any]], errors: list[dict[str, Any]]) -> None:
    """The window rows of one agent run's episodes (in the plan's order: one per label), failed ones as errors."""
    for episode, label in zip(run["episodes"], labels, strict=True):
        metrics = episode["episode"]
        if episode["status"] != "complete" or metrics is None:
            errors.append({"env": task.env_id, "symbol": label, "window": list(window), "policy": agent.name,
                           "error": f"{episode['status']}: {episode.get('reason') or 'no metrics'}"})
            continue
        first, _, last = str(metrics.get("window") or f"{window[0]}..{window[1]}").partition("..")
        rows.append({"symbol": label, "window": list(window), "policy": agent.name, "first": first,
                     "last": last, "steps": len(metrics.get("positions") or ()),
                     "final_equity": metrics.get("final_equity"), "fees": metrics.get("fees"),
                     "look_ahead_attempts": metrics.get("look_ahead_attempts"),
                     "standard": _floats(metrics["standard"]), "herculean": _floats(metrics["herculean"]),
                     "run_dir": run["run_dir"]})


# ---------------------------------------------------------------------------- summaries
def _metric(row: Mapping[str, Any], key: str) -> float:
    value = (row.get("standard") or {}).get(key)
    return math.nan if value is None else float(value)


def _group_summary(rows: list[dict[str, Any]], *, seed: int, n_boot: int, level: float) -> dict[str, Any]:
    clusters = [f"{r['window'][0]}..{r['window'][1]}" for r in rows]
    out: dict[str, Any] = {"windows": len(rows)}
    for key, _, _ in METRICS:
        values = [_metric(r, key) for r in rows]
        ci = bootstrap_ci(values, np.mean, n_boot, level, seed, groups=clusters)
        out[key] = {**distribution(values), "ci": [ci.lo, ci.hi]}
    return out


def _paired(rows: list[dict[str, Any]], ref: dict[tuple[str, str, str], dict[str, Any]], *, seed: int, n_boot: int,
            level: float) -> dict[str, Any]:
    pairs = [(r, ref[(r["symbol"], *r["window"])]) for r in rows if (r["symbol"], *r["window"]) in ref]
    clusters = [f"{r['window'][0]}..{r['window'][1]}" for r, _ in pairs]
    out: dict[str, Any] = {"windows": len(pairs)}
    for key, _, _ in METRICS:
        diff = paired_difference([_metric(a, key) for a, _ in pairs], [_metric(b, key) for _, b in pairs], np.mean,
                                 n_boot, level, seed, groups=clusters)
        out[key] = diff.record()
    return out


def summarize_windows(rows: list[dict[str, Any]], policies: Sequence[str], reference: str | None, *, seed: int = 0,
                      n_boot: int = DEFAULT_N_BOOT, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """Per policy, overall and per symbol: the distribution and the bootstrap interval of the mean of each metric;
    and each policy's paired difference to ``reference`` on the windows both played.

    Overall intervals resample whole windows (every symbol of a quarter together: the symbols of one quarter share
    its market), per-symbol ones single windows.

    Returns:
        ``{"summary": {policy: {"overall": S, "symbols": {symbol: S}}}, "paired": {policy: {"reference",
        "overall": P, "symbols": {symbol: P}}}}``; ``S = {"windows", metric: {n, dropped, mean, median, sd, q1,
        q3, min, max, share_positive, ci: [lo, hi]}}``, ``P = {"windows", metric: {estimate, ci, win_rate,
        tie_rate, n, dropped}}`` (metric: ``cumulative_return``, ``sharpe``, ``max_drawdown``).
    """
    kw: dict[str, Any] = {"seed": seed, "n_boot": n_boot, "level": level}
    summary: dict[str, Any] = {}
    paired: dict[str, Any] = {}
    ref = {(r["symbol"], *r["window"]): r for r in rows if r["policy"] == reference}
    for policy in policies:
        mine = [r for r in rows if r["policy"] == policy]
        symbols = list(dict.fromkeys(r["symbol"] for r in mine))
        summary[policy] = {"overall": _group_summary(mine, **kw),
                           "symbols": {s: _group_summary([r for r in mine if r["symbol"] == s], **kw)
                                       for s in symbols}}
        if reference is not None and ref:
            paired[policy] = {"reference": reference, "overall": _paired(mine, ref, **kw),
                              "symbols": {s: _paired([r for r in mine if r["symbol"] == s], ref, **kw)
                                          for s in symbols}}
    return {"summary": summary, "paired": paired}


# ---------------------------------------------------------------------------- rendering
def _with_ci(stats: Mapping[str, Any], scale: float, estimate: str = "mean") -> str:
    lo, hi = stats["ci"]
    return f"{fmt_number(stats[estimate], scale)} [{fmt_number(lo, scale)}, {fmt_number(hi, scale)}]"


def _describe_windows(result: Mapping[str, Any]) -> str:
    spec = result["windows"]
    what = f"`{spec}`" if isinstance(spec, str) else f"{len(spec)} explicit windows"
    after = f", starting after {result['after']}" if result.get("after") else ""
    data = f"dataset `{result['dataset']}`" if result.get("dataset") else f"data `{str(result['data'])[:16]}`"
    return f"{what}{after}, {data}"


def headline_table(result: Mapping[str, Any]) -> str:
    """Per policy: windows played, the mean CR / SR / MDD with their intervals and the paired difference to the
    reference with its win rate."""
    level = int(round(100 * result["level"]))
    ref = result.get("reference")
    sr = result["sharpe_label"]
    headers = ["policy", "windows", f"mean CR % [{level}% CI]", f"mean {sr} [{level}% CI]",
               f"mean MDD % [{level}% CI]"]
    if ref:
        headers += [f"ΔCR vs {ref}, pp [{level}% CI]", "win rate %"]
    rows = []
    for policy in result["policies"]:
        s = result["summary"][policy]["overall"]
        cells = [md_text(policy), str(s["windows"]), _with_ci(s["cumulative_return"], 100.0), _with_ci(s["sharpe"], 1.0),
                 _with_ci(s["max_drawdown"], 100.0)]
        if ref:
            p = result["paired"].get(policy, {}).get("overall")
            cr = None if p is None else p["cumulative_return"]
            cells += ["—" if cr is None else _with_ci(cr, 100.0, "estimate"),
                      "—" if cr is None else fmt_number(cr["win_rate"], 100.0, 1)]
        rows.append(cells)
    return md_table(headers, rows)


def windows_markdown(result: Mapping[str, Any]) -> list[str]:
    """The scorecard block of a :func:`run_windows` result: the headline table and the CR distribution."""
    level = int(round(100 * result["level"]))
    ref = result.get("reference")
    sr = result["sharpe_label"]
    n_windows = sum(result["windows_per_symbol"].values())
    lines = [
        f"## {result['env']} over many windows",
        "",
        "Every baseline" + (" and agent (" + ", ".join(dict.fromkeys(md_text(a["agent"]) for a in result["agents"]))
                            + ", through the text interface and its date-locked tools; one `finenvs llm` run folder "
                            "per window under `windows-agents/`)" if result.get("agents") else "")
        + f" played as one full episode per symbol and window: {_describe_windows(result)}; "
        f"{len(result['symbols'])} symbol(s), {n_windows} (symbol, window) pairs, seed {result['seed']}. "
        f"Mean of the per-window metrics with its {level}% percentile-bootstrap interval ({result['n_boot']} "
        "replicates; whole windows are resampled, every symbol of a window together, since one quarter's symbols "
        f"share its market). {sr}: Sharpe of every day's return, ddof=1, sqrt(252), rf=0; windows where it is "
        "undefined (never in the market) are left out of its mean and counted."
        + (f" Δ vs {ref}: mean of the per-window differences to {ref} on the same windows, with its interval; "
           f"win rate: share of the windows where the policy's CR beats {ref}'s (ties lose)." if ref else ""),
        "",
    ]
    lines += [headline_table(result), ""]
    lines += [f"Distribution of the per-window CR % (n/a {sr}: windows where it is undefined):", ""]
    dist_rows = []
    for policy in result["policies"]:
        s = result["summary"][policy]["overall"]
        cr = s["cumulative_return"]
        dist_rows.append([md_text(policy), fmt_number(cr["median"], 100.0), fmt_number(cr["sd"], 100.0), fmt_number(cr["q1"], 100.0),
                          fmt_number(cr["q3"], 100.0), fmt_number(cr["min"], 100.0), fmt_number(cr["max"], 100.0),
                          fmt_number(cr["share_positive"], 100.0, 1), str(s["sharpe"]["dropped"])])
    lines += [md_table(["policy", "median", "sd", "Q1", "Q3", "min", "max", "CR > 0 %", f"n/a {sr}"], dist_rows), ""]
    if result["errors"]:
        lines += [f"{len(result['errors'])} episode(s) failed (left out above):", ""]
        lines += [f"- {md_text(e['symbol'])} {e['window'][0]}..{e['window'][1]} {md_text(e['policy'])}: "
                  f"{md_text(e['error'], 1_000)}"
                  for e in result["errors"][:20]]
        if len(result["errors"]) > 20:
            lines.append(f"- ... and {len(result['errors']) - 20} more (see the JSON)")
        lines.append("")
    return lines


def windows_plot(result: Mapping[str, Any], out_dir: Path | str) -> list[Path]:
    """``windows_<env>.png``: per policy the per-window CR (box and points) with the mean and its interval, and,
    beside it, the per-window difference to the reference. Returns [] without matplotlib (``finenvs[plot]``)."""
    from finenvs.charts import figure, have_matplotlib, outside_legend, save_png

    if not have_matplotlib():
        return []
    policies = list(result["policies"])
    ref = result.get("reference")
    ref_rows = {(r["symbol"], *r["window"]): r for r in result["rows"] if r["policy"] == ref}
    panels = 2 if ref else 1
    fig = figure(6.0 * panels, 1.6 + 0.55 * len(policies))
    axes = np.atleast_1d(fig.subplots(1, panels, sharey=True))
    rng = np.random.default_rng(0)  # jitter of the points only
    import matplotlib

    horizontal = ({"orientation": "horizontal"} if tuple(int(v) for v in matplotlib.__version__.split(".")[:2]) >= (3, 10)
                  else {"vert": False})  # `vert` is deprecated from matplotlib 3.10
    level = int(round(100 * result["level"]))
    for k, ax in enumerate(axes):
        for i, policy in enumerate(policies):
            rows = [r for r in result["rows"] if r["policy"] == policy]
            if k == 0:
                values = np.array([_metric(r, "cumulative_return") for r in rows]) * 100.0
                stats = result["summary"][policy]["overall"]["cumulative_return"]
                mean, (lo, hi) = stats["mean"], stats["ci"]
            else:
                values = np.array([_metric(r, "cumulative_return")
                                   - _metric(ref_rows[(r["symbol"], *r["window"])], "cumulative_return")
                                   for r in rows if (r["symbol"], *r["window"]) in ref_rows]) * 100.0
                stats = result["paired"][policy]["overall"]["cumulative_return"]
                mean, (lo, hi) = stats["estimate"], stats["ci"]
            values = values[np.isfinite(values)]
            if values.size:
                ax.boxplot(values, positions=[i], widths=0.6, **horizontal, showfliers=False,
                           medianprops={"color": "#57606a"}, boxprops={"color": "#8c959f"},
                           whiskerprops={"color": "#8c959f"}, capprops={"color": "#8c959f"})
                ax.scatter(values, i + rng.uniform(-0.22, 0.22, values.size), s=6, alpha=0.35, color="#0969da",
                           linewidths=0)
            if mean is not None and math.isfinite(mean):
                err = [[100.0 * (mean - lo)], [100.0 * (hi - mean)]] if math.isfinite(lo) else None
                ax.errorbar([100.0 * mean], [i], xerr=err, fmt="D", color="#cf222e", ms=5, capsize=4, lw=1.6,
                            label=f"mean, {level}% CI" if i == 0 else None)
        ax.axvline(0.0, color="grey", lw=0.6, ls="--")
        ax.set_yticks(range(len(policies)), policies)
        ax.set_xlabel("CR % per window" if k == 0 else f"CR − {ref}'s CR, pp per window")
        outside_legend(ax, below=True)
    axes[0].invert_yaxis()  # the first policy on top (the axes share y: invert once)
    n = sum(result["windows_per_symbol"].values())
    fig.suptitle(f"{result['env']}: cumulative return over {n} (symbol, window) episodes — "
                 f"{_describe_windows(result).replace('`', '')}", fontsize=10)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"windows_{result['env']}.png"
    save_png(fig, path)
    return [path]


# ---------------------------------------------------------------------------- several families (finenvs bench)
def run_windows_suite(env_ids: Iterable[str], windows: str | WindowSpec, *, symbols: Sequence[str] | None = None,
                      universe: Sequence[str] | None = None, after: Any = None, seed: int = 0,
                      cache_dir: Path | str | None = None, progress: bool = True,
                      env_kwargs: Mapping[str, Any] | None = None, agents: Sequence[Any] = (),
                      agent_root: Path | str | None = None) -> dict[str, Any]:
    """:func:`run_windows` for each market family among ``env_ids`` (others are skipped): ``symbols`` for the
    single-asset families, ``universe`` for those whose symbols are one episode's universe (``bench.universe``);
    ``agents`` play the same episodes (run folders under ``agent_root``).
    A family that fails as a whole is recorded as ``{"env", "error"}``, never dropped. Returns ``{env_id: result}``."""
    spec = parse_windows(windows) if isinstance(windows, str) else windows  # a bad spec fails before any work
    out: dict[str, Any] = {}
    for env_id in env_ids:
        bench = task_of(env_id).bench
        if not bench.market:
            continue
        try:
            out[env_id] = run_windows(env_id, universe if bench.universe else symbols, spec, seed=seed, after=after,
                                      cache_dir=cache_dir, progress=progress, env_kwargs=env_kwargs, agents=agents,
                                      agent_root=agent_root)
        except Exception as exc:  # reported, never dropped
            out[env_id] = {"env": env_id, "error": f"{type(exc).__name__}: {exc}"}
    return out


def suite_markdown(results: Mapping[str, Any]) -> list[str]:
    """The scorecard blocks of :func:`run_windows_suite`'s results (a failed family: one line with its error)."""
    lines: list[str] = []
    for env_id, result in results.items():
        if "error" in result:
            lines += [f"## {env_id} over many windows", "", f"Failed: {md_text(result['error'], 1_000)}", ""]
        else:
            lines += windows_markdown(result)
    return lines


def suite_terminal(results: Mapping[str, Any]) -> list[str]:
    """What ``finenvs bench --windows`` prints: each family's headline table (the rest is in the scorecard)."""
    lines: list[str] = []
    for env_id, result in results.items():
        if "error" in result:
            lines += ["", f"{env_id} over many windows: failed: {result['error']}"]
            continue
        pairs = sum(result["windows_per_symbol"].values())
        lines += ["", f"{env_id} over many windows ({_describe_windows(result)}; {len(result['symbols'])} symbol(s), "
                  f"{pairs} (symbol, window) pairs):", headline_table(result)]
    return lines


def suite_plots(results: Mapping[str, Any], out_dir: Path | str) -> list[Path]:
    """:func:`windows_plot` of every family that ran."""
    return [p for result in results.values() if "error" not in result for p in windows_plot(result, out_dir)]


__all__ = ["EDGE_SLACK_DAYS", "FREQUENCIES", "METRICS", "UNIVERSE", "WindowSpec", "cache_key", "calendar_windows",
           "headline_table", "long_dataset", "parse_windows", "play_window", "quarterly_windows", "run_windows",
           "run_windows_suite", "suite_markdown", "suite_plots", "suite_terminal", "summarize_windows", "windows_markdown", "windows_plot"]
