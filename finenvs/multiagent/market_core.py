"""Pure core of the multi-agent market-impact market: parameters, state, ``observe`` and ``transition``.

Nothing here imports gymnasium, pettingzoo or duckdb. States are frozen
dataclasses holding read-only numpy arrays and every function is pure, so the
accounting, the conservation law and the date lock are tested with hand-made
paths; the PettingZoo shells (:mod:`finenvs.multiagent.market`,
:mod:`finenvs.multiagent.pairs`) call the same functions.

Units
    Prices are in units of the episode's first mid: the exogenous price path
    ``P`` (shipped closes, a synthetic path or a constant) is divided by its
    value at the first decision, ``X_s = P_s / P_first``, so ``X_0 = p_0 = 1``
    (normalising by a price at or before every decision reads nothing from the
    future). A position *unit* is ``lot`` shares (default 1: one unit is worth
    1.0 at the start, each agent's starting cash ``initial_cash``). Trades
    ``d``, flows ``q`` and the agents' net position ``N`` are in shares; cash,
    fees and equity in units of the first mid.

One step ``t = 0 .. T-1`` (``T = steps`` decisions; ``gamma`` =
``temporary_impact``, ``lambda`` = ``permanent_impact``, ``f`` = fee fraction)
    1. Every active agent ``i`` chooses a target position ``y_i`` in
       {-1 short, 0 flat, +1 long} units (action SELL=0, HOLD=1, BUY=2 gives
       ``y = action - 1``, as in FinTrading-v0 HOLD means flat). An agent
       ruined at an earlier step is no longer active: its target is 0, so its
       book is liquidated through the next step's order flow.
    2. Trades ``d_i = lot * (y_i - x_i)``; net order flow ``q_t = sum_i d_i``.
    3. Everyone fills at one execution price ``e_t = p_t + gamma * q_t``
       (Kyle-style linear temporary impact, paid by those who trade with the
       flow and earned by those who trade against it; it does not persist).
    4. Fee ``phi_i = f * |d_i| * e_t``, paid from cash (it leaves the market).
    5. ``cash_i <- cash_i - d_i * e_t - phi_i``; ``x_i <- y_i``.
    6. The mid moves by the permanent impact and the exogenous increment:
       ``p_{t+1} = p_t + lambda * q_t + (X_{t+1} - X_t)``, computed in the
       equivalent closed form ``p_{t+1} = X_{t+1} + lambda * N_{t+1}`` with
       ``N_{t+1} = lot * sum_i y_i`` (no rounding drift).
    7. Equity is marked at the mid: ``E_i = cash_i + lot * x_i * p_{t+1}``; the
       step's P&L (the shells' reward) is ``E_i(t+1) - E_i(t)``.
    8. At the last step (``t = T-1``) every open position is closed at ``p_T``:
       close-out flow ``q_T = -N_T`` fills at ``e_T = p_T + gamma * q_T`` with
       fees, everyone ends flat, and the episode is truncated. (The close-out's
       permanent impact is not applied: nothing trades afterwards.) ``T`` counts
       the window's exchange sessions, so a real path with a missing day has
       fewer rows than ``T + 1`` (the step over the gap is one step), and a path
       that stops before the window's last session ends at the decision that
       finds no next price: that step trades nothing and closes every book at
       ``p_t`` the same way (see :func:`make_episode`'s ``sessions``).
    9. Ruin (``ruin=True``): an active agent whose equity after step 7 (after
       the close-out at the last step) is ``<= 0`` terminates. Equity is not
       floored at 0: the books stay exact, which the conservation law needs.
       If every agent is ruined the episode ends there, with the ruined books
       still open and marked at the mid (``N_end`` may then be non-zero).

    Per agent, the temporary impact paid at a fill is ``kappa_i = d_i * (e - p)
    = gamma * q * d_i`` (negative when trading against the flow);
    ``sum_i kappa_i = gamma * q^2``.

Conservation law (exact algebraic identities, tested to 1e-12)
    Step (mark-to-mid, all agents, active or not; at the last step add
    ``- gamma * q_T^2`` and the close-out fees)::

        sum_i [E_i(t+1) - E_i(t)] = N_{t+1} (p_{t+1} - p_t) - gamma q_t^2 - sum_i phi_i

    Episode, summing over every flow ``s`` (the decision flows and the
    close-out), with ``N_end`` the net position left at the end (0 after the
    close-out) and ``F`` all fees::

        sum_i [E_i(end) - E_i(0)] = sum_t N_{t+1} (X_{t+1} - X_t) - C - F
        C = (gamma - lambda / 2) * sum_s q_s^2 - (lambda / 2) * N_end^2     (:func:`impact_cost`)

    So on a flat exogenous path with no fees the agents' summed P&L is exactly
    ``-C``: minus the total impact cost. Proof sketch: everyone ends flat, so
    summed P&L is the summed cash change ``-sum_s q_s e_s - F``; with
    ``p_s = X_s + lambda N_s`` and ``q_s N_s = (N_{s+1}^2 - N_s^2 - q_s^2) / 2``
    the permanent-impact part telescopes to ``(lambda / 2) sum_s q_s^2``, and
    summation by parts turns ``-sum_s q_s X_s`` into the exogenous term. The
    counterparty to every flow is an implicit dealer whose P&L is the negative
    of the agents' (fees aside): the whole market is zero-sum.

    ``temporary_impact >= permanent_impact / 2`` is required: a buy-then-sell
    round trip of ``q`` shares then costs ``(2 gamma - lambda) q^2 >= 0``, so no
    agent (or coalition) can pump the mark for a riskless profit (Huberman &
    Stanzl, 2004). Prices stay positive: ``(lambda + 2 gamma) * n_agents * lot``
    must be below the lowest normalised price of the episode.

Observation of agent ``i`` (float32, every value clipped to ``[-OBS_BOUND, OBS_BOUND]``)
    =====================  =====================================================
    ``0 .. window-1``      log returns of the mid ``log(p_s / p_{s-1})`` for
                           ``s = t-window+1 .. t``, oldest first (before the
                           first decision the mid is the exogenous path)
    ``window``             ``log_mid``: ``log p_t`` (0 at the first decision)
    ``window + 1``         ``time_remaining``: ``(T - s_t) / T``, ``s_t`` the session
                           index of decision ``t`` (``t`` itself unless the path
                           has a missing day)
    ``window + 2``         ``position``: the agent's own target, -1, 0 or +1
    ``window + 3``         ``cash``: the agent's own cash
    ``window + 4``         ``equity``: the agent's own equity
    =====================  =====================================================

    Nothing about other agents' positions, cash or trades enters an agent's
    observation; the public part reads the path at rows ``<= t`` only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SELL, HOLD, BUY = 0, 1, 2
ACTION_NAMES = ("SELL", "HOLD", "BUY")
#: Target position (units) of each action.
ACTION_TARGETS = (-1, 0, 1)
OBS_BOUND = 10.0
PUBLIC_SCALAR_NAMES = ("log_mid", "time_remaining")
PRIVATE_NAMES = ("position", "cash", "equity")


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True)
class MarketParams:
    """Constants of the market's dynamics and observations.

    Attributes:
        n_agents: Number of trading agents ``k``.
        lot: Shares per position unit.
        initial_cash: Every agent's starting cash (and equity).
        temporary_impact: ``gamma``: execution price ``e = p + gamma * q`` (per share of flow).
        permanent_impact: ``lambda``: the mid moves by ``lambda * q`` and stays moved.
        fee: Fee as a fraction of traded notional ``|d| * e`` (5 bps = 0.0005).
        window: Past log returns of the mid per observation.
        ruin: An agent whose equity falls to 0 or below terminates.
    """

    n_agents: int = 2
    lot: float = 1.0
    initial_cash: float = 1.0
    temporary_impact: float = 1e-3
    permanent_impact: float = 5e-4
    fee: float = 0.0
    window: int = 10
    ruin: bool = True

    @property
    def obs_size(self) -> int:
        return self.window + len(PUBLIC_SCALAR_NAMES) + len(PRIVATE_NAMES)

    @property
    def max_price_shift(self) -> float:
        """Largest amount impact can move an execution price below the exogenous path."""
        return (self.permanent_impact + 2.0 * self.temporary_impact) * self.n_agents * self.lot

    def validate(self) -> None:
        """Check every parameter.

        Raises:
            ValueError: Naming the first parameter out of range and its valid range.
        """
        if not _is_int(self.n_agents) or self.n_agents < 1:
            raise ValueError(f"n_agents={self.n_agents!r} must be an integer >= 1")
        if not _is_int(self.window) or self.window < 1:
            raise ValueError(f"window={self.window!r} must be an integer >= 1")
        for name in ("lot", "initial_cash"):
            value = getattr(self, name)
            if not _finite(value) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a finite number > 0")
        for name in ("temporary_impact", "permanent_impact"):
            value = getattr(self, name)
            if not _finite(value) or value < 0:
                raise ValueError(f"{name}={value!r} must be a finite number >= 0")
        if not _finite(self.fee) or not 0.0 <= self.fee < 1.0:
            raise ValueError(f"fee={self.fee!r} must be a fraction in [0, 1)")
        if self.temporary_impact < self.permanent_impact / 2.0:
            raise ValueError(
                f"temporary_impact={self.temporary_impact!r} is below permanent_impact / 2 = "
                f"{self.permanent_impact / 2.0!r}: a buy-then-sell round trip of q shares would earn "
                "(permanent - 2 * temporary) * q^2 > 0 at no risk (price manipulation); "
                "use temporary_impact >= permanent_impact / 2"
            )
        if self.max_price_shift >= 1.0:
            raise ValueError(
                f"impact too large: (permanent_impact + 2 * temporary_impact) * n_agents * lot = "
                f"{self.max_price_shift:g} >= 1 could push the mid or an execution price to <= 0 "
                "(prices start at 1.0); lower the impacts, n_agents or lot"
            )


@dataclass(frozen=True, eq=False)
class MarketEpisode:
    """Constants of one episode.

    Attributes:
        params: The market's constants.
        prices: Raw exogenous prices, ``window + steps + 1`` rows: ``window``
            rows of history, the first decision's, then one per step (read-only).
        path: ``prices / prices[window]``: the normalised exogenous path ``X``.
        steps: Decisions in the episode ``T``.
        dates: ISO date of every row of ``prices``.
        label: What the path is (symbol or model), for info and rendering.
        sessions: Session index (``0 .. steps``) of each row from the first decision on.
        last: Row (decision index) of the path's last price.
        complete: The path's last price is the window's last session (its step closes the books); False when
            the path stops before: the decision at ``last`` finds no next price.
    """

    params: MarketParams
    prices: np.ndarray
    path: np.ndarray
    steps: int
    dates: tuple[str, ...]
    label: str
    sessions: tuple[int, ...] = ()
    last: int = 0
    complete: bool = True

    def date(self, t: int) -> str:
        """Date of decision ``t`` (0 .. steps)."""
        return self.dates[self.params.window + t]


def make_episode(
    params: MarketParams,
    prices: Any,
    steps: int,
    dates: Sequence[str] | None = None,
    label: str = "",
    sessions: Sequence[int] | np.ndarray | None = None,
) -> MarketEpisode:
    """Bundle the params and one exogenous price path into an episode.

    Args:
        params: Validated market constants.
        prices: ``window + steps + 1`` finite positive exogenous prices (``window + len(sessions)`` with
            ``sessions``).
        steps: Decisions ``T >= 1``: the window's sessions less one.
        dates: ISO date of each price row (default: row numbers as strings).
        label: Name of the path.
        sessions: Session index of each row from the first decision on (ascending, from 0, at most ``steps``):
            a real path with a missing day or that stops early. None: row ``k`` is session ``k``.

    Raises:
        ValueError: Wrong length, a non-finite or non-positive price, or a path
            that falls so low that impact could push a price to <= 0.
    """
    if not _is_int(steps) or steps < 1:
        raise ValueError(f"steps={steps!r} must be an integer >= 1")
    w = params.window
    if sessions is None:
        sessions = range(steps + 1)
    sessions = tuple(int(k) for k in sessions)
    if (not sessions or sessions[0] != 0 or sessions[-1] > steps
            or any(b <= a for a, b in zip(sessions, sessions[1:], strict=False))):
        raise ValueError(f"sessions must ascend from 0 to at most steps={steps}")
    need = w + len(sessions)
    raw = np.array(prices, dtype=np.float64).reshape(-1)
    if raw.shape[0] != need:
        raise ValueError(
            f"the exogenous price path has {raw.shape[0]} rows; window={w} + steps={steps} + 1 = {need} needed"
        )
    bad = np.flatnonzero(~np.isfinite(raw) | (raw <= 0.0))
    if bad.size:
        raise ValueError(f"exogenous price {float(raw[bad[0]])!r} at row {int(bad[0])}: prices must be finite and > 0")
    path = raw / raw[w]
    low = float(path[w:].min())
    if low <= params.max_price_shift:
        raise ValueError(
            f"the exogenous path falls to {low:.4g} of its first decision's price, and impact "
            f"(permanent_impact + 2 * temporary_impact) * n_agents * lot = {params.max_price_shift:.4g} could "
            "then push a price to <= 0; lower the impacts, n_agents or lot"
        )
    if dates is None:
        dates = [str(k) for k in range(need)]
    dates = tuple(str(d) for d in dates)
    if len(dates) != need:
        raise ValueError(f"{len(dates)} dates for {need} price rows")
    return MarketEpisode(
        params=params, prices=_readonly(raw), path=_readonly(path), steps=int(steps), dates=dates, label=label,
        sessions=sessions, last=len(sessions) - 1, complete=sessions[-1] == steps,
    )


@dataclass(frozen=True, eq=False)
class MarketState:
    """Everything that changes during an episode (arrays read-only, one entry per agent).

    Attributes:
        t: Decision index ``0 .. steps`` ("now" is the mid ``p_t``).
        mid: ``p_t``.
        positions: Each agent's position in units (-1, 0, +1).
        cash: Each agent's cash.
        equity: ``cash + lot * positions * mid``.
        fees_paid: Cumulative fees per agent.
        impact_paid: Cumulative temporary impact ``sum gamma * q * d_i`` per agent.
        active: Not ruined (ruined agents only have their book liquidated).
        log_mids: ``log p`` of the last ``window + 1`` mids, oldest first.
        ended: The path ran out (the books were closed).
    """

    t: int
    mid: float
    positions: np.ndarray
    cash: np.ndarray
    equity: np.ndarray
    fees_paid: np.ndarray
    impact_paid: np.ndarray
    active: np.ndarray
    log_mids: np.ndarray
    ended: bool = False

    @property
    def net_position(self) -> float:
        """``N_t`` in units (multiply by ``lot`` for shares)."""
        return float(self.positions.sum())


@dataclass(frozen=True, eq=False)
class StepOutcome:
    """What one transition produced besides the new state (arrays: one entry per agent).

    Attributes:
        pnl: ``E_i(t+1) - E_i(t)`` of every agent (active or not).
        trades: Decision trades ``d_i`` in shares.
        flow: Net order flow ``q_t`` in shares.
        exec_price: ``e_t = p_t + gamma * q_t``.
        net_position: ``N_{t+1}`` in shares, after the decision trades.
        mid: ``p_{t+1}``.
        fees: Fees paid this step (close-out included).
        impact_costs: Temporary impact ``gamma * q * d_i`` paid this step (close-out included).
        closeout_flow: ``q_T = -N_T`` at the last step, else 0.
        closeout_price: ``e_T`` at the last step, else None.
        terminated: Agents ruined at this step.
        truncated: The path ran out (this was the last step).
    """

    pnl: np.ndarray
    trades: np.ndarray
    flow: float
    exec_price: float
    net_position: float
    mid: float
    fees: np.ndarray
    impact_costs: np.ndarray
    closeout_flow: float
    closeout_price: float | None
    terminated: np.ndarray
    truncated: bool


def initial_state(ep: MarketEpisode) -> MarketState:
    """Everyone flat with ``initial_cash`` at the first decision (mid 1.0)."""
    p = ep.params
    k = p.n_agents
    cash = np.full(k, float(p.initial_cash))
    return MarketState(
        t=0,
        mid=float(ep.path[p.window]),
        positions=_readonly(np.zeros(k, dtype=np.int64)),
        cash=_readonly(cash),
        equity=_readonly(cash.copy()),
        fees_paid=_readonly(np.zeros(k)),
        impact_paid=_readonly(np.zeros(k)),
        active=_readonly(np.ones(k, dtype=bool)),
        log_mids=_readonly(np.log(ep.path[: p.window + 1])),
    )


def target_positions(actions: Sequence[int] | np.ndarray) -> np.ndarray:
    """Target positions (units) of validated actions (SELL/HOLD/BUY -> -1/0/+1)."""
    return np.asarray(actions, dtype=np.int64) - 1


def transition(ep: MarketEpisode, state: MarketState, targets: Sequence[int] | np.ndarray) -> tuple[MarketState, StepOutcome]:
    """Fill every agent's trade to its target at ``p_t`` and advance to ``p_{t+1}`` (see module doc).

    Args:
        ep: The episode.
        state: A state that is not done (``state.t < ep.steps``).
        targets: Target position of every agent in {-1, 0, +1} units (already
            validated); entries of inactive (ruined) agents are ignored and
            read as 0.

    Returns:
        ``(new_state, outcome)``.
    """
    p = ep.params
    lot, gamma, lam = p.lot, p.temporary_impact, p.permanent_impact
    t = state.t
    stop = t >= ep.last  # only a path that stops before its window's last session: no next price
    y = state.positions if stop else np.where(state.active, np.asarray(targets, dtype=np.int64), 0)
    trades = lot * (y - state.positions).astype(np.float64)
    flow = float(trades.sum())
    exec_price = state.mid + gamma * flow
    fees = p.fee * np.abs(trades) * exec_price
    impact = gamma * flow * trades
    cash = state.cash - trades * exec_price - fees
    net = lot * float(y.sum())
    nt = t if stop else t + 1
    mid = state.mid if stop else float(ep.path[p.window + nt]) + lam * net
    truncated = stop or (nt >= ep.last and ep.complete)
    closeout_flow, closeout_price = 0.0, None
    if truncated:  # the path's end closes every book at p_T
        out = -lot * y.astype(np.float64)
        closeout_flow = float(out.sum())
        closeout_price = mid + gamma * closeout_flow
        out_fees = p.fee * np.abs(out) * closeout_price
        cash = cash - out * closeout_price - out_fees
        fees = fees + out_fees
        impact = impact + gamma * closeout_flow * out
        positions = np.zeros_like(y)
        equity = cash.copy()
    else:
        positions = y
        equity = cash + lot * y * mid
    pnl = equity - state.equity
    terminated = state.active & (equity <= 0.0) if p.ruin else np.zeros_like(state.active)
    new_state = MarketState(
        t=nt,
        mid=mid,
        positions=_readonly(positions),
        cash=_readonly(cash),
        equity=_readonly(equity),
        fees_paid=_readonly(state.fees_paid + fees),
        impact_paid=_readonly(state.impact_paid + impact),
        active=_readonly(state.active & ~terminated),
        log_mids=state.log_mids if stop else _readonly(np.append(state.log_mids[1:], math.log(mid))),
        ended=truncated,
    )
    outcome = StepOutcome(
        pnl=_readonly(pnl),
        trades=_readonly(trades),
        flow=flow,
        exec_price=exec_price,
        net_position=net,
        mid=mid,
        fees=_readonly(fees),
        impact_costs=_readonly(impact),
        closeout_flow=closeout_flow,
        closeout_price=closeout_price,
        terminated=_readonly(terminated),
        truncated=truncated,
    )
    return new_state, outcome


def is_done(ep: MarketEpisode, state: MarketState) -> bool:
    """The path ran out or no agent is active."""
    return state.ended or not bool(state.active.any())


def impact_cost(params: MarketParams, flows: Sequence[float], final_net_position: float = 0.0) -> float:
    """Total impact cost ``C = (gamma - lambda/2) sum_s q_s^2 - (lambda/2) N_end^2`` (see module doc).

    Args:
        params: The market's constants.
        flows: Every flow of the episode in shares: each step's ``flow`` and the ``closeout_flow``.
        final_net_position: ``N_end`` in shares (0 once the close-out has run).
    """
    gamma, lam = params.temporary_impact, params.permanent_impact
    return (gamma - lam / 2.0) * math.fsum(q * q for q in flows) - lam / 2.0 * final_net_position**2


def public_features(ep: MarketEpisode, state: MarketState) -> np.ndarray:
    """The public part of every observation: ``window`` mid log returns, ``log_mid``, ``time_remaining`` (float64, unclipped)."""
    out = np.empty(ep.params.window + len(PUBLIC_SCALAR_NAMES))
    lm = state.log_mids
    out[:-2] = lm[1:] - lm[:-1]
    out[-2] = lm[-1]
    out[-1] = (ep.steps - ep.sessions[state.t]) / ep.steps
    return out


def observe(ep: MarketEpisode, state: MarketState, agent: int, public: np.ndarray | None = None) -> np.ndarray:
    """Observation of agent ``agent`` at decision ``state.t`` (a fresh float32 array, see module doc).

    Args:
        ep: The episode.
        state: The current state.
        agent: Agent index.
        public: :func:`public_features` of this state, when already computed.
    """
    pub = public_features(ep, state) if public is None else public
    obs = np.empty(ep.params.obs_size)
    n = pub.shape[0]
    obs[:n] = pub
    obs[n] = state.positions[agent]
    obs[n + 1] = state.cash[agent]
    obs[n + 2] = state.equity[agent]
    return np.clip(obs, -OBS_BOUND, OBS_BOUND).astype(np.float32)


def global_state(ep: MarketEpisode, state: MarketState) -> np.ndarray:
    """The whole market (for centralised critics): public features, then every agent's position, cash, equity."""
    vec = np.concatenate(
        (public_features(ep, state), state.positions.astype(np.float64), state.cash, state.equity)
    )
    return np.clip(vec, -OBS_BOUND, OBS_BOUND).astype(np.float32)


def observation_names(window: int) -> list[str]:
    """A name for every observation index."""
    return [f"mid_log_return[t-{window - 1 - d}]" for d in range(window)] + list(PUBLIC_SCALAR_NAMES) + list(PRIVATE_NAMES)


__all__ = [
    "ACTION_NAMES",
    "ACTION_TARGETS",
    "BUY",
    "HOLD",
    "OBS_BOUND",
    "SELL",
    "MarketEpisode",
    "MarketParams",
    "MarketState",
    "StepOutcome",
    "global_state",
    "impact_cost",
    "initial_state",
    "is_done",
    "make_episode",
    "observation_names",
    "observe",
    "public_features",
    "target_positions",
    "transition",
]
