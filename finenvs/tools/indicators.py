"""Technical indicators as pure numpy functions of a price history.

Each function takes the bars an agent can see (oldest first) and returns one
value per bar, NaN where the history is too short. Value ``i`` depends on bars
``0..i`` only, so an indicator computed from a date-locked view never sees the
future. Conventions follow TA-Lib, the reference most trading code uses:

| name | definition |
|---|---|
| ``sma`` | mean of the last ``window`` closes |
| ``ema`` | ``e_i = a c_i + (1-a) e_{i-1}``, ``a = 2/(window+1)``, seeded with the SMA of the first ``window`` closes |
| ``rsi`` | Wilder's RSI: gains/losses smoothed with ``a = 1/window``, seeded with their simple mean over the first ``window`` changes; ``100 - 100/(1+RS)`` (100 when there are no losses) |
| ``macd`` | ``ema(fast) - ema(slow)``; ``signal`` = EMA(``signal``) of the MACD line; ``histogram`` = MACD - signal |
| ``bollinger`` | middle = SMA(``window``); upper/lower = middle ± ``num_std`` × population std (ddof 0) of the same closes; ``percent_b`` = (close - lower)/(upper - lower) |
| ``atr`` | Wilder-smoothed true range, true range = max(high-low, abs(high-prev close), abs(low-prev close)), seeded with the mean of the first ``window`` true ranges (from the second bar) |
| ``realized_vol`` | std (ddof 1) of the last ``window`` daily log returns × sqrt(``periods``) |
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

TRADING_DAYS_PER_YEAR = 252


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan)


def sma(close: np.ndarray, window: int = 20) -> np.ndarray:
    """Simple moving average."""
    close = np.asarray(close, dtype=np.float64)
    out = _nan(close.size)
    if close.size >= window:
        out[window - 1 :] = sliding_window_view(close, window).mean(axis=1)
    return out


# The recursions below run on Python floats (``tolist``), not numpy scalars: the same IEEE double operations in the
# same order, so the same values, at a fraction of the cost per bar.
def _recursive(values: np.ndarray, alpha: float, seed_index: int, seed: float) -> np.ndarray:
    out = _nan(values.size)
    if seed_index >= values.size:
        return out
    prev = seed
    beta = 1.0 - alpha
    path = [seed]
    for x in values[seed_index + 1 :].tolist():
        prev = alpha * x + beta * prev
        path.append(prev)
    out[seed_index:] = path
    return out


def ema(close: np.ndarray, window: int = 20) -> np.ndarray:
    """Exponential moving average seeded with the SMA of the first ``window`` values (NaNs skipped at the start)."""
    close = np.asarray(close, dtype=np.float64)
    finite = np.flatnonzero(np.isfinite(close))
    if finite.size == 0:
        return _nan(close.size)
    first = int(finite[0])
    seed_index = first + window - 1
    if seed_index >= close.size:
        return _nan(close.size)
    seed = float(close[first : seed_index + 1].mean())
    return _recursive(close, 2.0 / (window + 1.0), seed_index, seed)


def rsi(close: np.ndarray, window: int = 14) -> np.ndarray:
    """Wilder's relative strength index (0..100)."""
    close = np.asarray(close, dtype=np.float64)
    out = _nan(close.size)
    if close.size <= window:
        return out
    change = np.diff(close)
    gain = np.where(change > 0, change, 0.0)
    loss = np.where(change < 0, -change, 0.0)
    avg_gain = float(gain[:window].mean())
    avg_loss = float(loss[:window].mean())
    values = [100.0 if avg_loss == 0.0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)]
    for g, lo in zip(gain[window:].tolist(), loss[window:].tolist(), strict=True):  # bars window+1 ..
        avg_gain = (avg_gain * (window - 1) + g) / window
        avg_loss = (avg_loss * (window - 1) + lo) / window
        values.append(100.0 if avg_loss == 0.0 else 100.0 - 100.0 / (1.0 + avg_gain / avg_loss))
    out[window:] = values
    return out


