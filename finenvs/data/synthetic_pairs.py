"""Synthetic universes with a cointegrated pair, for FinHedging-v0 (``source="synthetic"``).

Log prices of the first two assets share a common factor and differ by a
mean-reverting spread, so their price ratio is stationary by construction::

    log A_t = log p0 + f_t + s_t / 2
    log B_t = log p0 + f_t - s_t / 2          (s_t = log A_t - log B_t, the log price ratio)

* ``f`` is the log of a GBM factor with annual drift ``mu`` and volatility
  ``factor_vol`` (log increments ``(mu - vol^2/2) dt + vol dW``, ``f_0 = 0``).
* ``s`` is an exact-discretised Ornstein-Uhlenbeck process around a mean ``m``:
  ``s_{t+1} = m + phi (s_t - m) + eps``, ``phi = 2^(-1/half_life)``, with
  ``eps ~ N(0, spread_sd^2 (1 - phi^2))`` so ``spread_sd`` is the stationary
  standard deviation; ``s_0 ~ N(m_0, spread_sd^2)`` with ``m_0 = 0``.
* Regime breaks (off by default): breaks arrive at ``break_rate`` per year
  (Bernoulli each day). At a break the mean jumps, ``m += sign * break_size *
  spread_sd`` with a random sign (the spread itself does not jump), and for
  ``decouple_days`` days starting with the break day the spread is a random
  walk (``phi = 1``): the relationship stops mean-reverting before it settles
  around the new mean. Their days are in ``breaks``.
* Assets 3..n (``n_assets > 2``) are distractors: ``log P_k = log p0 +
  beta_k f_t + w_{k,t}`` with ``beta_k ~ U(0.5, 1.5)`` and an independent
  random walk ``w_k`` of annual volatility ``idio_vol``. They are correlated
  with the pair through the factor but cointegrated with nothing.

Bars are daily closes: ``open`` is the previous close (the start price on the
first day), ``high``/``low`` are the max/min of open and close, and volume is
``volume`` every day. Dates are business days from ``start_date``. Every random
number comes from the generator passed in.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from finenvs.data.schema import PriceSeries
from finenvs.data.synthetic import TRADING_DAYS_PER_YEAR
from finenvs.errors import DataError


@dataclass(frozen=True)
class PairsSpec:
    """Parameters of a synthetic cointegrated universe (see module doc)."""

    n_assets: int = 2
    mu: float = 0.05
    factor_vol: float = 0.20
    half_life: float = 10.0
    spread_sd: float = 0.05
    break_rate: float = 0.0
    break_size: float = 3.0
    decouple_days: int = 0
    idio_vol: float = 0.25
    start_price: float = 100.0
    start_date: str = "2000-01-03"
    volume: float = 1.0e6

    @classmethod
    def from_dict(cls, spec: dict[str, Any] | None) -> PairsSpec:
        """Build from a JSON-able dict of the fields above.

        Raises:
            DataError: Unknown key (lists the valid ones) or a value out of range.
        """
        spec = dict(spec or {})
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(spec) - set(valid))
        if unknown:
            raise DataError(f"unknown synthetic pairs key(s) {unknown}; valid keys: {valid}")
        out = cls(**spec)
        out.validate()
        return out

    def validate(self) -> None:
        """Check every parameter's range.

        Raises:
            DataError: Naming the first parameter out of range and its valid range.
        """

        def finite(x: Any) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

        rules = [
            ("n_assets", isinstance(self.n_assets, int) and not isinstance(self.n_assets, bool) and self.n_assets >= 2,
             "an integer >= 2"),
            ("mu", finite(self.mu), "a finite number"),
            ("factor_vol", finite(self.factor_vol) and self.factor_vol >= 0, ">= 0"),
            ("half_life", finite(self.half_life) and self.half_life > 0, "> 0 (days)"),
            ("spread_sd", finite(self.spread_sd) and self.spread_sd >= 0, ">= 0"),
            ("break_rate", finite(self.break_rate) and 0 <= self.break_rate <= TRADING_DAYS_PER_YEAR, "in [0, 252] per year"),
            ("break_size", finite(self.break_size) and self.break_size >= 0, ">= 0 (spread standard deviations)"),
            ("decouple_days", isinstance(self.decouple_days, int) and not isinstance(self.decouple_days, bool)
             and self.decouple_days >= 0, "an integer >= 0"),
            ("idio_vol", finite(self.idio_vol) and self.idio_vol >= 0, ">= 0"),
            ("start_price", finite(self.start_price) and self.start_price > 0, "> 0"),
            ("volume", finite(self.volume) and self.volume > 0, "> 0"),
        ]
        for name, ok, valid in rules:
            if not ok:
                raise DataError(f"synthetic pairs: {name}={getattr(self, name)!r} must be {valid}")
        try:
            if not isinstance(self.start_date, str) or len(self.start_date) != 10:
                raise ValueError("not a YYYY-MM-DD string")
            _dt.date.fromisoformat(self.start_date)
        except ValueError as exc:
            raise DataError(f"synthetic pairs: start_date={self.start_date!r} is not a YYYY-MM-DD date") from exc

    def symbols(self) -> tuple[str, ...]:
        """``SYN-A``, ``SYN-B`` (the cointegrated pair), then ``SYN-C``, ... (distractors)."""
        return tuple(f"SYN-{_letters(k)}" for k in range(self.n_assets))


def _letters(k: int) -> str:
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = chr(65 + r) + out
    return out


@dataclass(frozen=True, eq=False)
class SyntheticPairs:
    """One simulated universe.

    Attributes:
        series: One checked :class:`PriceSeries` per asset, in ``spec.symbols()`` order.
        spread: The log price ratio ``log A - log B`` of the cointegrated pair, per day.
        spread_mean: The OU mean ``m`` in force each day.
        breaks: Day indices where a regime break happened.
    """

    series: tuple[PriceSeries, ...]
    spread: np.ndarray
    spread_mean: np.ndarray
    breaks: np.ndarray


def simulate_pairs(spec: PairsSpec | dict[str, Any] | None, n_days: int, rng: np.random.Generator) -> SyntheticPairs:
    """Simulate ``n_days`` daily bars of a universe with one cointegrated pair.

    Args:
        spec: A :class:`PairsSpec` or its dict form (default: 2 assets, half-life 10 days).
        n_days: Trading days (>= 2).
        rng: The only source of randomness.
    """
    if not isinstance(spec, PairsSpec):
        spec = PairsSpec.from_dict(spec)
    else:
        spec.validate()
    n_days = int(n_days)
    if n_days < 2:
        raise DataError(f"n_days={n_days} must be >= 2")
    dt = 1.0 / TRADING_DAYS_PER_YEAR
    factor_inc = (spec.mu - 0.5 * spec.factor_vol**2) * dt + spec.factor_vol * math.sqrt(dt) * rng.standard_normal(n_days)
    factor_inc[0] = 0.0
    factor = np.cumsum(factor_inc)

    phi = 2.0 ** (-1.0 / spec.half_life)
    innov_sd = spec.spread_sd * math.sqrt(max(0.0, 1.0 - phi * phi))
    shocks = rng.standard_normal(n_days)
    break_draws = rng.random(n_days)
    break_signs = rng.choice(np.array([-1.0, 1.0]), size=n_days)
    p_break = spec.break_rate / TRADING_DAYS_PER_YEAR
    spread = np.empty(n_days)
    means = np.empty(n_days)
    mean = 0.0
    s = spec.spread_sd * shocks[0]
    decoupled = 0
    breaks = []
    spread[0], means[0] = s, mean
    for t in range(1, n_days):
        if p_break > 0.0 and break_draws[t] < p_break:
            breaks.append(t)
            mean += break_signs[t] * spec.break_size * spec.spread_sd
            decoupled = spec.decouple_days
        if decoupled > 0:
            s = s + innov_sd * shocks[t]
            decoupled -= 1
        else:
            s = mean + phi * (s - mean) + innov_sd * shocks[t]
        spread[t], means[t] = s, mean

    log_p0 = math.log(spec.start_price)
    logs = [log_p0 + factor + spread / 2.0, log_p0 + factor - spread / 2.0]
    for _ in range(spec.n_assets - 2):
        beta = rng.uniform(0.5, 1.5)
        idio = spec.idio_vol * math.sqrt(dt) * rng.standard_normal(n_days)
        idio[0] = 0.0
        logs.append(log_p0 + beta * factor + np.cumsum(idio))

    dates = np.busday_offset(np.datetime64(spec.start_date, "D"), np.arange(n_days), roll="forward")
    volume = np.full(n_days, float(spec.volume))
    out = []
    for symbol, log_close in zip(spec.symbols(), logs, strict=True):
        close = np.exp(log_close)
        open_ = np.concatenate(([spec.start_price], close[:-1]))
        out.append(
            PriceSeries.from_arrays(
                symbol, dates, open_, np.maximum(open_, close), np.minimum(open_, close), close, volume,
                source="synthetic pairs",
            )
        )
    for arr in (spread, means):
        arr.setflags(write=False)
    return SyntheticPairs(series=tuple(out), spread=spread, spread_mean=means, breaks=np.asarray(breaks, dtype=np.int64))


__all__ = ["PairsSpec", "SyntheticPairs", "simulate_pairs"]
