"""Pure core of FinDeltaHedge-v0: the path, the option priced along it, the book's state and its transition.

Nothing here imports gymnasium or duckdb. An episode's constants are an immutable
:class:`HedgeEpisode`, the book's state an immutable tuple (:class:`HedgeState` order),
and every function is pure, so the accounting is testable with hand-made paths; the
Gymnasium shell (:mod:`finenvs.tasks.deltahedge.env`) calls the same functions:

* :func:`simulate_path` draws a spot path on the rebalancing grid (GBM, Heston, Merton)
  from the generator passed in;
* :func:`make_episode` prices the option along a path once per reset (Black-Scholes
  value and delta at every grid point, the payoff at expiry) into a :class:`HedgeEpisode`;
* :func:`initial_state`, :func:`observe`, :func:`transition` and :func:`hedging_error`
  read only that episode and a state;
* :func:`hedge_ratio` and :func:`hedge_action` map the normalised box action to the
  hedge ratio and back.

Time convention
    Year fractions here are *trading* days / 252 (``TRADING_DAYS_PER_YEAR``) for the
    simulation and for pricing alike: an option of ``maturity_days`` trading days
    has ``T = maturity_days / 252`` years and a rebalancing step lasts
    ``1 / (252 * steps_per_day)`` years. This differs from :mod:`finenvs.pricing`,
    whose ``T`` is calendar days / 365, so this module passes ``T`` to
    :func:`~finenvs.pricing.bsm_price` / :func:`~finenvs.pricing.bsm_greeks` itself.

Book (the agent is short one option and hedges it with ``h`` shares)
    Write ``S_t`` for the spot at grid point ``t``, ``V_t`` for the option's
    Black-Scholes value at the pricing vol (``V_n`` = the payoff at expiry) and
    ``B_t`` for cash. The book's value is ``Pi_t = B_t + h_t S_t - V_t``.

    * Reset: the option is sold at its Black-Scholes price, ``B_0 = V_0``, ``h = 0``,
      so ``Pi_0 = 0``.
    * Step ``t -> t+1`` with action ``h'``: buy ``h' - h`` shares at ``S_t`` paying
      ``cost = cost_bps / 10^4 * |h' - h| * S_t``; the cash left after the trade
      earns ``expm1(r dt)`` and the shares a dividend ``h' S_t expm1(q dt)``.
    * Step P&L ``= Pi_{t+1} - Pi_t = h' (S_{t+1} - S_t) + dividend + interest
      - (V_{t+1} - V_t) - cost``.
    * Final hedging error ``= Pi_n = B_n + h S_n - payoff``: the hedge is marked
      at ``S_n``, not liquidated (no closing cost); 0 for a perfect hedge. It is the
      sum of the step P&Ls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from finenvs.pricing import bsm_greeks

OPTIONS = ("call", "put")
#: Largest absolute hedge ratio (shares per option) an action can set.
MAX_HEDGE = 1.5
#: Observation layout, one name per index.
OBS_NAMES = ("log_moneyness", "time_to_expiry", "vol_sqrt_tau", "hedge", "option_value", "delta")
LOG_MONEYNESS, TIME_TO_EXPIRY, VOL_SQRT_TAU, HEDGE, OPTION_VALUE, DELTA = range(len(OBS_NAMES))
#: Clip bounds of the observation entries that have no natural bound.
LOG_MONEYNESS_BOUND = 10.0
VOL_SQRT_TAU_BOUND = 10.0
OPTION_VALUE_BOUND = 10.0


def simulate_path(
    model: str, params: Any, spot: float, n_steps: int, dt: float, rng: np.random.Generator
) -> np.ndarray:
    """Spot at the ``n_steps + 1`` points of a grid of step ``dt`` years, starting at ``spot``.

    Args:
        model: ``"gbm"``, ``"heston"`` (full-truncation Euler) or ``"merton"``
            (compensated log-normal jumps), with the dynamics documented in
            :mod:`finenvs.data.synthetic`.
        params: The model's :class:`~finenvs.data.synthetic.GBMParams`,
            :class:`~finenvs.data.synthetic.HestonParams` or :class:`~finenvs.data.synthetic.MertonParams`.
        spot: Spot at grid point 0 (> 0).
        n_steps: Number of steps (>= 1).
        dt: Step length in years.
        rng: The only source of randomness.

    Returns:
        A read-only float64 array of shape ``(n_steps + 1,)``.
    """
    p = params
    sqrt_dt = math.sqrt(dt)
    if model == "gbm":
        z = rng.standard_normal(n_steps)
        inc = (p.mu - 0.5 * p.sigma**2) * dt + p.sigma * sqrt_dt * z
    elif model == "merton":
        z = rng.standard_normal(n_steps)
        n_jumps = rng.poisson(p.jump_intensity * dt, n_steps)
        jumps = n_jumps * p.jump_mean + np.sqrt(n_jumps) * p.jump_std * rng.standard_normal(n_steps)
        k = math.exp(p.jump_mean + 0.5 * p.jump_std**2) - 1.0
        inc = (p.mu - p.jump_intensity * k - 0.5 * p.sigma**2) * dt + p.sigma * sqrt_dt * z + jumps
    elif model == "heston":
        z = rng.standard_normal((2, n_steps))
        z1 = z[0].tolist()
        z2 = (p.rho * z[0] + math.sqrt(1.0 - p.rho**2) * z[1]).tolist()
        out = [0.0] * n_steps
        v = p.v0
        for i in range(n_steps):
            vp = v if v > 0.0 else 0.0
            sv = math.sqrt(vp * dt)
            out[i] = (p.mu - 0.5 * vp) * dt + sv * z1[i]
            v = v + p.kappa * (p.theta - vp) * dt + p.xi * sv * z2[i]
        inc = np.asarray(out)
    else:
        raise ValueError(f"model={model!r}; valid models: ['gbm', 'heston', 'merton']")
    path = spot * np.exp(np.concatenate(([0.0], np.cumsum(inc))))
    path[0] = spot
    path.setflags(write=False)
    return path


@dataclass(frozen=True, eq=False)
class HedgeEpisode:
    """Constants of one episode: the path, the option priced along it, and the book's parameters.

    Built once per reset by :func:`make_episode`. Grid point ``t`` has spot
    ``spots[t]``, option value ``values[t]`` (Black-Scholes at ``pricing_vol``;
    ``values[n_steps]`` is the payoff) and Black-Scholes delta ``deltas[t]``
    (``deltas[n_steps]`` is the payoff's delta: 1/0 for a call, -1/0 for a put).
    ``obs_rows[t]`` is the observation at grid point ``t`` with a zero hedge.
    Entry ``t`` of every array depends on ``spots[t]`` and the constants only.

    Attributes:
        option: ``"call"`` or ``"put"``.
        strike: Strike ``K``.
        spot0: Spot at the start (the scale of rewards and ``hedging_error_pct``).
        pricing_vol: Annual volatility the option is priced and delta-ed at.
        maturity: Years to expiry at the start (trading days / 252).
        dt: Years per step.
        n_steps: Rebalancing steps until expiry.
        fee: Cost as a fraction of traded notional (``cost_bps / 10^4``).
        interest_growth: ``expm1(r dt)``: interest per unit of cash per step.
        dividend_growth: ``expm1(q dt)``: dividend per unit of share value per step.
        pnl_scale: ``100 / spot0``: step P&L to percent of the initial spot.
        reward_scale: Multiplies the squared percent P&L.
        spots, values, deltas: Per grid point, as tuples of floats (fast scalar reads).
        obs_rows: ``(n_steps + 1, 6)`` float32, read-only.
        dates: Trading dates of the grid points (real paths), else None.
    """

    option: str
    strike: float
    spot0: float
    pricing_vol: float
    maturity: float
    dt: float
    n_steps: int
    fee: float
    interest_growth: float
    dividend_growth: float
    pnl_scale: float
    reward_scale: float
    spots: tuple[float, ...]
    values: tuple[float, ...]
    deltas: tuple[float, ...]
    obs_rows: np.ndarray
    dates: tuple[str, ...] | None = None

    @property
    def premium(self) -> float:
        """The Black-Scholes price the option was sold at."""
        return self.values[0]

    @property
    def payoff(self) -> float:
        """The option's payoff at expiry."""
        return self.values[-1]


def make_episode(
    spots: np.ndarray,
    *,
    option: str,
    strike: float,
    dt: float,
    r: float,
    q: float,
    pricing_vol: float,
    fee: float,
    reward_scale: float = 1.0,
    dates: tuple[str, ...] | None = None,
) -> HedgeEpisode:
    """Price the option along ``spots`` (grid step ``dt`` years, expiry at the last point)."""
    spots = np.asarray(spots, dtype=np.float64)
    n = spots.shape[0] - 1
    if n < 1:
        raise ValueError(f"a path needs at least 2 points (one step); got {spots.shape[0]}")
    tau = (n - np.arange(n + 1)) * dt
    greeks = bsm_greeks(spots[:n], strike, tau[:n], r, q, pricing_vol, option)
    values = np.empty(n + 1)
    deltas = np.empty(n + 1)
    values[:n] = greeks["price"]
    deltas[:n] = greeks["delta"]
    s_t = spots[n]
    if option == "call":
        values[n] = max(s_t - strike, 0.0)
        deltas[n] = 1.0 if s_t > strike else 0.0
    else:
        values[n] = max(strike - s_t, 0.0)
        deltas[n] = -1.0 if s_t < strike else 0.0
    spot0 = float(spots[0])
    rows = np.zeros((n + 1, len(OBS_NAMES)), dtype=np.float64)
    rows[:, LOG_MONEYNESS] = np.clip(np.log(spots / strike), -LOG_MONEYNESS_BOUND, LOG_MONEYNESS_BOUND)
    rows[:, TIME_TO_EXPIRY] = tau
    rows[:, VOL_SQRT_TAU] = np.clip(pricing_vol * np.sqrt(tau), 0.0, VOL_SQRT_TAU_BOUND)
    rows[:, OPTION_VALUE] = np.clip(values / spot0, 0.0, OPTION_VALUE_BOUND)
    rows[:, DELTA] = np.clip(deltas, -1.0, 1.0)
    obs_rows = rows.astype(np.float32)
    obs_rows.setflags(write=False)
    return HedgeEpisode(
        option=option,
        strike=float(strike),
        spot0=spot0,
        pricing_vol=float(pricing_vol),
        maturity=float(tau[0]),
        dt=float(dt),
        n_steps=n,
        fee=float(fee),
        interest_growth=math.expm1(r * dt),
        dividend_growth=math.expm1(q * dt),
        pnl_scale=100.0 / spot0,
        reward_scale=float(reward_scale),
        spots=tuple(spots.tolist()),
        values=tuple(values.tolist()),
        deltas=tuple(deltas.tolist()),
        obs_rows=obs_rows,
        dates=dates,
    )


class HedgeState(NamedTuple):
    """Everything that changes during an episode (``transition`` returns plain tuples in this order).

    Attributes:
        t: Current grid point (0 at the start, ``n_steps`` at expiry).
        hedge: Shares per option held (set at the previous step; 0 at the start).
        cash: Cash, premium included.
        pnl: Cumulative hedging P&L (the book's value ``cash + hedge * S_t - V_t``, up to rounding).
        costs: Cumulative transaction costs.
    """

    t: int
    hedge: float
    cash: float
    pnl: float = 0.0
    costs: float = 0.0


def initial_state(ep: HedgeEpisode) -> tuple:
    """The option just sold: premium in cash, no shares."""
    return (0, 0.0, ep.values[0], 0.0, 0.0)


def observe(ep: HedgeEpisode, state: tuple) -> np.ndarray:
    """Observation at grid point ``state.t`` (a fresh float32 array; see ``OBS_NAMES``)."""
    obs = ep.obs_rows[state[0]].copy()
    obs[HEDGE] = state[1]
    return obs


def transition(ep: HedgeEpisode, state: tuple, hedge: float) -> tuple[tuple, tuple[float, float, float]]:
    """Rebalance to ``hedge`` shares at grid point ``t`` and move to ``t + 1`` (see the module doc).

    ``hedge`` must be validated and ``state.t < ep.n_steps``.

    Returns:
        ``(new_state, (reward, step_pnl, cost))``: the state as a :class:`HedgeState`-ordered
        tuple; reward ``= -(step_pnl * 100 / spot0)^2 * reward_scale``.
    """
    t, held, cash, pnl, costs = state
    s = ep.spots[t]
    s1 = ep.spots[t + 1]
    trade = hedge - held
    cost = ep.fee * abs(trade) * s
    cash = cash - trade * s - cost
    interest = cash * ep.interest_growth
    dividend = hedge * s * ep.dividend_growth
    cash += interest + dividend
    step_pnl = hedge * (s1 - s) + dividend + interest - (ep.values[t + 1] - ep.values[t]) - cost
    x = step_pnl * ep.pnl_scale
    return (t + 1, hedge, cash, pnl + step_pnl, costs + cost), (-x * x * ep.reward_scale, step_pnl, cost)


def hedging_error(ep: HedgeEpisode, state: tuple) -> float:
    """The book's value ``cash + hedge * S_t - V_t`` at grid point ``state.t`` (V_n is the payoff)."""
    t = state[0]
    return state[2] + state[1] * ep.spots[t] - ep.values[t]


def hedge_ratio(action: float) -> float:
    """The hedge ratio a normalised box action ``a`` in [-1, 1] sets: ``1.5 * a``, rounded to float32.

    Hedge ratios are float32 values, the precision of the observation that reports them.
    """
    return float(np.float32(action * MAX_HEDGE))


def hedge_action(hedge: float) -> np.ndarray:
    """The normalised box action for the hedge ratio ``hedge`` in [-1.5, 1.5]: ``[hedge / 1.5]`` as float32.

    The inverse of :func:`hedge_ratio`: ``hedge`` is rounded to float32 first, so
    a float64 ratio and its float32 observation give the same action. A ratio the
    env set maps back to an action that sets it again exactly (holding the hedge
    never trades), and so do most float32 ratios (all with a mantissa below 1.5,
    e.g. 0.25, 0.5, 0.53); the others land one float32 step away.
    """
    return np.array([float(np.float32(hedge)) / MAX_HEDGE], dtype=np.float32)


__all__ = [
    "DELTA",
    "HEDGE",
    "LOG_MONEYNESS",
    "LOG_MONEYNESS_BOUND",
    "MAX_HEDGE",
    "OBS_NAMES",
    "OPTIONS",
    "OPTION_VALUE",
    "OPTION_VALUE_BOUND",
    "TIME_TO_EXPIRY",
    "VOL_SQRT_TAU",
    "VOL_SQRT_TAU_BOUND",
    "HedgeEpisode",
    "HedgeState",
    "hedge_action",
    "hedge_ratio",
    "hedging_error",
    "initial_state",
    "make_episode",
    "observe",
    "simulate_path",
    "transition",
]
