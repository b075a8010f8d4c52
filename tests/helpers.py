"""Helpers shared by test modules (import as ``from helpers import ...``)."""

from __future__ import annotations

import numpy as np
import pandas as pd


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
