"""Synthetic daily markets (GBM, Heston, Merton jump-diffusion) in the OHLCV schema.

Each trading day is simulated on a fine grid: one overnight step followed by
``intraday_steps`` equal intraday steps. The overnight step carries
``overnight_share`` of the day's variance (the rest is spread evenly intraday):

* ``open``  = previous close x exp(overnight log-increment), the day before the first
  closing at ``start_price``;
* ``close`` = the price after the last intraday step;
* ``high`` / ``low`` = the maximum / minimum of the open and every intraday price,
  so ``high >= max(open, close)`` and ``low <= min(open, close)`` hold by construction;
* ``volume`` = ``volume_mean`` x exp(u_t + ``volume_beta`` x (|r_t| / sigma_day - 0.8)),
  where u_t is an AR(1) with coefficient ``volume_ar`` and innovation sd
  ``volume_noise``, r_t the day's close-to-close log return and sigma_day the
  model's nominal daily volatility (busy days trade more).

Time is in years with ``TRADING_DAYS_PER_YEAR`` = 252 trading days. Dates are
business days (Mon-Fri) from ``start_date``; synthetic calendars have no holidays.
Every random number comes from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.data.schema import PriceSeries
from finenvs.errors import DataError

TRADING_DAYS_PER_YEAR = 252


@dataclass(frozen=True)
class GBMParams:
    """Geometric Brownian motion: dS/S = mu dt + sigma dW (annualised)."""

    mu: float = 0.07
    sigma: float = 0.25


@dataclass(frozen=True)
class HestonParams:
    """Heston stochastic volatility, simulated with full-truncation Euler.

    dS/S = mu dt + sqrt(v) dW1;  dv = kappa (theta - v) dt + xi sqrt(v) dW2;  corr(dW1, dW2) = rho.
    """

    mu: float = 0.07
    v0: float = 0.06
    kappa: float = 2.0
    theta: float = 0.06
    xi: float = 0.5
    rho: float = -0.7


@dataclass(frozen=True)
class MertonParams:
    """Merton jump-diffusion: GBM plus compound-Poisson log-normal jumps.

    Jumps arrive at ``jump_intensity`` per year; a jump multiplies the price by
    exp(J), J ~ N(jump_mean, jump_std^2). The drift is compensated so the expected
    price growth rate stays ``mu``.
    """

    mu: float = 0.07
    sigma: float = 0.20
    jump_intensity: float = 1.0
    jump_mean: float = -0.05
    jump_std: float = 0.08


@dataclass(frozen=True)
class BarParams:
    """How daily bars are formed from the fine grid (see module docstring)."""

    intraday_steps: int = 12
    overnight_share: float = 0.2
    start_price: float = 100.0
    start_date: str = "2000-01-03"
    volume_mean: float = 1.0e6
    volume_ar: float = 0.7
    volume_noise: float = 0.25
    volume_beta: float = 0.3


MODELS: dict[str, type] = {"gbm": GBMParams, "heston": HestonParams, "merton": MertonParams}


@dataclass(frozen=True)
class SyntheticSpec:
    """A synthetic market: model name, its parameters and the bar construction."""

    model: str = "gbm"
    params: Any = None
    bars: BarParams = field(default_factory=BarParams)

    @classmethod
    def from_dict(cls, spec: dict[str, Any] | None) -> SyntheticSpec:
        """Build from a JSON-able dict ``{"model": "heston", "params": {...}, "bars": {...}}``.

        Raises:
            DataError: Unknown model or parameter name (lists the valid ones).
        """
        spec = dict(spec or {})
        model = str(spec.pop("model", "gbm")).lower()
        if model not in MODELS:
            raise DataError(f"unknown synthetic model {model!r}; valid models: {sorted(MODELS)}")
        params_cls = MODELS[model]
        try:
            params = params_cls(**dict(spec.pop("params", {}) or {}))
            bars = BarParams(**dict(spec.pop("bars", {}) or {}))
        except TypeError as exc:
            raise DataError(f"bad synthetic parameters for {model!r}: {exc}") from exc
        if spec:
            raise DataError(f"unknown synthetic spec key(s) {sorted(spec)}; valid keys: model, params, bars")
        out = cls(model=model, params=params, bars=bars)
        out.validate()
        return out

    def validate(self) -> None:
        """Check every parameter's range.

        Raises:
            DataError: Naming the first parameter out of range and its valid range.
        """
        p, b = self.params, self.bars
        rules: list[tuple[str, Any, bool, str]] = [
            ("params.mu", p.mu, math.isfinite(p.mu), "a finite number"),
        ]
        if self.model in ("gbm", "merton"):
            rules.append(("params.sigma", p.sigma, math.isfinite(p.sigma) and p.sigma >= 0, ">= 0"))
        if self.model == "merton":
            rules += [
                ("params.jump_intensity", p.jump_intensity, math.isfinite(p.jump_intensity) and p.jump_intensity >= 0, ">= 0"),
                ("params.jump_mean", p.jump_mean, math.isfinite(p.jump_mean), "a finite number"),
                ("params.jump_std", p.jump_std, math.isfinite(p.jump_std) and p.jump_std >= 0, ">= 0"),
            ]
        if self.model == "heston":
            for name in ("v0", "kappa", "theta", "xi"):
                value = getattr(p, name)
                rules.append((f"params.{name}", value, math.isfinite(value) and value >= 0, ">= 0"))
            rules.append(("params.rho", p.rho, math.isfinite(p.rho) and -1.0 <= p.rho <= 1.0, "in [-1, 1]"))
        rules += [
            ("bars.intraday_steps", b.intraday_steps,
             isinstance(b.intraday_steps, int) and not isinstance(b.intraday_steps, bool) and b.intraday_steps >= 1,
             "an integer >= 1"),
            ("bars.overnight_share", b.overnight_share, 0.0 <= b.overnight_share < 1.0, "in [0, 1)"),
            ("bars.start_price", b.start_price, math.isfinite(b.start_price) and b.start_price > 0, "> 0"),
            ("bars.volume_mean", b.volume_mean, math.isfinite(b.volume_mean) and b.volume_mean > 0, "> 0"),
            ("bars.volume_ar", b.volume_ar, 0.0 <= b.volume_ar < 1.0, "in [0, 1)"),
            ("bars.volume_noise", b.volume_noise, math.isfinite(b.volume_noise) and b.volume_noise >= 0, ">= 0"),
            ("bars.volume_beta", b.volume_beta, math.isfinite(b.volume_beta), "a finite number"),
        ]
        for name, value, ok, valid in rules:
            if not ok:
                raise DataError(f"synthetic {self.model}: {name}={value!r} must be {valid}")
        try:
            np.datetime64(str(b.start_date), "D")
        except ValueError as exc:
            raise DataError(f"synthetic {self.model}: bars.start_date={b.start_date!r} is not a YYYY-MM-DD date") from exc

    def nominal_daily_vol(self) -> float:
        p = self.params
        if self.model == "heston":
            return math.sqrt(p.theta / TRADING_DAYS_PER_YEAR)
        if self.model == "merton":
            var = p.sigma**2 + p.jump_intensity * (p.jump_mean**2 + p.jump_std**2)
            return math.sqrt(var / TRADING_DAYS_PER_YEAR)
        return p.sigma / math.sqrt(TRADING_DAYS_PER_YEAR)


def _step_lengths(bars: BarParams) -> np.ndarray:
    """Year fractions of the overnight step and each intraday step of one day."""
    dt_day = 1.0 / TRADING_DAYS_PER_YEAR
    k = bars.intraday_steps
    return np.concatenate(([bars.overnight_share * dt_day], np.full(k, (1.0 - bars.overnight_share) * dt_day / k)))


def _increments(spec: SyntheticSpec, n_days: int, rng: np.random.Generator) -> np.ndarray:
    """Log-price increments on the fine grid, shape (n_days, 1 + intraday_steps)."""
    dt = np.broadcast_to(_step_lengths(spec.bars), (n_days, spec.bars.intraday_steps + 1))
    p = spec.params
    if spec.model == "gbm":
        z = rng.standard_normal(dt.shape)
        return (p.mu - 0.5 * p.sigma**2) * dt + p.sigma * np.sqrt(dt) * z
    if spec.model == "merton":
        z = rng.standard_normal(dt.shape)
        k = math.exp(p.jump_mean + 0.5 * p.jump_std**2) - 1.0
        n_jumps = rng.poisson(p.jump_intensity * dt)
        jumps = n_jumps * p.jump_mean + np.sqrt(n_jumps) * p.jump_std * rng.standard_normal(dt.shape)
        drift = (p.mu - p.jump_intensity * k - 0.5 * p.sigma**2) * dt
        return drift + p.sigma * np.sqrt(dt) * z + jumps
    # heston: sequential in time, full truncation Euler
    flat_dt = dt.reshape(-1)
    z1 = rng.standard_normal(flat_dt.shape)
    z2 = p.rho * z1 + math.sqrt(1.0 - p.rho**2) * rng.standard_normal(flat_dt.shape)
    out = np.empty_like(flat_dt)
    v = p.v0
    mu, kappa, theta, xi = p.mu, p.kappa, p.theta, p.xi
    sqrt_dt = np.sqrt(flat_dt)
    for i in range(flat_dt.shape[0]):
        vp = v if v > 0.0 else 0.0
        sv = math.sqrt(vp)
        out[i] = (mu - 0.5 * vp) * flat_dt[i] + sv * sqrt_dt[i] * z1[i]
        v = v + kappa * (theta - vp) * flat_dt[i] + xi * sv * sqrt_dt[i] * z2[i]
    return out.reshape(dt.shape)


def simulate(
    spec: SyntheticSpec | dict[str, Any] | None,
    n_days: int,
    rng: np.random.Generator,
    symbol: str | None = None,
) -> PriceSeries:
    """Simulate ``n_days`` daily bars.

    Args:
        spec: A :class:`SyntheticSpec` or its dict form (default: GBM).
        n_days: Number of trading days (>= 1).
        rng: The only source of randomness.
        symbol: Series name (default ``SYN-<MODEL>``).

    Returns:
        A checked :class:`PriceSeries` in the OHLCV schema.
    """
    if not isinstance(spec, SyntheticSpec):
        spec = SyntheticSpec.from_dict(spec)
    else:
        spec.validate()
    if int(n_days) < 1:
        raise DataError(f"n_days={n_days} must be >= 1")
    n_days = int(n_days)
    bars = spec.bars
    inc = _increments(spec, n_days, rng)
    log_start = math.log(bars.start_price)
    # log price at the end of every fine step, day by day
    path = log_start + np.cumsum(inc.reshape(-1)).reshape(inc.shape)
    log_open = path[:, 0]
    intraday = path[:, 1:]
    log_close = intraday[:, -1]
    log_high = np.maximum(log_open, intraday.max(axis=1))
    log_low = np.minimum(log_open, intraday.min(axis=1))
    prev_close = np.concatenate(([log_start], log_close[:-1]))
    day_ret = log_close - prev_close
    sigma_day = spec.nominal_daily_vol()
    shocks = rng.standard_normal(n_days) * bars.volume_noise
    # AR(1) log-volume level u_i = volume_ar * u_{i-1} + shock_i from u_{-1} = 0, as a recursive filter
    # (the same multiply-add per day as the loop it replaces, in C)
    from scipy.signal import lfilter  # here, not at import: scipy.signal costs ~60 MB and 0.5 s to import

    u = lfilter([1.0], [1.0, -bars.volume_ar], shocks)
    volume = bars.volume_mean * np.exp(u + bars.volume_beta * (np.abs(day_ret) / sigma_day - 0.8))
    dates = np.busday_offset(np.datetime64(bars.start_date, "D"), np.arange(n_days), roll="forward")
    open_ = np.exp(log_open)
    close = np.exp(log_close)
    # exp is monotone, but rounding can put exp(max) a hair below exp(open): take max/min again
    high = np.maximum(np.exp(log_high), np.maximum(open_, close))
    low = np.minimum(np.exp(log_low), np.minimum(open_, close))
    return PriceSeries.from_arrays(
        symbol or f"SYN-{spec.model.upper()}",
        dates,
        open_,
        high,
        low,
        close,
        np.round(volume),
        source=f"synthetic {spec.model}",
    )
