"""Option chains: real snapshots (shipped or a user's CSV) and snapshots generated for any shipped date.

A chain is one symbol's calls and puts at one snapshot date: expiry, strike,
bid/ask/last and the vendor's implied volatility per contract
(:class:`OptionChain`; the type and its readers live in :mod:`finenvs.data.option_chain`,
below the catalog, and are re-exported here).

**Real snapshots.** The shipped SPY chain of 2026-05-01 (Yahoo data, 24
expiries) is read through the date lock: :meth:`finenvs.data.asof.AsOfView.option_chain`
shows a snapshot only from the close of its snapshot date on. :func:`load_chain_csv`
reads a user's chain in the same Yahoo layout or the finenvs layout
(:data:`CHAIN_COLUMNS`). Contracts whose implied volatility is 0, missing or
above ``iv_max`` (1.0) are dropped: Yahoo reports placeholders there for
stale deep in-the-money quotes. Their count is kept in ``OptionChain.dropped``.

**Generated snapshots** (:func:`synthetic_chain`) price a full chain for any
date and symbol the as-of view can read, from

* the spot: the last visible close;
* the rate: the last published 3-month T-bill (FRED DTB3, discount basis ``d``
  in % p.a.), turned into a continuously compounded rate with the bill's own
  price: ``P = 1 - d/100 * 91/360``, ``r = -ln(P) / (91/365)``;
* a volatility surface :class:`VolSurface`: realised volatility sets the level,
  and a shape calibrated once to the real SPY chain sets skew and term structure.

The surface (:meth:`VolSurface.iv`), with ``T`` in years, forward
``F = S e^{(r-q)T}``, standardised moneyness ``z = ln(K/F) / sqrt(T)``::

    iv(K, T) = level * (T / T30) ** term * (1 + skew * z + smile * z**2),  clipped to [0.03, 3]

with ``z`` clipped to +-1.5 (the calibrated range). A generated chain's wings are
flattened from the first strike where the skew would make an out-of-the-money
price rise with moneyness (:func:`monotone_wings`): steep short-dated skews on
volatile names otherwise do.

``T30 = 30/365``; ``level`` = ``atm_ratio`` x the 21-day realised volatility
(close-to-close log returns, annualised with 252). :func:`calibrate_surface`
fits ``(level, term, skew, smile)`` by least squares to the out-of-the-money
contracts of a real chain with ``|z| <= 1.5``, 7 to 400 days, bid > 0;
``atm_ratio = level / realised vol`` on the snapshot date. The shipped
constants :data:`SPY_SURFACE` come from the SPY 2026-05-01 chain
(:func:`calibrate_shipped_surface` recomputes them; a test checks they agree).
Generated bid/ask: mid ± half-spread, half-spread = max(0.01, 1% of mid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.data.option_chain import (  # noqa: F401  (the chain type and its readers, re-exported)
    CHAIN_COLUMNS,
    IV_MAX,
    YAHOO_COLUMNS,
    OptionChain,
    chain_from_frame,
    load_chain_csv,
)
from finenvs.errors import DataError

TRADING_DAYS_PER_YEAR = 252
REALISED_VOL_DAYS = 21
T30 = 30.0 / 365.0
IV_CLIP = (0.03, 3.0)
Z_MAX = 1.5  # the calibration's moneyness range; the surface is flat beyond it
#: Default expiries of a generated chain, in calendar days (rolled to the next Friday).
DEFAULT_EXPIRY_DAYS = (7, 14, 30, 60, 90, 180)
#: Default strike range of a generated chain: spot x (1 +/- this).
DEFAULT_STRIKE_RANGE = 0.2
T_BILL_DAYS = 91


# ----------------------------------------------------------------------------- the volatility surface
@dataclass(frozen=True)
class VolSurface:
    """``iv(K, T) = atm_ratio * realised_vol * (T/T30)**term * (1 + skew*z + smile*z^2)`` (module docstring)."""

    atm_ratio: float
    term: float
    skew: float
    smile: float
    calibrated_on: str = ""
    rmse: float = float("nan")  # root-mean-square fit error in volatility units (0.01 = 1 vol point)

    def iv(self, realised_vol: float, spot: float, strike: Any, T: Any, r: float = 0.0, q: float = 0.0) -> Any:
        """Implied volatility of each (strike, T) given the realised vol level (vectorised)."""
        if not (math.isfinite(realised_vol) and realised_vol > 0):
            raise DataError(f"realised volatility must be > 0; got {realised_vol!r}")
        K, T = np.broadcast_arrays(np.asarray(strike, dtype=float), np.asarray(T, dtype=float))
        return _surface(np.array([self.atm_ratio * realised_vol, self.term, self.skew, self.smile]),
                        spot, K, T, r, q)


def _surface(params: np.ndarray, spot: float, K: np.ndarray, T: np.ndarray, r: float, q: float) -> np.ndarray:
    level, term, skew, smile = params
    # flat beyond the calibrated range |z| <= 1.5: the quadratic smile would otherwise keep rising and
    # make far out-of-the-money prices increase with moneyness (an arbitrage)
    z = np.clip((np.log(K / spot) - (r - q) * T) / np.sqrt(T), -Z_MAX, Z_MAX)
    iv = level * (T / T30) ** term * (1.0 + skew * z + smile * z * z)
    return np.clip(iv, *IV_CLIP)


def realised_vol(closes: np.ndarray, days: int = REALISED_VOL_DAYS) -> float:
    """Annualised close-to-close volatility of the last ``days`` log returns (ddof=1, 252 days a year).

    Raises:
        DataError: Fewer than ``days + 1`` closes.
    """
    closes = np.asarray(closes, dtype=float)
    if len(closes) < days + 1:
        raise DataError(f"realised volatility needs {days + 1} closes; got {len(closes)}")
    rets = np.diff(np.log(closes[-(days + 1):]))
    return float(np.std(rets, ddof=1) * math.sqrt(TRADING_DAYS_PER_YEAR))


def tbill_continuous_rate(discount_pct: float, days: int = T_BILL_DAYS) -> float:
    """Continuously compounded rate of a T-bill quoted on the discount basis (% p.a.)."""
    price = 1.0 - discount_pct / 100.0 * days / 360.0
    if not price > 0:
        raise DataError(f"T-bill discount rate {discount_pct}% gives a non-positive price")
    return -math.log(price) / (days / 365.0)


def calibrate_surface(chain: OptionChain, realised: float, r: float = 0.0, q: float = 0.0) -> VolSurface:
    """Fit :class:`VolSurface` to a real chain's out-of-the-money contracts (module docstring)."""
    from scipy.optimize import least_squares

    T = chain.days_to_expiry() / 365.0
    F = chain.spot * np.exp((r - q) * T)
    otm = np.where(chain.option_type == "call", chain.strike >= F, chain.strike < F)
    z = np.log(chain.strike / F) / np.sqrt(np.maximum(T, 1e-9))
    days = chain.days_to_expiry()
    mask = otm & (np.abs(z) <= 1.5) & (days >= 7) & (days <= 400) & (chain.bid > 0)
    if mask.sum() < 10:
        raise DataError(f"calibration needs >= 10 usable contracts; {chain.source} has {int(mask.sum())}")
    K, Tm, iv = chain.strike[mask], T[mask], chain.implied_vol[mask]

    def residuals(p: np.ndarray) -> np.ndarray:
        return _surface(p, chain.spot, K, Tm, r, q) - iv

    fit = least_squares(residuals, x0=np.array([0.2, 0.1, -0.1, 0.02]), method="lm", xtol=1e-14, ftol=1e-14)
    level, term, skew, smile = (float(v) for v in fit.x)
    rmse = float(np.sqrt(np.mean(fit.fun ** 2)))
    return VolSurface(atm_ratio=level / realised, term=term, skew=skew, smile=smile, rmse=rmse,
                      calibrated_on=f"{chain.symbol} {chain.snapshot} ({int(mask.sum())} OTM contracts)")


