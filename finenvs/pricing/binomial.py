"""Cox-Ross-Rubinstein binomial tree for American (and European) calls and puts with a dividend yield.

Same units as :mod:`finenvs.pricing.bsm`. With ``n`` steps of ``dt = T / n``:
``u = exp(sigma sqrt dt)``, ``d = 1 / u``, risk-neutral up probability
``p = (exp((r - q) dt) - d) / (u - d)``, discount ``exp(-r dt)`` per step; an
American option is worth the larger of holding and exercising at every node.
The European price converges to Black-Scholes-Merton as ``n`` grows (error of
order ``1/n``, oscillating).
"""

from __future__ import annotations

import math

import numpy as np

from finenvs.pricing.bsm import PricingError, _inputs

DEFAULT_STEPS = 500


def crr_price(S: float, K: float, T: float, r: float, q: float, sigma: float, kind: str = "put", *,
              american: bool = True, steps: int = DEFAULT_STEPS) -> float:
    """Price of one option on a CRR tree of ``steps`` steps (scalar inputs).

    Raises:
        PricingError: Invalid inputs, or too few steps for the drift (``p`` outside (0, 1)).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise PricingError(f"steps must be an integer >= 1; got {steps!r}")
    S_, K_, T_, r_, q_, sig_, w_ = (float(np.asarray(x).reshape(-1)[0]) for x in _inputs(S, K, T, r, q, sigma, kind))
    if np.ndim(S) or np.ndim(K) or np.ndim(T) or np.ndim(sigma):
        raise PricingError("crr_price takes scalar inputs; loop over arrays")
    dt = T_ / steps
    u = math.exp(sig_ * math.sqrt(dt))
    d = 1.0 / u
    growth = math.exp((r_ - q_) * dt)
    p = (growth - d) / (u - d)
    if not 0.0 < p < 1.0:
        raise PricingError(f"risk-neutral probability {p:.6g} is outside (0, 1): use more steps than {steps}")
    disc = math.exp(-r_ * dt)
    j = np.arange(steps + 1)
    spots = S_ * u ** (steps - 2 * j)  # node j: (steps - j) ups and j downs
    values = np.maximum(w_ * (spots - K_), 0.0)
    for n in range(steps - 1, -1, -1):
        values = disc * (p * values[:-1] + (1.0 - p) * values[1:])
        if american:
            spots = S_ * u ** (n - 2 * np.arange(n + 1))
            values = np.maximum(values, w_ * (spots - K_))
    return float(values[0])


__all__ = ["DEFAULT_STEPS", "crr_price"]
