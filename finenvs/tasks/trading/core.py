"""Pure core of FinTrading-v0: parameters, state, ``observe`` and ``transition``.

Nothing here imports gymnasium or duckdb. State is an immutable value and every
function is pure, so the accounting and the date lock can be tested with
hand-made states; the Gymnasium shell (:mod:`finenvs.tasks.trading.env`) and later
shells (vector, text, MCP) call the same functions.

Book (one asset, fixed shares while a position is held)
    * Action ``a`` in {SELL=0, HOLD=1, BUY=2} is the *target position* for the
      next day: BUY long, SELL short (flat when ``allow_short`` is False), HOLD flat.
    * Entering from flat pays ``fee`` x equity; the remaining equity is invested
      in full (``shares = +-equity / price``), and the share count is then fixed
      while the position is held (no rebalancing).
    * Exiting pays ``fee`` x the market value of the shares traded
      (``|shares| x price``). A reversal is an exit followed by an entry.
      ``short_exit_fee="equity"`` charges a short's exit fee on the short's
      equity instead (its collateral plus its profit, ``2 |shares| x
      entry price - |shares| x price``; for a full short the book's equity),
      as HERCULEAN's reference scorer does; a long's exit fee is unchanged
      (a full long's equity is its shares' value).
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

import array
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from finenvs.data.schema import PriceSeries
from finenvs.tasks.trading.features import FEATURE_BOUND, N_FEATURES, compute_features

SELL, HOLD, BUY = 0, 1, 2
ACTION_NAMES = ("SELL", "HOLD", "BUY")
SCALAR_NAMES = ("position", "time_remaining", "position_log_return")
N_SCALARS = len(SCALAR_NAMES)
RUIN_LOG_RETURN = math.log(1e-9)
_log = math.log  # one global read per call in the step loop instead of two
DSR_MIN_VARIANCE = 1e-12
FILLS = ("close", "next_open")
#: What a short's exit fee is charged on: the shares bought back (finenvs) or the short's equity (the reference's).
SHORT_EXIT_FEES = ("shares", "equity")
REWARDS = ("log_return", "dsr")
#: Above this many rows a market keeps its per-day values compactly (prices in an ``array.array``, dates
#: formatted when read) and an episode builds its observation templates ``OBS_BLOCK_ROWS`` at a time, so
#: memory stays proportional to the bars (a million bars: ~100 MB, not ~1 GB). The shipped series are shorter.
COMPACT_ROWS = 50_000
OBS_BLOCK_ROWS = 4_096


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
        short_exit_fee: ``"shares"`` (the fee on the market value of the shares bought back) or ``"equity"``
            (on the short's equity at the exit, as HERCULEAN's reference scorer charges it); see module doc.
    """

    fee: float = 0.0005
    allow_short: bool = True
    fill: str = "close"
    reward: str = "log_return"
    dsr_eta: float = 0.01
    window: int = 30
    short_exit_fee: str = "shares"

    @property
    def obs_size(self) -> int:
        return self.window * N_FEATURES + N_SCALARS


@dataclass(frozen=True, eq=False)
class MarketData:
    """Read-only arrays of one symbol that an episode runs on.

    ``features`` is row-aligned with ``dates`` (see :mod:`finenvs.tasks.trading.features`);
    ``flat_features`` is the same memory raveled for fast window slices;
    ``open_values``/``close_values`` hold the prices as Python floats (a tuple
    read is several times cheaper than a numpy scalar read in the step loop;
    above ``COMPACT_ROWS`` rows an ``array.array``, which also reads Python
    floats); ``date_strings`` the ISO dates (above ``COMPACT_ROWS`` formatted when read).
    """

    symbol: str
    dates: np.ndarray
    date_strings: Sequence[str]
    open: np.ndarray
    close: np.ndarray
    features: np.ndarray
    flat_features: np.ndarray
    open_values: Sequence[float]
    close_values: Sequence[float]

    @classmethod
    def from_series(cls, series: PriceSeries) -> MarketData:
        feats = compute_features(series)
        flat = feats.reshape(-1)
        flat.setflags(write=False)
        compact = len(series) > COMPACT_ROWS
        return cls(
            symbol=series.symbol,
            dates=series.dates,
            date_strings=(DateStrings(series.dates) if compact
                          else tuple(np.datetime_as_string(series.dates, unit="D").tolist())),
            open=series.open,
            close=series.close,
            features=feats,
            flat_features=flat,
            open_values=_float_values(series.open, compact),
            close_values=_float_values(series.close, compact),
        )

    def __len__(self) -> int:
        return int(self.dates.shape[0])