#: Calibrated once with :func:`calibrate_shipped_surface` on the SPY chain of 2026-05-01 (3,048 OTM
#: contracts, 7-400 days; realised vol 11.60%, r 3.697% from the 2026-03-26 DTB3 print; RMSE 2.2 vol
#: points). ATM 30-day IV = 1.424 x realised vol; the term exponent 0.055 gives a gently rising ATM term
#: structure; skew -0.82 and smile 0.71 per unit of ``z``. The tests recompute these numbers.
SPY_SURFACE = VolSurface(atm_ratio=1.424066208823954, term=0.05453693574936659, skew=-0.8196076775790676,
                         smile=0.7056064035067658, calibrated_on="SPY 2026-05-01 (3048 OTM contracts)",
                         rmse=0.022191906410905782)


def calibrate_shipped_surface(catalog: Any = None) -> tuple[VolSurface, dict[str, float]]:
    """Recompute :data:`SPY_SURFACE` from the shipped SPY chain and the catalog's prices and T-bill rate.

    Returns:
        The surface and its inputs (``realised_vol``, ``rate``).
    """
    from finenvs.data.catalog import default_catalog

    catalog = catalog if catalog is not None else default_catalog()
    view = catalog.as_of("2026-05-01")
    chain = view.option_chain("SPY")
    realised = realised_vol(view.prices("SPY", lookback=REALISED_VOL_DAYS + 1).close)
    r = tbill_continuous_rate(view.rate("DTB3")[1])
    return calibrate_surface(chain, realised, r=r), {"realised_vol": realised, "rate": r}


# ----------------------------------------------------------------------------- generated chains
def strike_step(spot: float) -> float:
    """Listed-strike spacing by price level: about 1% of spot rounded to 1, 2.5 or 5 x 10^k."""
    raw = 0.01 * spot
    power = 10.0 ** math.floor(math.log10(raw))
    for unit in (1.0, 2.5, 5.0, 10.0):
        if raw <= unit * power:
            return unit * power
    return 10.0 * power  # pragma: no cover


