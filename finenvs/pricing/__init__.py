"""Option pricing engine: Black-Scholes-Merton (prices, Greeks, implied vol, parity), CRR trees, positions.

Units are documented in :mod:`finenvs.pricing.bsm`: T in years = calendar days / 365,
vega per 1 volatility point, theta per calendar day, rho per 1 rate point.
"""

from finenvs.pricing.binomial import crr_price
from finenvs.pricing.bsm import (
    DAYS_PER_YEAR,
    PricingError,
    bsm_greeks,
    bsm_price,
    implied_vol,
    no_arbitrage_bounds,
    parity_gap,
    year_fraction,
)
from finenvs.pricing.strategy import Leg, Position

__all__ = [
    "DAYS_PER_YEAR",
    "Leg",
    "Position",
    "PricingError",
    "bsm_greeks",
    "bsm_price",
    "crr_price",
    "implied_vol",
    "no_arbitrage_bounds",
    "parity_gap",
    "year_fraction",
]
