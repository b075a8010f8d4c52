"""Checks of a run's episodes before any work or folder (``run``, ``llm``, ``harness``, ``mcp``): bad input fails
in well under a second with one line naming the valid choices."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def check_env_kwargs(task: Any, kwargs: Mapping[str, Any]) -> None:
    """Every env argument must be one the family's env (or its text wrapper) takes: checked before any work."""
    from finenvs.tasks import env_arguments
    from finenvs.wrappers.text import split_text_kwargs

    env_kwargs, _ = split_text_kwargs(kwargs)
    params, any_keyword = env_arguments(task.env_id)
    if any_keyword:
        return
    unknown = sorted(set(env_kwargs) - set(params))
    if unknown:
        raise ValueError(f"--env-kwargs: {task.env_id} takes no argument {', '.join(map(repr, unknown))}; its "
                         f"arguments: {', '.join(sorted(params))}")


def check_episodes(task: Any, episodes: list[Any], *, build: bool = True) -> None:
    """Check the env arguments of a run's episodes before any work or folder: fails in well under a second.

    Named splits, dates (``YYYY-MM-DD``, start not after end: the same window rule the market envs apply)
    and symbols (the catalog's symbols of the env's price dataset, user-added ones included; a pairs
    universe needs two). Each error names the valid choices. Episodes on a user's own bars (``data=``)
    and synthetic markets are left to the env. With ``build``, a market family's env is then built once per
    distinct argument set (milliseconds each), so an argument only the env can judge fails here too
    (``finenvs run`` builds its one env right after, writing nothing first, and passes ``build=False``).

    Raises:
        UnknownSymbolError: A symbol the env's dataset does not hold (lists those it does).
        WindowError: An unknown split, a date that is not a date, or a start after the end.
        ValueError: A pairs universe of fewer than two symbols.
        DataError: An unknown price dataset (lists the valid ones).
    """
    from finenvs.data.catalog import DEFAULT_DATASET, default_catalog
    from finenvs.data.splits import DEFAULT_SPLIT, SPLITS, resolve_split, split_bounds
    from finenvs.errors import UnknownSymbolError, WindowError

    seen: set[str] = set()
    unknown: dict[str, list[str]] = {}  # dataset -> symbols it does not hold, over every episode
    for episode in episodes:
        kwargs = {**task.kwargs, **episode.env_kwargs}
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key in seen or kwargs.get("data") is not None:  # a user's own bars: the env checks them
            continue
        seen.add(key)
        split = kwargs.get("split")
        windowed = "end" in task.run_options  # a date window (the market families); the others' plans check
        if windowed and split is not None and split != DEFAULT_SPLIT and split not in SPLITS:  # their own splits
            raise WindowError(f"unknown split {split!r}; valid splits: {sorted(SPLITS)}")
        if windowed and ("split" in kwargs or "start" in kwargs or "end" in kwargs):  # the envs' window rule
            split_bounds(resolve_split(split, user_data=False), kwargs.get("start"), kwargs.get("end"))
        symbols = [kwargs["symbol"]] if kwargs.get("symbol") else list(kwargs.get("symbols") or ())
        if task.bench.universe and kwargs.get("symbols") is not None and len(symbols) < 2:
            raise ValueError(f"{task.env_id}: a pairs universe needs at least 2 symbols, got {symbols}")
        if not symbols or kwargs.get("source", "real") != "real":
            continue
        dataset = kwargs.get("dataset") or DEFAULT_DATASET
        valid = default_catalog().symbols(dataset)  # an unknown dataset: DataError naming the valid ones
        missing = unknown.setdefault(dataset, [])
        missing += [s for s in symbols if s not in valid and s not in missing]
    for dataset, missing in unknown.items():
        if missing:
            what = f"symbol {missing[0]!r}" if len(missing) == 1 else f"symbols {missing}"
            raise UnknownSymbolError(f"unknown {what} in dataset {dataset!r} of {task.env_id}; valid symbols: "
                                     f"{default_catalog().symbols(dataset)}")
    if build and "end" in task.run_options:  # the market envs build in milliseconds: build each distinct one
        from finenvs.evaluation.envpool import make_base_env  # once, so a bad argument (a user symbol without

        built: set[str] = set()  # FinReport-v0's peer basket, a fee out of range) fails here, before the run folder
        for episode in episodes:
            key = json.dumps(episode.env_kwargs, sort_keys=True, default=str)
            if key not in built:
                built.add(key)
                make_base_env(episode).close()