def friday_expiries(as_of: np.datetime64, days: Any) -> np.ndarray:
    """``as_of + d`` calendar days rolled forward to a Friday, for each ``d`` (unique, ascending)."""
    out = []
    for d in days:
        day = as_of + np.timedelta64(int(d), "D")
        weekday = (day.astype("datetime64[D]").astype(int) - 4) % 7  # 1970-01-01 was a Thursday -> 0 = Mon
        day = day + np.timedelta64((4 - weekday) % 7, "D")
        out.append(day)
    return np.unique(np.array(out, dtype="datetime64[D]"))


def monotone_wings(spot: float, strikes: np.ndarray, T: float, r: float, q: float, iv: np.ndarray) -> np.ndarray:
    """One expiry's smile with flat wings from the first strike where a steep skew would break monotonicity.

    Out-of-the-money calls must get cheaper as the strike rises and puts as it
    falls; walking out from the forward, a vol that would break that is replaced
    by the previous strike's (a flat wing keeps BSM prices monotone).
    """
    from finenvs.pricing import bsm_price

    iv = np.array(iv, dtype=float)
    forward = spot * math.exp((r - q) * T)
    up = np.flatnonzero(strikes >= forward)
    down = np.flatnonzero(strikes < forward)[::-1]
    for order, kind in ((up, "call"), (down, "put")):
        if not len(order):
            continue
        # every strike's price at its own vol in one call; a strike is repriced only when its vol is replaced
        first = np.asarray(bsm_price(spot, strikes[order], T, r, q, iv[order], kind), dtype=float).reshape(-1)
        prev = None
        for j, i in enumerate(order):
            price = float(first[j])
            if prev is not None and price > prev[1]:
                iv[i] = iv[prev[0]]
                price = float(bsm_price(spot, strikes[i], T, r, q, iv[i], kind))
            prev = (i, price)
    return iv


def synthetic_chain(view: Any, symbol: str, *, expiry_days: Any = DEFAULT_EXPIRY_DAYS,
                    strike_range: float = DEFAULT_STRIKE_RANGE, surface: VolSurface | None = None,
                    dividend_yield: float = 0.0) -> OptionChain:
    """Price a full chain of ``symbol`` at the view's date from date-locked inputs (module docstring).

    Args:
        view: An :class:`~finenvs.data.asof.AsOfView` (its clock is the snapshot date).
        symbol: A symbol the view reads.
        expiry_days: Calendar days to each expiry (rolled to the next Friday).
        strike_range: Strikes from spot x (1 - range) to spot x (1 + range) at :func:`strike_step` spacing.
        surface: The volatility surface (default :data:`SPY_SURFACE`).
        dividend_yield: Continuous dividend yield q.

    Raises:
        DataError: Too little price history for the realised volatility, no rate published.
    """
    from finenvs.pricing import bsm_price

    surface = surface if surface is not None else SPY_SURFACE
    closes = view.prices(symbol, lookback=REALISED_VOL_DAYS + 1).close
    realised = realised_vol(closes)
    spot = float(closes[-1])
    rate_date, discount = view.rate("DTB3")
    r = tbill_continuous_rate(discount)
    step = strike_step(spot)
    strikes = step * np.arange(math.ceil(spot * (1 - strike_range) / step),
                               math.floor(spot * (1 + strike_range) / step) + 1)
    expiries = friday_expiries(view.as_of, expiry_days)
    days = (expiries - view.as_of).astype(int)
    K = np.tile(strikes, 2 * len(expiries))
    T = np.repeat(days / 365.0, 2 * len(strikes))
    kinds = np.tile(np.repeat(np.array(["call", "put"], dtype=object), len(strikes)), len(expiries))
    smile = np.stack([monotone_wings(spot, strikes, d / 365.0, r, dividend_yield,
                                     surface.iv(realised, spot, strikes, d / 365.0, r=r, q=dividend_yield))
                      for d in days])  # (expiry, strike)
    iv = np.repeat(smile, 2, axis=0).reshape(-1)  # calls then puts of each expiry share the strike's vol
    mid = np.asarray(bsm_price(spot, K, T, r, dividend_yield, iv, kinds), dtype=float)
    half = np.maximum(0.01, 0.01 * mid)
    zeros = np.zeros_like(K)
    return OptionChain(
        symbol=symbol, snapshot=view.as_of, spot=spot, expiry=np.repeat(expiries, 2 * len(strikes)),
        option_type=kinds, strike=K, bid=np.maximum(mid - half, 0.0), ask=mid + half, last=mid,
        implied_vol=iv, volume=zeros, open_interest=zeros, source="generated", rate=r,
        dividend_yield=dividend_yield,
        meta={"realised_vol": realised, "rate_date": rate_date, "tbill_discount_pct": discount,
              "surface": surface.calibrated_on},
    )
