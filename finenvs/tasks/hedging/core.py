"""Pure core of FinHedging-v0: the universe, the pair book, ``observe`` and the transitions.

Nothing here imports gymnasium or duckdb; states are immutable tuples and every
function is pure (see :mod:`finenvs.tasks.trading.core` for the conventions).

Stages
    The first decision (close of the window's first trading day) selects an
    ordered pair ``(i, j)`` of the universe by its index in :func:`pair_list`;
    the day passes flat. Every later decision is one of LONG_SHORT=0 (long i,
    short j), SHORT_LONG=1 (long j, short i), HOLD=2 (keep whatever is open,
    or stay flat) and CLOSE=3 (go flat).

Book (HERCULEAN's pair semantics; closes are adjusted closes)
    * Entry at the close of day t with equity E: half of E goes long one leg
      and half short the other, ``N = E / 2`` of notional each (dollar neutral:
      ``shares_i * P_i + shares_j * P_j = 0``). Fee: ``fee * 2N = fee * E``,
      paid from cash, so equity right after an entry is ``E (1 - fee)``.
    * Share counts then stay fixed while the position is held (no rebalancing);
      equity = cash + shares_i * P_i + shares_j * P_j at every close.
    * Exit: fee ``fee * (|shares_i| P_i + |shares_j| P_j)`` at the exit close.
      The opposite direction is an exit followed by an entry at the same close.
      The direction already held, and HOLD, trade nothing and pay nothing.
    * The window's last close closes an open position (exit fee paid there) and
      the episode is truncated. When the data ends before the window does
      (``Episode.data_ends``), the decision at the last bar finds no next bar:
      the position closes at that close and the episode is truncated. Equity at
      or below 0 is ruin: the book is dropped, equity set to 0, and the episode
      terminates.

Reward: ``log(E_{t+1} / E_t)`` of equity marked at successive closes, fees
included (``RUIN_LOG_RETURN`` at ruin); the selection step's reward is 0.

Observation (float32, every value clipped to ``[-OBS_BOUND, OBS_BOUND]``)
    ========================  ==================================================
    ``stage``                 1 on the selection step, 0 afterwards
    ``asset_returns``         n x ``window`` daily log returns of every asset
                              (rows t-window+1..t, oldest first; selection only)
    ``pair_stats``            per unordered pair (i < j), in :func:`unordered_pairs`
                              order: return correlation, z-score of the log price
                              ratio, Dickey-Fuller t-statistic of that ratio and
                              its annualised volatility, all over the last
                              ``pair_lookback`` days (selection only)
    ``spread_z``              z-score of the pair's log price ratio
                              ``log P_i - log P_j`` over each of ``lookbacks``
                              (trading only)
    ``leg_returns``           the last ``leg_days`` daily log returns of leg i,
                              then of leg j (trading only)
    ``position``              +1 LONG_SHORT, -1 SHORT_LONG, 0 flat
    ``days_held``             trading days the open position has been held / 21
    ``time_remaining``        ``(n - i) / n`` for the day's index ``i`` among the
                              window's ``n + 1`` exchange sessions: 1 at the first
                              decision, 0 at the last session
    ``position_log_return``   log(equity / equity right after entry); 0 when flat
    ========================  ==================================================

    Every statistic at day t is computed from closes dated <= t only, one
    window at a time (``sliding_window_view``), so a value is bit-identical
    whatever comes after it. z-scores use the sample standard deviation
    (ddof=1) and are 0 when the window is constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from finenvs.data.mean_reversion import df_tstat
from finenvs.data.universe import Universe

LONG_SHORT, SHORT_LONG, HOLD, CLOSE = 0, 1, 2, 3
ACTION_NAMES = ("LONG_SHORT", "SHORT_LONG", "HOLD", "CLOSE")
N_TRADE_ACTIONS = 4
PAIR_STAT_NAMES = ("correlation", "spread_z", "df_tstat", "spread_vol")
SCALAR_NAMES = ("position", "days_held", "time_remaining", "position_log_return")
OBS_BOUND = 10.0
DAYS_HELD_SCALE = 21.0
RUIN_LOG_RETURN = math.log(1e-9)
INVALID_ACTIONS = ("error", "hold")


def pair_list(n: int) -> tuple[tuple[int, int], ...]:
    """Ordered pairs of ``n`` assets by action index: ``(0,1), (0,2), .., (0,n-1), (1,0), (1,2), ..``.

    Index of ``(i, j)``: ``i * (n - 1) + (j if j < i else j - 1)``.
    """
    return tuple((i, j) for i in range(n) for j in range(n) if i != j)


def pair_index(i: int, j: int, n: int) -> int:
    """Action index of the ordered pair ``(i, j)`` (see :func:`pair_list`)."""
    if not (0 <= i < n and 0 <= j < n) or i == j:
        raise ValueError(f"({i}, {j}) is not an ordered pair of two different assets among {n}")
    return i * (n - 1) + (j if j < i else j - 1)


def unordered_pairs(n: int) -> tuple[tuple[int, int], ...]:
    """Pairs ``i < j`` in the order of the observation's pair statistics."""
    return tuple((i, j) for i in range(n) for j in range(i + 1, n))


