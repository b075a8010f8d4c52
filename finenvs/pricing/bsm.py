"""Black-Scholes-Merton with a continuous dividend yield: prices, Greeks, implied volatility, parity.

Units (every function here):

* ``S`` spot, ``K`` strike: the same currency, > 0.
* ``T`` time to expiry in years = calendar days / 365 (:func:`year_fraction`), > 0.
* ``r`` risk-free rate and ``q`` dividend yield: continuously compounded, per year, as decimals (0.05 = 5%).
* ``sigma`` volatility per year as a decimal (0.2 = 20%), > 0.
* Greeks of one option on one unit of the underlying:
  ``delta`` (per 1 unit of spot), ``gamma`` (per unit of spot, squared),
  ``vega`` per 1 volatility *point* (sigma + 0.01), ``theta`` per *calendar day*
  (the change in value as one day passes, usually negative for a long option),
  ``rho`` per 1 rate *point* (r + 0.01).

Every function is vectorised: arguments broadcast like numpy arrays and the
result has the broadcast shape (a Python float for all-scalar input). Invalid
input raises :class:`PricingError` naming the argument and the first bad value.

Formulas (Hull, *Options, Futures and Other Derivatives*, ch. 17/19), with
``d1 = (ln(S/K) + (r - q + sigma^2/2) T) / (sigma sqrt T)``, ``d2 = d1 - sigma sqrt T``:
call ``S e^{-qT} N(d1) - K e^{-rT} N(d2)``, put ``K e^{-rT} N(-d2) - S e^{-qT} N(-d1)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from finenvs.errors import FinEnvsError


def ndtr(x: Any) -> Any:
    """The standard normal CDF (:func:`scipy.special.ndtr`), imported on first use: scipy costs ~0.3 s and
    sets warning filters, and ``import finenvs`` (which declares the options families) stays free of both."""
    from scipy.special import ndtr as _ndtr

    return _ndtr(x)

KINDS = ("call", "put")
DAYS_PER_YEAR = 365.0
#: Implied volatility search bracket (per year).
IV_BOUNDS = (1e-6, 10.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


class PricingError(FinEnvsError, ValueError):
    """Invalid pricing input (names the argument) or a price outside no-arbitrage bounds."""


def year_fraction(days: Any) -> Any:
    """Calendar days to years (``days / 365``)."""
    return np.asarray(days, dtype=float) / DAYS_PER_YEAR


def _out(x: np.ndarray) -> Any:
    return float(x) if np.ndim(x) == 0 else x


def _check(name: str, value: np.ndarray, *, positive: bool = False, finite: bool = True) -> None:
    bad = ~np.isfinite(value) if finite else np.zeros(value.shape, dtype=bool)
    if positive:
        bad |= ~(value > 0)
    if np.any(bad):
        first = value[bad].flat[0] if value.ndim else value
        rule = "> 0 and finite" if positive else "finite"
        raise PricingError(f"{name} must be {rule}; got {first!r}")


def _kind_sign(kind: Any) -> np.ndarray:
    kinds = np.asarray(kind)
    if kinds.dtype.kind not in "UO":
        raise PricingError(f"kind must be 'call' or 'put'; got {kind!r}")
    lowered = np.char.lower(kinds.astype(str))
    bad = ~np.isin(lowered, KINDS)
    if np.any(bad):
        raise PricingError(f"kind must be 'call' or 'put'; got {lowered[bad].flat[0] if lowered.ndim else kind!r}")
    return np.where(lowered == "call", 1.0, -1.0)


def _inputs(S: Any, K: Any, T: Any, r: Any, q: Any, sigma: Any, kind: Any) -> tuple[np.ndarray, ...]:
    S, K, T, r, q, sigma = (np.asarray(x, dtype=float) for x in (S, K, T, r, q, sigma))
    _check("S (spot)", S, positive=True)
    _check("K (strike)", K, positive=True)
    _check("T (years to expiry)", T, positive=True)
    _check("r (rate)", r)
    _check("q (dividend yield)", q)
    _check("sigma (volatility)", sigma, positive=True)
    w = _kind_sign(kind)
    return np.broadcast_arrays(S, K, T, r, q, sigma, w)


def _d1d2(S: np.ndarray, K: np.ndarray, T: np.ndarray, r: np.ndarray, q: np.ndarray,
          sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vol_t = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r - q + 0.5 * sigma * sigma) * T) / vol_t
    return d1, d1 - vol_t, vol_t


def bsm_price(S: Any, K: Any, T: Any, r: Any, q: Any, sigma: Any, kind: Any = "call") -> Any:
    """Black-Scholes-Merton price of a European call or put (see module doc for units)."""
    S, K, T, r, q, sigma, w = _inputs(S, K, T, r, q, sigma, kind)
    d1, d2, _ = _d1d2(S, K, T, r, q, sigma)
    df_q, df_r = np.exp(-q * T), np.exp(-r * T)
    return _out(w * (S * df_q * ndtr(w * d1) - K * df_r * ndtr(w * d2)))


def bsm_greeks(S: Any, K: Any, T: Any, r: Any, q: Any, sigma: Any, kind: Any = "call") -> dict[str, Any]:
    """``{"price", "delta", "gamma", "vega", "theta", "rho"}`` of a European option (units in the module doc)."""
    S, K, T, r, q, sigma, w = _inputs(S, K, T, r, q, sigma, kind)
    d1, d2, vol_t = _d1d2(S, K, T, r, q, sigma)
    df_q, df_r = np.exp(-q * T), np.exp(-r * T)
    pdf1 = np.exp(-0.5 * d1 * d1) / _SQRT_2PI
    nd1, nd2 = ndtr(w * d1), ndtr(w * d2)
    price = w * (S * df_q * nd1 - K * df_r * nd2)
    delta = w * df_q * nd1
    gamma = df_q * pdf1 / (S * vol_t)
    vega = S * df_q * pdf1 * np.sqrt(T)
    theta_year = -S * df_q * pdf1 * sigma / (2.0 * np.sqrt(T)) + w * (q * S * df_q * nd1 - r * K * df_r * nd2)
    rho = w * K * T * df_r * nd2
    return {
        "price": _out(price),
        "delta": _out(delta),
        "gamma": _out(gamma),
        "vega": _out(vega / 100.0),
        "theta": _out(theta_year / DAYS_PER_YEAR),
        "rho": _out(rho / 100.0),
    }


def no_arbitrage_bounds(S: Any, K: Any, T: Any, r: Any, q: Any, kind: Any = "call") -> tuple[Any, Any]:
    """``(lower, upper)`` bounds of a European option's price.

    Call: ``max(S e^{-qT} - K e^{-rT}, 0) .. S e^{-qT}``; put: ``max(K e^{-rT} - S e^{-qT}, 0) .. K e^{-rT}``.
    """
    S, K, T, r, q, _, w = _inputs(S, K, T, r, q, 1.0, kind)
    fwd_s, fwd_k = S * np.exp(-q * T), K * np.exp(-r * T)
    lower = np.maximum(w * (fwd_s - fwd_k), 0.0)
    upper = np.where(w > 0, fwd_s, fwd_k)
    return _out(lower), _out(upper)


def implied_vol(price: Any, S: Any, K: Any, T: Any, r: Any, q: Any, kind: Any = "call", *,
                tol: float = 1e-12) -> Any:
    """Volatility at which :func:`bsm_price` equals ``price`` (Brent's method on ``IV_BOUNDS``).

    Raises:
        PricingError: Invalid inputs, or a price outside the no-arbitrage bounds
            (names the price and the bounds), or one whose volatility is outside ``IV_BOUNDS``.
    """
    price = np.asarray(price, dtype=float)
    _check("price", price)
    S, K, T, r, q, _, w, price = np.broadcast_arrays(*_inputs(S, K, T, r, q, 1.0, kind), price)
    lower, upper = no_arbitrage_bounds(S, K, T, r, q, np.where(w > 0, "call", "put"))
    lower, upper = np.asarray(lower), np.asarray(upper)
    out = np.empty(price.shape)
    for idx in np.ndindex(price.shape):
        p, lo, hi = float(price[idx]), float(lower[idx]), float(upper[idx])
        kind_i = "call" if w[idx] > 0 else "put"
        if not lo < p < hi:
            raise PricingError(
                f"{kind_i} price {p!r} is outside the no-arbitrage bounds ({lo:.10g}, {hi:.10g}) for "
                f"S={float(S[idx])!r}, K={float(K[idx])!r}, T={float(T[idx])!r}: no volatility gives it"
            )
        args = (float(S[idx]), float(K[idx]), float(T[idx]), float(r[idx]), float(q[idx]))

        def gap(sig: float, args: tuple[float, float, float, float, float] = args, kind_i: str = kind_i,
                p: float = p) -> float:
            return bsm_price(*args, sig, kind_i) - p

        a, b = IV_BOUNDS
        if gap(a) > 0 or gap(b) < 0:
            raise PricingError(f"{kind_i} price {p!r} implies a volatility outside {IV_BOUNDS} per year")
        from scipy.optimize import brentq

        out[idx] = brentq(gap, a, b, xtol=tol, rtol=4 * np.finfo(float).eps, maxiter=500)
    return _out(out)


def parity_gap(call: Any, put: Any, S: Any, K: Any, T: Any, r: Any, q: Any) -> Any:
    """Put-call parity residual ``C - P - (S e^{-qT} - K e^{-rT})`` (0 for consistent European prices)."""
    S, K, T, r, q, _, _ = _inputs(S, K, T, r, q, 1.0, "call")
    call, put = np.asarray(call, dtype=float), np.asarray(put, dtype=float)
    return _out(call - put - (S * np.exp(-q * T) - K * np.exp(-r * T)))


__all__ = [
    "DAYS_PER_YEAR",
    "IV_BOUNDS",
    "KINDS",
    "PricingError",
    "bsm_greeks",
    "bsm_price",
    "implied_vol",
    "no_arbitrage_bounds",
    "parity_gap",
    "year_fraction",
]
