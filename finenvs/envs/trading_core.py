"""Pure core of FinTrading-v0: parameters, state, ``observe`` and ``transition``.

Nothing here imports gymnasium or duckdb. State is an immutable value and every
function is pure, so the accounting and the date lock can be tested with
hand-made states; the Gymnasium shell (:mod:`finenvs.envs.trading`) and later
shells (vector, text, MCP) call the same functions.

Book (one asset, fixed shares while a position is held)
    * Action ``a`` in {SELL=0, HOLD=1, BUY=2} is the *target position* for the
      next day: BUY long, SELL short (flat when ``allow_short`` is False), HOLD flat.
    * Entering from flat pays ``fee`` x equity; the remaining equity is invested
      in full (``shares = +-equity / price``), and the share count is then fixed
      while the position is held (no rebalancing).
    * Exiting pays ``fee`` x the market value of the shares traded
      (``|shares| x price``). A reversal is an exit followed by an entry.
    * A target equal to the current position trades nothing and pays nothing.
    * Equity = cash + shares x price, marked at each close.
    * ``fill="close"``: the decision taken at the close of day t trades at that
      close; the new position earns close_t -> close_{t+1}.
      ``fill="next_open"``: the old position is held to the next open (it earns
      the overnight gap), the trade executes at open_{t+1}, and the new position
      earns open_{t+1} -> close_{t+1}.
    * The window's last close closes any open position (exit fee paid there) and
      the episode is truncated.
    * Ruin: if equity falls to 0 or below it is set to 0, the position is
      dropped and the episode terminates. The log-return reward of that step is
      ``RUIN_LOG_RETURN``.

Rewards
    ``log_return``: log(E_{t+1} / E_t), E marked at successive closes (fees
    included), so the episode's rewards sum to log(final equity).
    ``dsr``: Moody & Saffell's differential Sharpe ratio of the simple return
    R_t = E_{t+1}/E_t - 1 with adaptation rate eta:
    D_t = (B_{t-1} dA_t - A_{t-1} dB_t / 2) / (B_{t-1} - A_{t-1}^2)^{3/2},
    dA_t = R_t - A_{t-1}, dB_t = R_t^2 - B_{t-1}; A, B start at 0 and D_t is 0
    while B_{t-1} - A_{t-1}^2 <= ``DSR_MIN_VARIANCE`` (no variance estimate yet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from finenvs.data.schema import PriceSeries
from finenvs.envs.features import FEATURE_BOUND, N_FEATURES, compute_features

SELL, HOLD, BUY = 0, 1, 2
ACTION_NAMES = ("SELL", "HOLD", "BUY")
SCALAR_NAMES = ("position", "time_remaining", "position_log_return")
N_SCALARS = len(SCALAR_NAMES)
RUIN_LOG_RETURN = math.log(1e-9)
DSR_MIN_VARIANCE = 1e-12
FILLS = ("close", "next_open")
REWARDS = ("log_return", "dsr")


@dataclass(frozen=True)
class TradingParams:
    """Constants of an episode's dynamics.

    Attributes:
        fee: Fee as a fraction of traded notional (5 bps = 0.0005).
        allow_short: SELL opens a short when True, goes flat when False.
        fill: ``"close"`` or ``"next_open"`` (see module doc).
        reward: ``"log_return"`` or ``"dsr"``.
        dsr_eta: Adaptation rate of the differential Sharpe ratio.
        window: Days of features in an observation.
    """

    fee: float = 0.0005
    allow_short: bool = True
    fill: str = "close"
    reward: str = "log_return"
    dsr_eta: float = 0.01
    window: int = 30

    @property
    def obs_size(self) -> int:
        return self.window * N_FEATURES + N_SCALARS


@dataclass(frozen=True, eq=False)
class MarketData:
    """Read-only arrays of one symbol that an episode runs on.

    ``features`` is row-aligned with ``dates`` (see :mod:`finenvs.envs.features`);
    ``flat_features`` is the same memory raveled for fast window slices.
    """

    symbol: str
    dates: np.ndarray
    date_strings: tuple[str, ...]
    open: np.ndarray
    close: np.ndarray
    features: np.ndarray
    flat_features: np.ndarray

    @classmethod
    def from_series(cls, series: PriceSeries) -> MarketData:
        feats = compute_features(series)
        flat = feats.reshape(-1)
        flat.setflags(write=False)
        return cls(
            symbol=series.symbol,
            dates=series.dates,
            date_strings=tuple(np.datetime_as_string(series.dates, unit="D").tolist()),
            open=series.open,
            close=series.close,
            features=feats,
            flat_features=flat,
        )

    def __len__(self) -> int:
        return int(self.dates.shape[0])


@dataclass(frozen=True, slots=True)
class TradingState:
    """Everything that changes during an episode.

    Attributes:
        t: Row index of the current decision day (its close is "now").
        start: Row index of the episode's first decision day.
        end: Row index of the episode's last day (the close-out).
        position: -1, 0 or +1: the position held from this close.
        shares: Signed share count of that position.
        cash: Cash (includes short-sale proceeds).
        equity: cash + shares x close_t.
        entry_equity: Equity right after the current position's entry (1 if flat).
        fees_paid: Cumulative fees.
        dsr_a, dsr_b: Differential Sharpe ratio moving moments.
        ruined: Equity reached 0.
    """

    t: int
    start: int
    end: int
    position: int = 0
    shares: float = 0.0
    cash: float = 1.0
    equity: float = 1.0
    entry_equity: float = 1.0
    fees_paid: float = 0.0
    dsr_a: float = 0.0
    dsr_b: float = 0.0
    ruined: bool = False

    @property
    def done(self) -> bool:
        return self.ruined or self.t >= self.end


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What one transition produced besides the new state.

    Attributes:
        reward: Per ``TradingParams.reward``.
        step_return: Simple return of equity over the step, E_{t+1}/E_t - 1.
        held: Position held over the day that just ended (the exposure behind the step's return).
        equity_at_decision: Equity at the decision close after any trade executed at
            that close (what the ``herculean`` preset records for that day).
        fee: Fees paid during this step.
        closed_out: The window's end closed an open position at this step.
        terminated: Ruin.
        truncated: The window ran out.
    """

    reward: float
    step_return: float
    held: int
    equity_at_decision: float
    fee: float
    closed_out: bool
    terminated: bool
    truncated: bool


