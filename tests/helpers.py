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