@dataclass(frozen=True)
class HedgingParams:
    """Constants of an episode's dynamics and observation.

    Attributes:
        fee: Fee as a fraction of traded notional, per leg (5 bps = 0.0005).
        window: Days of returns per asset in the selection observation.
        pair_lookback: Days behind the selection-stage pair statistics.
        lookbacks: Lookbacks of the trading-stage spread z-scores.
        leg_days: Recent daily returns of each leg in the trading observation.
    """

    fee: float = 0.0005
    window: int = 20
    pair_lookback: int = 60
    lookbacks: tuple[int, ...] = (5, 20, 60)
    leg_days: int = 5

    @property
    def history(self) -> int:
        """Rows of history the first decision needs before it (its row index must be >= this)."""
        return max(self.window, self.pair_lookback, max(self.lookbacks), self.leg_days)


@dataclass(frozen=True)
class Layout:
    """Where each block of the observation lives (see module doc)."""

    n_assets: int
    params: HedgingParams

    @property
    def n_pairs(self) -> int:
        return self.n_assets * (self.n_assets - 1)

    @property
    def n_unordered(self) -> int:
        return self.n_pairs // 2

    @property
    def asset_returns(self) -> slice:
        return slice(1, 1 + self.n_assets * self.params.window)

    @property
    def pair_stats(self) -> slice:
        lo = self.asset_returns.stop
        return slice(lo, lo + self.n_unordered * len(PAIR_STAT_NAMES))

    @property
    def spread_z(self) -> slice:
        lo = self.pair_stats.stop
        return slice(lo, lo + len(self.params.lookbacks))

    @property
    def leg_returns(self) -> slice:
        lo = self.spread_z.stop
        return slice(lo, lo + 2 * self.params.leg_days)

    @property
    def scalars(self) -> slice:
        lo = self.leg_returns.stop
        return slice(lo, lo + len(SCALAR_NAMES))

    @property
    def size(self) -> int:
        return self.scalars.stop

    def names(self) -> list[str]:
        """A name for every observation index."""
        p = self.params
        out = ["stage"]
        out += [f"ret[{k}][t-{p.window - 1 - d}]" for k in range(self.n_assets) for d in range(p.window)]
        out += [f"{name}[{i},{j}]" for i, j in unordered_pairs(self.n_assets) for name in PAIR_STAT_NAMES]
        out += [f"spread_z[{lb}]" for lb in p.lookbacks]
        out += [f"ret[{leg}][t-{p.leg_days - 1 - d}]" for leg in ("i", "j") for d in range(p.leg_days)]
        return out + list(SCALAR_NAMES)


def _rolling_z(values: np.ndarray, lookback: int, rows: np.ndarray) -> np.ndarray:
    """z-score of ``values[t]`` within ``values[t-lookback+1 .. t]`` for each ``t`` in ``rows``."""
    win = sliding_window_view(values, lookback)[rows - lookback + 1]
    mean = win.mean(axis=1)
    sd = win.std(axis=1, ddof=1) if lookback > 1 else np.zeros(len(rows))
    out = np.zeros(len(rows))
    ok = sd > 0
    out[ok] = (values[rows][ok] - mean[ok]) / sd[ok]
    return out