def initial_state(start: int, end: int) -> TradingState:
    """Flat book with equity 1 at the close of row ``start``."""
    return TradingState(t=start, start=start, end=end)


def target_position(action: int, params: TradingParams) -> int:
    """Target position of an action (SELL is flat when shorting is not allowed)."""
    if action == BUY:
        return 1
    if action == SELL:
        return -1 if params.allow_short else 0
    return 0


def _trade(
    position: int, shares: float, cash: float, equity: float, target: int, price: float, fee: float
) -> tuple[int, float, float, float, float]:
    """Move the book to ``target`` at ``price`` (equity is marked at ``price``).

    Returns:
        (position, shares, cash, equity, fee paid)
    """
    paid = 0.0
    if position != 0:
        exit_fee = fee * abs(shares) * price
        equity -= exit_fee
        paid += exit_fee
        shares = 0.0
        cash = equity
        position = 0
    if target != 0:
        entry_fee = fee * equity
        equity -= entry_fee
        paid += entry_fee
        shares = target * equity / price
        cash = equity - shares * price
        position = target
    return position, shares, cash, equity, paid


def observe(market: MarketData, params: TradingParams, state: TradingState) -> np.ndarray:
    """Observation at the close of day ``state.t`` (a fresh float32 array).

    Layout: ``window`` rows of features, oldest first (rows t-window+1 .. t,
    row-major, ``N_FEATURES`` per row), then ``position``, ``time_remaining``
    (1 at the first decision, 0 at the last close) and ``position_log_return``
    (log of equity over equity at entry; 0 when flat). Only rows <= t are read.
    """
    t = state.t
    w = params.window
    obs = np.empty(w * N_FEATURES + N_SCALARS, dtype=np.float32)
    obs[: w * N_FEATURES] = market.flat_features[(t - w + 1) * N_FEATURES : (t + 1) * N_FEATURES]
    span = state.end - state.start
    obs[-3] = state.position
    obs[-2] = (state.end - t) / span if span > 0 else 0.0
    if state.position != 0 and state.equity > 0.0:
        pr = math.log(state.equity / state.entry_equity)
        obs[-1] = FEATURE_BOUND if pr > FEATURE_BOUND else (-FEATURE_BOUND if pr < -FEATURE_BOUND else pr)
    else:
        obs[-1] = 0.0
    return obs


def transition(
    market: MarketData, params: TradingParams, state: TradingState, action: int
) -> tuple[TradingState, StepOutcome]:
    """Apply ``action`` at the close of day ``state.t`` and advance to the next close.

    ``action`` must already be validated (0, 1 or 2) and ``state`` not done.
    """
    t = state.t
    nt = t + 1
    fee = params.fee
    position, shares, cash, equity = state.position, state.shares, state.cash, state.equity
    entry_equity = state.entry_equity
    target = target_position(action, params)
    paid = 0.0
    ruined = False
    if params.fill == "close":
        if target != position:
            position, shares, cash, equity, paid = _trade(
                position, shares, cash, equity, target, float(market.close[t]), fee
            )
            entry_equity = equity
        equity_at_decision = equity
    else:  # next_open: hold to the open, trade there
        equity_at_decision = equity
        if target != position:
            price_open = float(market.open[nt])
            equity_open = cash + shares * price_open
            if equity_open <= 0.0:
                ruined = True
            else:
                position, shares, cash, _, paid = _trade(
                    position, shares, cash, equity_open, target, price_open, fee
                )
                entry_equity = cash + shares * price_open
    held = position
    price_close = float(market.close[nt])
    new_equity = cash + shares * price_close
    if ruined or new_equity <= 0.0:
        ruined = True
        new_equity = 0.0
        position, shares, cash = 0, 0.0, 0.0
    closed_out = False
    truncated = nt >= state.end and not ruined
    if truncated and position != 0:
        position, shares, cash, new_equity, exit_paid = _trade(
            position, shares, cash, new_equity, 0, price_close, fee
        )
        paid += exit_paid
        closed_out = True
    old_equity = state.equity
    step_return = new_equity / old_equity - 1.0
    dsr_a, dsr_b = state.dsr_a, state.dsr_b
    if params.reward == "log_return":
        reward = math.log(new_equity / old_equity) if new_equity > 0.0 else RUIN_LOG_RETURN
    else:
        delta_a = step_return - dsr_a
        delta_b = step_return * step_return - dsr_b
        variance = dsr_b - dsr_a * dsr_a
        reward = (dsr_b * delta_a - 0.5 * dsr_a * delta_b) / variance**1.5 if variance > DSR_MIN_VARIANCE else 0.0
        dsr_a += params.dsr_eta * delta_a
        dsr_b += params.dsr_eta * delta_b
    new_state = TradingState(
        nt,
        state.start,
        state.end,
        position,
        shares,
        cash,
        new_equity,
        entry_equity if position != 0 else 1.0,
        state.fees_paid + paid,
        dsr_a,
        dsr_b,
        ruined,
    )
    outcome = StepOutcome(
        reward, step_return, held, equity_at_decision, paid, closed_out, ruined, truncated
    )
    return new_state, outcome