def macd(close: np.ndarray, fast: int = 12, slow: int = 26, signal: int = 9) -> dict[str, np.ndarray]:
    """MACD line, signal line and histogram."""
    if fast >= slow:
        raise ValueError(f"macd needs fast < slow, got fast={fast}, slow={slow}")
    line = ema(close, fast) - ema(close, slow)
    sig = ema(line, signal)
    return {"macd": line, "signal": sig, "histogram": line - sig}


def bollinger(close: np.ndarray, window: int = 20, num_std: float = 2.0) -> dict[str, np.ndarray]:
    """Bollinger bands and %b."""
    close = np.asarray(close, dtype=np.float64)
    mid = sma(close, window)
    std = _nan(close.size)
    if close.size >= window:
        std[window - 1 :] = sliding_window_view(close, window).std(axis=1, ddof=0)
    upper, lower = mid + num_std * std, mid - num_std * std
    width = upper - lower
    with np.errstate(invalid="ignore", divide="ignore"):
        percent_b = np.where(width > 0, (close - lower) / width, np.nan)
    return {"middle": mid, "upper": upper, "lower": lower, "percent_b": percent_b}


def atr(high: np.ndarray, low: np.ndarray, close: np.ndarray, window: int = 14) -> np.ndarray:
    """Average true range (Wilder)."""
    high, low, close = (np.asarray(a, dtype=np.float64) for a in (high, low, close))
    out = _nan(close.size)
    if close.size <= window:
        return out
    prev = close[:-1]
    tr = np.maximum.reduce([high[1:] - low[1:], np.abs(high[1:] - prev), np.abs(low[1:] - prev)])
    value = float(tr[:window].mean())
    values = [value]
    for t in tr[window:].tolist():  # bars window+1 ..
        value = (value * (window - 1) + t) / window
        values.append(value)
    out[window:] = values
    return out


def realized_vol(close: np.ndarray, window: int = 20, periods: int = TRADING_DAYS_PER_YEAR) -> np.ndarray:
    """Annualised standard deviation of daily log returns over ``window`` days."""
    close = np.asarray(close, dtype=np.float64)
    out = _nan(close.size)
    if close.size <= window:
        return out
    rets = np.diff(np.log(close))
    out[window:] = sliding_window_view(rets, window).std(axis=1, ddof=1) * math.sqrt(periods)
    return out


#: name -> {parameter: (type, default, minimum, maximum)}
INDICATORS: dict[str, dict[str, tuple[type, float, float, float]]] = {
    "sma": {"window": (int, 20, 1, 1000)},
    "ema": {"window": (int, 20, 1, 1000)},
    "rsi": {"window": (int, 14, 1, 1000)},
    "macd": {"fast": (int, 12, 1, 1000), "slow": (int, 26, 2, 1000), "signal": (int, 9, 1, 1000)},
    "bollinger": {"window": (int, 20, 2, 1000), "num_std": (float, 2.0, 0.1, 10.0)},
    "atr": {"window": (int, 14, 1, 1000)},
    "realized_vol": {"window": (int, 20, 2, 1000)},
}


def compute(name: str, high: np.ndarray, low: np.ndarray, close: np.ndarray, **params: float) -> dict[str, np.ndarray]:
    """One indicator by name, as ``{output name: values}`` (single-output indicators use ``value``)."""
    if name == "sma":
        return {"value": sma(close, int(params["window"]))}
    if name == "ema":
        return {"value": ema(close, int(params["window"]))}
    if name == "rsi":
        return {"value": rsi(close, int(params["window"]))}
    if name == "macd":
        return macd(close, int(params["fast"]), int(params["slow"]), int(params["signal"]))
    if name == "bollinger":
        return bollinger(close, int(params["window"]), float(params["num_std"]))
    if name == "atr":
        return {"value": atr(high, low, close, int(params["window"]))}
    if name == "realized_vol":
        return {"value": realized_vol(close, int(params["window"]))}
    raise KeyError(f"unknown indicator {name!r}; valid: {sorted(INDICATORS)}")


__all__ = ["INDICATORS", "atr", "bollinger", "compute", "ema", "macd", "realized_vol", "rsi", "sma"]
