"""Multi-leg positions at one expiry: P&L, max profit and loss, breakevens, probability of profit, Greeks.

A :class:`Position` is calls, puts and stock, long or short, each with a
quantity and the premium paid or received per unit (for stock, its entry
price). All amounts are per unit of the underlying times ``multiplier``
(1 by default; 100 for US equity option contracts).

At expiry the P&L is piecewise linear in the underlying's price ``S_T`` with
kinks at the strikes, so its extremes and zeros are exact: the extremes are at
``S_T = 0``, at a strike, or unbounded beyond the highest strike (when the
slope there is not 0); breakevens are the zeros of each linear piece.
Probability of profit is the lognormal probability of ``S_T`` landing where
the P&L is > 0, with ``ln S_T ~ N(ln S + (mu - sigma^2/2) T, sigma^2 T)``:
``mu = r - q`` is the risk-neutral measure, any other ``mu`` a real-world drift.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.pricing.bsm import PricingError, bsm_greeks, ndtr

LEG_KINDS = ("call", "put", "stock")
SIDES = ("long", "short")
GREEKS = ("delta", "gamma", "vega", "theta", "rho")


@dataclass(frozen=True)
class Leg:
    """One leg: ``side`` ``kind`` x ``quantity`` at ``strike``, opened at ``premium`` per unit.

    Raises:
        PricingError: Unknown kind or side, quantity <= 0, a strike <= 0 (or
            missing for an option, given for stock), a negative or non-finite premium.
    """

    kind: str
    side: str
    quantity: float = 1.0
    strike: float | None = None
    premium: float = 0.0

    def __post_init__(self) -> None:
        kind, side = str(self.kind).lower(), str(self.side).lower()
        if kind not in LEG_KINDS:
            raise PricingError(f"leg kind {self.kind!r} is unknown; valid kinds: {list(LEG_KINDS)}")
        if side not in SIDES:
            raise PricingError(f"leg side {self.side!r} is unknown; valid sides: {list(SIDES)}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "side", side)
        if not _finite(self.quantity) or self.quantity <= 0:
            raise PricingError(f"leg quantity must be > 0 (use side='short' to sell); got {self.quantity!r}")
        if kind == "stock":
            if self.strike is not None:
                raise PricingError("a stock leg has no strike")
        elif self.strike is None or not _finite(self.strike) or self.strike <= 0:
            raise PricingError(f"an option leg needs a strike > 0; got {self.strike!r}")
        if not _finite(self.premium) or self.premium < 0:
            raise PricingError(f"leg premium must be a finite number >= 0 (per unit); got {self.premium!r}")

    @property
    def sign(self) -> float:
        return 1.0 if self.side == "long" else -1.0

    def value_at_expiry(self, spot: np.ndarray) -> np.ndarray:
        """Value per unit at expiry (before sign and quantity)."""
        if self.kind == "stock":
            return spot
        if self.kind == "call":
            return np.maximum(spot - self.strike, 0.0)
        return np.maximum(self.strike - spot, 0.0)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class Position:
    """Legs sharing one expiry (see module doc)."""

    legs: tuple[Leg, ...]
    multiplier: float = 1.0

    def __init__(self, legs: Iterable[Leg], multiplier: float = 1.0) -> None:
        legs = tuple(legs)
        if not legs:
            raise PricingError("a position needs at least one leg")
        if not all(isinstance(leg, Leg) for leg in legs):
            raise PricingError("every leg must be a Leg")
        if not _finite(multiplier) or multiplier <= 0:
            raise PricingError(f"multiplier must be > 0; got {multiplier!r}")
        object.__setattr__(self, "legs", legs)
        object.__setattr__(self, "multiplier", float(multiplier))

    # ---------------------------------------------------------------- at expiry
    @property
    def net_premium(self) -> float:
        """Paid to open (> 0 a net debit, < 0 a net credit), times the multiplier."""
        return self.multiplier * sum(leg.sign * leg.quantity * leg.premium for leg in self.legs)

    def pnl(self, spot_at_expiry: Any) -> Any:
        """P&L at expiry for underlying price(s) ``S_T`` (premiums included)."""
        s = np.asarray(spot_at_expiry, dtype=float)
        total = np.zeros(s.shape)
        for leg in self.legs:
            total = total + leg.sign * leg.quantity * (leg.value_at_expiry(s) - leg.premium)
        total = total * self.multiplier
        return float(total) if total.ndim == 0 else total

    def kinks(self) -> list[float]:
        """0 and the strikes, sorted and distinct."""
        return sorted({0.0, *(float(leg.strike) for leg in self.legs if leg.strike is not None)})

    def slope_above(self) -> float:
        """d P&L / d S_T beyond the highest strike."""
        return self.multiplier * sum(leg.sign * leg.quantity for leg in self.legs if leg.kind in ("call", "stock"))

    def max_profit(self) -> float:
        """Largest P&L at expiry (``inf`` when unbounded)."""
        if self.slope_above() > 1e-12:
            return math.inf
        return float(max(self.pnl(k) for k in self.kinks()))

    def max_loss(self) -> float:
        """Largest loss at expiry as a positive number (0 if the position cannot lose; ``inf`` when unbounded)."""
        if self.slope_above() < -1e-12:
            return math.inf
        return float(max(0.0, -min(self.pnl(k) for k in self.kinks())))

    def breakevens(self) -> list[float]:
        """Prices ``S_T > 0`` where the P&L at expiry crosses 0, ascending (rounded to 1e-9)."""
        points = self.kinks()
        out: list[float] = []
        values = [self.pnl(x) for x in points]
        for (a, va), (b, vb) in zip(zip(points, values, strict=True), zip(points[1:], values[1:], strict=True),
                                    strict=False):
            if va == 0.0 and a > 0:
                out.append(a)
            if (va < 0 < vb) or (va > 0 > vb):
                out.append(a + (b - a) * (-va) / (vb - va))
        last, v_last = points[-1], values[-1]
        if v_last == 0.0 and last > 0:
            out.append(last)
        slope = self.slope_above()
        if abs(slope) > 1e-12 and v_last * slope < 0:
            out.append(last - v_last / slope)
        return sorted({round(x, 9) for x in out})

    def probability_of_profit(self, spot: float, T: float, sigma: float, mu: float) -> float:
        """P(P&L at expiry > 0) with ``S_T`` lognormal (see module doc).

        Raises:
            PricingError: spot, T or sigma not > 0, or mu not finite.
        """
        for name, value in (("spot", spot), ("T", T), ("sigma", sigma)):
            if not _finite(value) or value <= 0:
                raise PricingError(f"{name} must be > 0; got {value!r}")
        if not _finite(mu):
            raise PricingError(f"mu must be finite; got {mu!r}")
        edges = [0.0, *self.breakevens(), math.inf]
        m = math.log(spot) + (mu - 0.5 * sigma * sigma) * T
        sd = sigma * math.sqrt(T)

        def cdf(x: float) -> float:
            if x <= 0:
                return 0.0
            if math.isinf(x):
                return 1.0
            return float(ndtr((math.log(x) - m) / sd))

        prob = 0.0
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            if b <= a:
                continue
            probe = a + 1.0 if math.isinf(b) else 0.5 * (a + b)
            if self.pnl(probe) > 0:
                prob += cdf(b) - cdf(a)
        return prob

    # ---------------------------------------------------------------- before expiry
    def greeks(self, spot: float, T: float, r: float, q: float, sigma: float) -> dict[str, float]:
        """Position Greeks (units of :mod:`finenvs.pricing.bsm`): options by BSM, stock delta 1 per unit."""
        out = dict.fromkeys(("value", *GREEKS), 0.0)
        for leg in self.legs:
            scale = leg.sign * leg.quantity * self.multiplier
            if leg.kind == "stock":
                out["value"] += scale * spot
                out["delta"] += scale
                continue
            g = bsm_greeks(spot, leg.strike, T, r, q, sigma, leg.kind)
            out["value"] += scale * g["price"]
            for name in GREEKS:
                out[name] += scale * g[name]
        return out


__all__ = ["GREEKS", "LEG_KINDS", "SIDES", "Leg", "Position"]