def _float_values(values: np.ndarray, compact: bool) -> Sequence[float]:
    if not compact:
        return tuple(values.tolist())
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


class DateStrings(Sequence[str]):
    """ISO ``YYYY-MM-DD`` strings of a long date array, formatted when read.

    Reads give what ``np.datetime_as_string(dates, unit="D")`` gives, as ``str``;
    a tuple of a million such strings would hold about 64 MB of Python objects.
    """

    __slots__ = ("_dates",)

    def __init__(self, dates: np.ndarray) -> None:
        self._dates = dates

    def __len__(self) -> int:
        return int(self._dates.shape[0])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(np.datetime_as_string(self._dates[index], unit="D").tolist())
        return str(np.datetime_as_string(self._dates[index], unit="D"))


def _obs_templates(flat_features: np.ndarray, window: int, start: int, remaining: np.ndarray, lo: int,
                   hi: int) -> np.ndarray:
    """Observation templates of decision days ``start + lo .. start + hi - 1`` (float32, read-only);
    ``remaining[k]`` is the time remaining at day ``start + k``."""
    n = window * N_FEATURES
    first = start + lo
    # window k of the raveled features ends at day (first + k): a strided view, copied once
    windows = sliding_window_view(flat_features, n)[(first + 1) * N_FEATURES - n :: N_FEATURES][: hi - lo]
    table = np.zeros((hi - lo, n + N_SCALARS), dtype=np.float32)
    table[:, :n] = windows
    table[:, n + 1] = remaining[lo:hi]
    table.setflags(write=False)
    return table


def linear_remaining(rows: int) -> np.ndarray:
    """Time remaining of ``rows`` consecutive days that are every session of their window: 1 .. 0."""
    span = rows - 1
    return (span - np.arange(rows)) / span if span > 0 else np.zeros(rows)


class ObservationBlocks:
    """``Episode.obs_rows`` of a long episode: the same rows, built ``OBS_BLOCK_ROWS`` at a time when first read.

    Holds one block (the latest read); ``blocks[k]`` equals row ``k`` of the full
    table :func:`make_episode` builds for shorter episodes.
    """

    __slots__ = ("_flat", "_window", "_start", "_remaining", "_rows", "_cached")

    def __init__(self, flat_features: np.ndarray, window: int, start: int, remaining: np.ndarray) -> None:
        self._flat, self._window, self._start, self._remaining = flat_features, window, start, remaining
        self._rows = int(remaining.shape[0])
        self._cached: tuple[int, np.ndarray] = (-1, np.empty((0, 0), dtype=np.float32))

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, k: int) -> np.ndarray:
        block = k // OBS_BLOCK_ROWS
        cached = self._cached  # one read, one write: safe without a lock
        if cached[0] != block:
            lo = block * OBS_BLOCK_ROWS
            cached = (block, _obs_templates(self._flat, self._window, self._start, self._remaining, lo,
                                            min(lo + OBS_BLOCK_ROWS, self._rows)))
            self._cached = cached
        return cached[1][k - block * OBS_BLOCK_ROWS]