def pair_statistics(universe: Universe, t: int, lookback: int) -> np.ndarray:
    """``(n_unordered, 4)`` statistics of every pair at day ``t`` from rows ``t-lookback..t`` (see module doc)."""
    n = universe.n
    rets = universe.returns[:, t - lookback + 1 : t + 1]
    logs = universe.log_close[:, t - lookback : t + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.corrcoef(rets) if lookback > 1 else np.zeros((n, n))
    out = np.zeros((n * (n - 1) // 2, len(PAIR_STAT_NAMES)))
    for k, (i, j) in enumerate(unordered_pairs(n)):
        spread = logs[i] - logs[j]
        window = spread[1:]
        sd = window.std(ddof=1) if window.size > 1 else 0.0
        c = corr[i, j]
        out[k, 0] = c if math.isfinite(c) else 0.0
        out[k, 1] = (window[-1] - window.mean()) / sd if sd > 0 else 0.0
        out[k, 2] = df_tstat(spread)
        dsd = np.diff(spread).std(ddof=1) if lookback > 1 else 0.0
        out[k, 3] = dsd * math.sqrt(252.0)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Episode:
    """Constants of one episode before a pair is chosen (see :func:`make_episode`)."""

    universe: Universe
    params: HedgingParams
    layout: Layout
    start: int
    end: int
    selection_obs: np.ndarray
    fee: float
    #: The last close closes the position (True); False for an open window at the data's newest bar (see
    #: :attr:`finenvs.tasks.trading.core.Episode.close_at_end`).
    close_at_end: bool = True
    #: Time remaining at each row ``start..end`` (read-only float64).
    remaining: np.ndarray | None = None
    #: The data ends at ``end`` before the window does (see :attr:`finenvs.tasks.trading.core.Episode.data_ends`).
    data_ends: bool = False


def make_episode(universe: Universe, params: HedgingParams, start: int, end: int, *,
                 close_at_end: bool = True, remaining: np.ndarray | None = None,
                 data_ends: bool = False) -> Episode:
    """Constants of the episode on rows ``start..end``, including its selection observation.

    ``remaining``: time remaining at each row (from the window's exchange sessions); None: every row is a
    session (synthetic universes). ``data_ends``: see :attr:`Episode.data_ends`.
    """
    if start < params.history or end >= len(universe) or end < start or (end - start < 2 and not data_ends):
        raise ValueError(
            f"episode rows {start}..{end} need {params.history} rows of history before them and at least 2 decisions"
        )
    rows = end - start + 1
    if remaining is None:
        remaining = (end - start - np.arange(rows)) / (end - start) if end > start else np.zeros(rows)
    remaining = np.array(remaining, dtype=np.float64)
    if remaining.shape != (rows,):
        raise ValueError(f"remaining has {remaining.shape[0]} values for {rows} episode rows")
    remaining.setflags(write=False)
    layout = Layout(universe.n, params)
    obs = np.zeros(layout.size, dtype=np.float32)
    obs[0] = 1.0
    obs[layout.asset_returns] = universe.returns[:, start - params.window + 1 : start + 1].reshape(-1)
    obs[layout.pair_stats] = pair_statistics(universe, start, params.pair_lookback).reshape(-1)
    obs[layout.scalars.start + 2] = remaining[0]  # time remaining: 1 at the first decision
    np.clip(obs, -OBS_BOUND, OBS_BOUND, out=obs)
    obs.setflags(write=False)
    return Episode(universe, params, layout, start, end, obs, params.fee, close_at_end, remaining, data_ends)


@dataclass(frozen=True, slots=True, eq=False)
class PairBook:
    """Constants of the episode once pair ``(i, j)`` is chosen.

    ``obs_rows[k]`` is the trading-stage observation template of day
    ``start + k`` (position scalars zero; ``observe`` fills them); ``label`` is
    ``"LONG/SHORT"`` (the symbols long and short on LONG_SHORT).
    """

    episode: Episode
    i: int
    j: int
    close_i: tuple[float, ...]
    close_j: tuple[float, ...]
    obs_rows: np.ndarray
    fee: float
    n_pos: int
    label: str


def make_book(ep: Episode, pair: int) -> PairBook:
    """The book of ordered pair number ``pair`` (see :func:`pair_list`)."""
    u, p, layout = ep.universe, ep.params, ep.layout
    i, j = pair_list(u.n)[pair]
    rows = np.arange(ep.start, ep.end + 1)
    table = np.zeros((rows.size, layout.size), dtype=np.float32)
    spread = u.log_close[i] - u.log_close[j]
    for k, lb in enumerate(p.lookbacks):
        table[:, layout.spread_z.start + k] = _rolling_z(spread, lb, rows)
    d = p.leg_days
    legs = layout.leg_returns.start
    table[:, legs : legs + d] = sliding_window_view(u.returns[i], d)[rows - d + 1]
    table[:, legs + d : legs + 2 * d] = sliding_window_view(u.returns[j], d)[rows - d + 1]
    table[:, layout.scalars.start + 2] = ep.remaining
    np.clip(table, -OBS_BOUND, OBS_BOUND, out=table)
    table.setflags(write=False)
    return PairBook(ep, i, j, u.close_values[i], u.close_values[j], table, ep.fee, layout.scalars.start,
                    f"{u.symbols[i]}/{u.symbols[j]}")


class HedgingState(NamedTuple):
    """Everything that changes during an episode (core functions take and return plain tuples in this order).

    Attributes:
        t: Row index of the current decision day.
        start, end: Rows of the first decision and of the last close.
        pair: Index of the chosen ordered pair; -1 before selection.
        position: +1 long i/short j, -1 long j/short i, 0 flat (held from this close).
        shares_i, shares_j: Signed share counts of the legs.
        cash: Cash (includes short-sale proceeds).
        equity: cash + shares_i * P_i + shares_j * P_j at this close.
        entry_equity: Equity right after the open position's entry (1 when flat).
        fees_paid: Cumulative fees.
        days_held: Closes the open position has been held through.
        entries: Positions opened so far (a reversal opens one).
        ruined: Equity reached 0.
    """

    t: int
    start: int
    end: int
    pair: int = -1
    position: int = 0
    shares_i: float = 0.0
    shares_j: float = 0.0
    cash: float = 1.0
    equity: float = 1.0
    entry_equity: float = 1.0
    fees_paid: float = 0.0
    days_held: int = 0
    entries: int = 0
    ruined: bool = False

    @property
    def done(self) -> bool:
        return self.ruined or self.t >= self.end


def initial_state(start: int, end: int) -> tuple:
    """Flat book, equity 1, no pair, at the close of row ``start``."""
    return tuple(HedgingState(t=start, start=start, end=end))


def observe(ep: Episode, book: PairBook | None, state: tuple) -> np.ndarray:
    """Observation at the close of day ``state.t`` (a fresh float32 array); ``book`` is the chosen pair's (None
    only before the selection)."""
    if state[3] < 0:
        return ep.selection_obs.copy()
    if book is None:
        raise ValueError("a state with a chosen pair is observed with that pair's book; got None")
    obs = book.obs_rows[state[0] - ep.start].copy()
    position = state[4]
    if position != 0:
        k = book.n_pos
        obs[k] = position
        obs[k + 1] = min(state[11] / DAYS_HELD_SCALE, OBS_BOUND)
        if state[8] > 0.0:
            pr = math.log(state[8] / state[9])
            obs[k + 3] = OBS_BOUND if pr > OBS_BOUND else (-OBS_BOUND if pr < -OBS_BOUND else pr)
    return obs


def select(ep: Episode, state: tuple, pair: int) -> tuple[tuple, tuple]:
    """Fix the pair at the selection close; the day passes flat.

    Returns:
        ``(new_state, outcome)`` as in :func:`transition`.
    """
    t, start, end = state[0], state[1], state[2]
    if t >= end:  # the data ends at the selection day: no next bar
        return (t, start, end, pair, *state[4:]), (0.0, 0, state[8], 0.0, False, False, True)
    nt = t + 1
    truncated = nt >= end and not ep.data_ends
    new_state = (nt, start, end, pair, *state[4:])
    return new_state, (0.0, 0, state[8], 0.0, False, False, truncated)


def transition(book: PairBook, state: tuple, action: int) -> tuple[tuple, tuple]:
    """Apply trading action ``action`` (0..3, validated) at the close of ``state.t``; advance one day.

    Returns:
        ``(new_state, outcome)``; ``outcome`` is ``(reward, held, equity_at_decision,
        fee, closed_out, terminated, truncated)`` as in :mod:`finenvs.tasks.trading.core`.
    """
    t, start, end, pair, position, si, sj, cash, equity, entry_equity, fees_paid, days_held, entries, _ = state
    if t >= end:  # only an episode whose data ends before its window: no next bar
        return _no_next_bar(book, state)
    old_equity = equity
    nt = t + 1
    fee = book.fee
    if action == LONG_SHORT:
        target = 1
    elif action == SHORT_LONG:
        target = -1
    elif action == CLOSE:
        target = 0
    else:
        target = position
    paid = 0.0
    equity_at_decision = equity
    if target != position:
        pi, pj = book.close_i[t], book.close_j[t]
        traded = equity
        if position != 0:
            exit_fee = fee * (abs(si) * pi + abs(sj) * pj)
            traded -= exit_fee
            paid = exit_fee
        if target != 0:
            notional = 0.5 * traded
            entry_fee = fee * traded  # fee on both legs' notional, 2 * notional
            si = target * notional / pi
            sj = -target * notional / pj
            traded -= entry_fee
            paid += entry_fee
            cash = traded  # the long purchase is paid by the short sale's proceeds
            entries += 1
        else:
            si = sj = 0.0
            cash = traded
        position = target
        entry_equity = traded
        days_held = 0
        equity_at_decision = traded
    held = position
    new_equity = cash + si * book.close_i[nt] + sj * book.close_j[nt]
    ruined = False
    if new_equity <= 0.0:
        ruined = True
        new_equity = 0.0
        position, si, sj, cash = 0, 0.0, 0.0, 0.0
    if position != 0:
        days_held += 1
    closed_out = False
    truncated = nt >= end and not ruined and not book.episode.data_ends
    if truncated and position != 0 and book.episode.close_at_end:
        exit_fee = fee * (abs(si) * book.close_i[nt] + abs(sj) * book.close_j[nt])
        new_equity -= exit_fee
        paid += exit_fee
        position, si, sj, cash = 0, 0.0, 0.0, new_equity
        closed_out = True
    reward = math.log(new_equity / old_equity) if new_equity > 0.0 else RUIN_LOG_RETURN
    if position == 0:
        entry_equity, days_held = 1.0, 0
    return (
        (nt, start, end, pair, position, si, sj, cash, new_equity, entry_equity, fees_paid + paid, days_held,
         entries, ruined),
        (reward, held, equity_at_decision, paid, closed_out, ruined, truncated),
    )


def _no_next_bar(book: PairBook, state: tuple) -> tuple[tuple, tuple]:
    """The decision at the data's last bar of a window that goes on: the position closes at this close (exit
    fee paid) and the episode is truncated; the state stays at this row and no position is held over a day."""
    t, start, end, pair, position, si, sj, cash, equity, entry_equity, fees_paid, days_held, entries, ruined = state
    paid = book.fee * (abs(si) * book.close_i[t] + abs(sj) * book.close_j[t]) if position else 0.0
    new_equity = equity - paid
    reward = math.log(new_equity / equity) if new_equity > 0.0 else RUIN_LOG_RETURN
    return (
        (t, start, end, pair, 0, 0.0, 0.0, new_equity, new_equity, 1.0, fees_paid + paid, 0, entries, ruined),
        (reward, 0, equity, paid, bool(position), False, True),
    )
