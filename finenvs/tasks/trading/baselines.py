"""Rule baselines for FinTrading-v0.

Each policy is a callable ``policy(obs, info) -> action`` that reads only the
observation (the date-locked window of features and the position), so it can
never see the future. Price-based rules rebuild the window's relative price
path from the ``log_return`` features: ``P_k = exp(sum_{j<=k} log_return_j)``,
which is exact up to float32 rounding and a constant factor every rule here
ignores.

| name | rule |
|---|---|
| ``buy_and_hold`` | BUY every day |
| ``always_flat`` | HOLD (flat) every day |
| ``random`` | uniform over SELL/HOLD/BUY from its own seeded generator |
| ``sma_crossover`` | long while SMA(5) > SMA(20) of the close, else flat (short with ``short=True``) |
| ``momentum`` | long while the 20-day log return is > 0, else flat (short with ``short=True``) |
| ``rsi_mean_reversion`` | RSI(14) (Cutler's, simple averages) < 30: BUY; > 70: SELL (flat unless the env shorts); else keep the current position |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from finenvs.tasks.trading.core import BUY, HOLD, N_SCALARS, SELL
from finenvs.tasks.trading.features import FEATURE_NAMES, N_FEATURES

_LOG_RETURN = FEATURE_NAMES.index("log_return")
_POSITION = -N_SCALARS  # index of the position scalar in the observation


def observation_window(obs: np.ndarray) -> np.ndarray:
    """The observation's feature rows as a (window, N_FEATURES) array (oldest first)."""
    flat = np.asarray(obs, dtype=np.float64)[:-N_SCALARS]
    if flat.size % N_FEATURES:
        raise ValueError(f"observation of size {np.size(obs)} is not a FinTrading-v0 observation")
    return flat.reshape(-1, N_FEATURES)


def relative_prices(obs: np.ndarray) -> np.ndarray:
    """Close prices of the observation window relative to the first one (first = 1)."""
    rets = observation_window(obs)[:, _LOG_RETURN]
    path = np.concatenate(([0.0], np.cumsum(rets[1:])))
    return np.exp(path)


def held_position(obs: np.ndarray) -> int:
    """The position scalar of an observation (-1, 0 or +1)."""
    return int(round(float(obs[_POSITION])))


@dataclass
class TradingPolicy:
    """Base class: a named rule with the history it needs."""

    name: str = "policy"
    min_window: int = 1

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (stateful policies re-seed here)."""

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:  # pragma: no cover
        raise NotImplementedError


@dataclass
class BuyAndHold(TradingPolicy):
    name: str = "buy_and_hold"

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        return BUY


@dataclass
class AlwaysFlat(TradingPolicy):
    name: str = "always_flat"

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        return HOLD


@dataclass
class RandomPolicy(TradingPolicy):
    name: str = "random"
    #: built with ``seed=`` by :func:`finenvs.baselines.registry.make_policy`
    seeded: ClassVar[bool] = True
    seed: int | None = 0
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        return int(self._rng.integers(3))


def _trend_action(up: bool, short: bool) -> int:
    if up:
        return BUY
    return SELL if short else HOLD


@dataclass
class SMACrossover(TradingPolicy):
    name: str = "sma_crossover"
    fast: int = 5
    slow: int = 20
    short: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.fast < self.slow:
            raise ValueError(f"sma_crossover needs 1 <= fast < slow, got fast={self.fast}, slow={self.slow}")
        self.min_window = self.slow

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        prices = relative_prices(obs)
        return _trend_action(prices[-self.fast :].mean() > prices[-self.slow :].mean(), self.short)


@dataclass
class Momentum(TradingPolicy):
    name: str = "momentum"
    lookback: int = 20
    short: bool = False

    def __post_init__(self) -> None:
        if self.lookback < 1:
            raise ValueError(f"momentum needs lookback >= 1, got {self.lookback}")
        self.min_window = self.lookback + 1

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        rets = observation_window(obs)[:, _LOG_RETURN]
        return _trend_action(float(rets[-self.lookback :].sum()) > 0.0, self.short)


def cutler_rsi(prices: np.ndarray, period: int) -> float:
    """RSI with simple averages of the last ``period`` price changes (100 if no losses)."""
    changes = np.diff(prices[-(period + 1) :])
    gain = float(np.clip(changes, 0.0, None).mean())
    loss = float(np.clip(-changes, 0.0, None).mean())
    if loss == 0.0:
        return 100.0 if gain > 0.0 else 50.0
    return 100.0 - 100.0 / (1.0 + gain / loss)


@dataclass
class RSIMeanReversion(TradingPolicy):
    name: str = "rsi_mean_reversion"
    period: int = 14
    oversold: float = 30.0
    overbought: float = 70.0

    def __post_init__(self) -> None:
        if self.period < 2 or not 0.0 < self.oversold < self.overbought < 100.0:
            raise ValueError(
                f"rsi_mean_reversion needs period >= 2 and 0 < oversold < overbought < 100, got "
                f"period={self.period}, oversold={self.oversold}, overbought={self.overbought}"
            )
        self.min_window = self.period + 1

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        rsi = cutler_rsi(relative_prices(obs), self.period)
        if rsi < self.oversold:
            return BUY
        if rsi > self.overbought:
            return SELL
        return {1: BUY, -1: SELL}.get(held_position(obs), HOLD)


TRADING_POLICIES: dict[str, tuple[type[TradingPolicy], str]] = {
    "buy_and_hold": (BuyAndHold, "BUY every day"),
    "always_flat": (AlwaysFlat, "HOLD (flat) every day"),
    "random": (RandomPolicy, "uniform random SELL/HOLD/BUY (seeded)"),
    "sma_crossover": (SMACrossover, "long while SMA(5) > SMA(20), else flat"),
    "momentum": (Momentum, "long while the 20-day return is positive, else flat"),
    "rsi_mean_reversion": (RSIMeanReversion, "RSI(14) < 30 buy, > 70 sell, else keep"),
}