@dataclass(frozen=True, slots=True, eq=False)
class Episode:
    """Constants of one episode: the market arrays and the params, flattened for the step loop.

    Built once per reset by :func:`make_episode`; ``observe`` and ``transition``
    read only this and the state (one attribute hop per constant).

    ``obs_rows[k]`` is the observation template of decision day ``start + k``:
    the feature window ending at that day (rows ``<= start + k`` only), the time
    remaining (from the window's exchange sessions, see
    :class:`~finenvs.data.splits.SessionWindow`), and zeros for the position scalars, which ``observe`` fills in
    when a position is open. Precomputing the templates at reset makes each
    observation one row copy, whatever the window length; an episode of more
    than ``COMPACT_ROWS`` days reads them from :class:`ObservationBlocks`.
    """

    market: MarketData
    params: TradingParams
    start: int
    end: int
    obs_rows: Any  # a list of read-only row views, or ObservationBlocks for a long episode
    symbol: str
    date_strings: Sequence[str]
    open_values: Sequence[float]
    close_values: Sequence[float]
    n_obs_features: int
    fee: float
    short_target: int
    targets: tuple[int, int, int]
    fill_at_close: bool
    log_reward: bool
    dsr_eta: float
    #: The last close closes the position (True). False for an open window at the data's newest bar (a live run
    #: rolled forward): the episode truncates there with the position still held, no exit fee, and a later run
    #: over more data steps on from it with the same rewards.
    close_at_end: bool = True
    #: A short's exit fee is charged on its equity (``TradingParams.short_exit_fee == "equity"``).
    short_exit_on_equity: bool = False
    #: The data ends at row ``end`` before the window does (a series that stops, or the window's last session
    #: without its bar): the step into ``end`` is an ordinary one, and the decision at ``end`` finds no next bar,
    #: so its step closes any position at that close (exit fee paid) and truncates the episode. Nothing before
    #: that decision differs from an episode whose data goes on.
    data_ends: bool = False


def make_episode(market: MarketData, params: TradingParams, start: int, end: int, *,
                 close_at_end: bool = True, remaining: np.ndarray | None = None, data_ends: bool = False) -> Episode:
    """Bundle a market, the params and the episode's rows ``start..end`` into its constants.

    Args:
        market, params: The symbol's arrays and the dynamics.
        start, end: Rows of the first decision and of the episode's last bar.
        close_at_end: See :attr:`Episode.close_at_end`.
        remaining: Time remaining at each row ``start..end`` (from the window's sessions,
            :meth:`~finenvs.data.splits.SessionWindow.time_remaining`); None: every row is a session
            (:func:`linear_remaining`, synthetic paths).
        data_ends: See :attr:`Episode.data_ends`.
    """
    rows = end - start + 1
    if start - params.window + 1 < 0 or end >= len(market) or rows < 1:
        raise ValueError(f"episode rows {start}..{end} need {params.window} rows of features before them")
    remaining = linear_remaining(rows) if remaining is None else np.asarray(remaining, dtype=np.float64)
    if remaining.shape != (rows,):
        raise ValueError(f"remaining has {remaining.shape[0]} values for {rows} episode rows")
    if rows > COMPACT_ROWS:
        table: Any = ObservationBlocks(market.flat_features, params.window, start, remaining)
    else:
        # a list of row views: a list index and a row copy cost ~60 ns less per step than a 2-D row read
        table = list(_obs_templates(market.flat_features, params.window, start, remaining, 0, rows))
    short_target = -1 if params.allow_short else 0
    return Episode(
        market=market,
        params=params,
        start=start,
        end=end,
        obs_rows=table,
        symbol=market.symbol,
        date_strings=market.date_strings,
        open_values=market.open_values,
        close_values=market.close_values,
        n_obs_features=params.window * N_FEATURES,
        fee=params.fee,
        short_target=short_target,
        targets=(short_target, 0, 1),
        fill_at_close=params.fill == "close",
        log_reward=params.reward == "log_return",
        dsr_eta=params.dsr_eta,
        close_at_end=close_at_end,
        short_exit_on_equity=params.short_exit_fee == "equity",
        data_ends=data_ends,
    )


class TradingState(NamedTuple):
    """Everything that changes during an episode: an immutable tuple in this field order.

    ``transition`` returns states as plain tuples in this order (CPython's
    fast paths for building, unpacking and indexing apply only to exact tuples,
    and the step loop builds one per step); ``TradingState(*state)`` is the
    named view, and every core function accepts either.

    Attributes:
        t: Row index of the current decision day (its close is "now").
        start: Row index of the episode's first decision day.
        end: Row index of the episode's last day (the close-out).
        position: -1, 0 or +1 (a signed fraction via transition_to): the position held from this close.
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
        """Ruined, or at the window's last close (an episode whose data ends early decides once more at
        ``end``: see :attr:`Episode.data_ends`)."""
        return self.ruined or self.t >= self.end


class StepOutcome(NamedTuple):
    """What one transition produced besides the new state.

    ``transition`` returns it as a plain tuple in this field order;
    ``StepOutcome(*outcome)`` is the named view.

    Attributes:
        reward: Per ``TradingParams.reward``.
        held: Position held over the day that just ended (the exposure behind the step's return).
        equity_at_decision: Equity at the decision close after any trade executed at
            that close (what the ``herculean`` preset records for that day).
        fee: Fees paid during this step.
        closed_out: The window's end closed an open position at this step. None (with ``truncated`` True)
            marks an ordinary step into the data's last bar of an episode whose data ends before its window
            (:attr:`Episode.data_ends`): nothing ended; the decision there finds no next bar, and
            :func:`transition_at_last_bar` steps it. Shells turn this into ``truncated`` False.
        terminated: Ruin.
        truncated: The window ran out (or the marker above).
    """

    reward: float
    held: int
    equity_at_decision: float
    fee: float
    closed_out: bool
    terminated: bool
    truncated: bool


def short_equity(position: float, shares: float, entry_equity: float, price: float) -> float:
    """A short's equity at ``price``: its collateral plus its profit, ``2 |shares| x entry price - |shares| x
    price`` (``|shares| x entry price = |position| x entry_equity``), never below 0. For a full short (position
    -1) it is the book's equity; the reference scorer charges a short's exit fee on it."""
    value = 2.0 * -position * entry_equity - abs(shares) * price
    return value if value > 0.0 else 0.0


def exit_fee(ep: Episode, position: float, shares: float, entry_equity: float, price: float) -> float:
    """The fee for closing a held position at ``price``: on the shares bought or sold back, or, with
    ``short_exit_fee="equity"``, a short's on its equity (:func:`short_equity`, the reference scorer's rule)."""
    if position < 0 and ep.short_exit_on_equity:
        return ep.fee * short_equity(position, shares, entry_equity, price)
    return ep.fee * abs(shares) * price


def initial_state(start: int, end: int) -> tuple:
    """Flat book with equity 1 at the close of row ``start`` (a TradingState-ordered tuple)."""
    return tuple(TradingState(t=start, start=start, end=end))


def target_position(action: int, params: TradingParams) -> int:
    """Target position of an action (SELL is flat when shorting is not allowed)."""
    if action == BUY:
        return 1
    if action == SELL:
        return -1 if params.allow_short else 0
    return 0


def observe(ep: Episode, state: tuple) -> np.ndarray:
    """Observation at the close of day ``state.t`` (a fresh float32 array).

    Layout: ``window`` rows of features, oldest first (rows t-window+1 .. t,
    row-major, ``N_FEATURES`` per row), then ``position``, ``time_remaining``
    (1 at the first decision, 0 at the last close) and ``position_log_return``
    (log of equity over equity at entry; 0 when flat). Only rows <= t are read.
    :meth:`FinTradingEnv.step <finenvs.tasks.trading.env.FinTradingEnv.step>` writes this function out in its
    step loop: change both together.
    """
    obs = ep.obs_rows[state[0] - ep.start].copy()
    position = state[3]
    if position:
        n = ep.n_obs_features
        obs[n] = position
        equity = state[6]
        if equity > 0.0:
            pr = _log(equity / state[7])
            if pr > FEATURE_BOUND:
                pr = FEATURE_BOUND
            elif pr < -FEATURE_BOUND:
                pr = -FEATURE_BOUND
            obs[n + 2] = pr
    return obs


def transition(ep: Episode, state: tuple, action: int) -> tuple[tuple, tuple]:
    """Apply ``action`` at the close of day ``state.t`` and advance to the next close.

    ``action`` must already be validated (0, 1 or 2) and ``state`` not done.

    Returns:
        ``(new_state, outcome)``: tuples in :class:`TradingState` and
        :class:`StepOutcome` field order.
    """
    return transition_to(ep, state, ep.targets[action])


def transition_to(ep: Episode, state: tuple, target: float) -> tuple[tuple, tuple]:
    """Hold ``target`` (a signed fraction of equity) from the close of day ``state.t`` to the next close.

    The book of :func:`transition` with any target exposure: -1, 0 and +1 are
    SELL, HOLD and BUY; a fraction such as 0.5 invests half the equity (after
    the entry fee) and keeps the rest in cash, share count fixed while held.
    Envs whose decisions are not daily (FinReport-v0 holds a rating for a
    week) call this once per trading day with the same target.
    """
    t, start, end, position, shares, cash, equity, entry_equity, fees_paid, dsr_a, dsr_b, _ = state
    nt = t + 1
    paid = 0.0
    equity_at_decision = equity
    if target != position:
        fee = ep.fee
        if ep.fill_at_close:
            price = ep.close_values[t]
            traded = equity
            ruined = False
        else:
            price = ep.open_values[nt]
            traded = cash + shares * price
            ruined = traded <= 0.0
        if not ruined:
            if position:
                paid = exit_fee(ep, position, shares, entry_equity, price)
                traded -= paid
            if target:
                entry_fee = fee * traded
                traded -= entry_fee
                paid += entry_fee
                shares = target * traded / price
                cash = traded - shares * price
            else:
                shares = 0.0
                cash = traded
            position = target
            entry_equity = traded
            if ep.fill_at_close:
                equity_at_decision = traded
    else:
        ruined = False
    held = position
    price_close = ep.close_values[nt]
    new_equity = cash + shares * price_close
    if ruined or new_equity <= 0.0:
        ruined = True
        new_equity = 0.0
        position, shares, cash = 0, 0.0, 0.0
        truncated = closed_out = False
    elif nt >= end:
        truncated = True
        if ep.data_ends:  # the data's last bar, before the window's end: an ordinary step (see StepOutcome)
            closed_out = None
        else:
            closed_out = position != 0 and ep.close_at_end
            if closed_out:
                fee_out = exit_fee(ep, position, shares, entry_equity, price_close)
                new_equity -= fee_out
                paid += fee_out
                position, shares, cash = 0, 0.0, new_equity
    else:
        truncated = closed_out = False
    if ep.log_reward:
        reward = _log(new_equity / equity) if new_equity > 0.0 else RUIN_LOG_RETURN
    else:
        step_return = new_equity / equity - 1.0
        delta_a = step_return - dsr_a
        delta_b = step_return * step_return - dsr_b
        variance = dsr_b - dsr_a * dsr_a
        reward = (dsr_b * delta_a - 0.5 * dsr_a * delta_b) / variance**1.5 if variance > DSR_MIN_VARIANCE else 0.0
        dsr_a += ep.dsr_eta * delta_a
        dsr_b += ep.dsr_eta * delta_b
    return (
        (nt, start, end, position, shares, cash, new_equity, entry_equity if position else 1.0,
         fees_paid + paid, dsr_a, dsr_b, ruined),
        (reward, held, equity_at_decision, paid, closed_out, ruined, truncated),
    )


def transition_at_last_bar(ep: Episode, state: tuple) -> tuple[tuple, tuple]:
    """The decision at the data's last bar of a window that goes on (:attr:`Episode.data_ends`): there is no
    next bar, so whatever the action, the position is closed at this close (exit fee paid) and the episode is
    truncated. The state stays at this row, and no position is held over a day (``held`` 0)."""
    t, start, end, position, shares, cash, equity, entry_equity, fees_paid, dsr_a, dsr_b, ruined = state
    paid = exit_fee(ep, position, shares, entry_equity, ep.close_values[t]) if position else 0.0
    new_equity = equity - paid
    if ep.log_reward:
        reward = _log(new_equity / equity) if new_equity > 0.0 else RUIN_LOG_RETURN
    else:
        step_return = new_equity / equity - 1.0
        delta_a = step_return - dsr_a
        delta_b = step_return * step_return - dsr_b
        variance = dsr_b - dsr_a * dsr_a
        reward = (dsr_b * delta_a - 0.5 * dsr_a * delta_b) / variance**1.5 if variance > DSR_MIN_VARIANCE else 0.0
        dsr_a += ep.dsr_eta * delta_a
        dsr_b += ep.dsr_eta * delta_b
    return (
        (t, start, end, 0, 0.0, new_equity, new_equity, 1.0, fees_paid + paid, dsr_a, dsr_b, ruined),
        (reward, 0, equity, paid, bool(position), False, True),
    )
