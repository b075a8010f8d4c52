"""Pure core of the cooperative pairs market: two legs, one agent each, one team book.

Nothing here imports gymnasium or pettingzoo (see :mod:`finenvs.multiagent.market_core`
for the conventions and the single-asset market each leg runs).

Market
    Two co-moving assets (a cointegrated synthetic pair, two shipped symbols
    aligned on their common trading days, or two flat paths). Leg ``j`` is a
    one-agent :mod:`~finenvs.multiagent.market_core` market on asset ``j``: its
    agent's trades are that market's whole order flow, so it pays temporary
    impact ``gamma * q^2`` on every trade and moves its own leg's mid by
    ``lambda * q``. Each leg's prices are normalised to 1.0 at the first
    decision.

Team book
    The team starts with equity 1.0: each leg's account holds ``PAIR_CASH`` =
    0.5 of cash, and a position unit is ``PAIR_LOT`` = 0.5 shares, so a unit is
    worth half the team's equity at the start (HERCULEAN's pair book: half long
    one leg, half short the other; share counts fixed while held). Team equity
    is the sum of the two accounts; the team's P&L at a step is the sum of the
    legs' P&L, and *both agents receive it* as their reward: the game is fully
    cooperative. An account may go negative while the other carries it; the
    team is ruined (both agents terminate, the episode ends) when team equity
    falls to 0 or below. The path's end closes both legs (with impact and fees)
    and truncates the episode.

    The conservation law holds leg by leg, so team P&L =
    ``sum over legs [sum_t N_{t+1} (X_{t+1} - X_t) - C_leg - F_leg]``.

Observation of leg ``j`` (own leg first, so both agents can share one policy;
float32, clipped to ``[-OBS_BOUND, OBS_BOUND]``)
    ========================  ================================================
    ``0 .. window-1``         own leg's mid log returns, oldest first
    ``window .. 2window-1``   the other leg's mid log returns
    ``2 window``              ``spread_z``: z-score of ``log p_own - log p_other``
                              over the last ``window + 1`` mids (sample sd;
                              0 when the spread is constant)
    ``2 window + 1``          own position (-1, 0, +1)
    ``2 window + 2``          partner's position (the team's book is shared)
    ``2 window + 3``          team equity
    ``2 window + 4``          time remaining ``(T - s_t) / T`` (``s_t`` the
                              session index of decision ``t``, see market_core)
    ========================  ================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.multiagent.market_core import (
    OBS_BOUND,
    MarketEpisode,
    MarketParams,
    MarketState,
    StepOutcome,
    initial_state,
    make_episode,
    transition,
)

N_LEGS = 2
PAIR_LOT = 0.5
PAIR_CASH = 0.5
PAIRS_SCALAR_NAMES = ("spread_z", "position", "partner_position", "team_equity", "time_remaining")


@dataclass(frozen=True)
class PairsParams:
    """Constants of the pairs market (the same impact and fee on both legs).

    Attributes:
        temporary_impact: ``gamma`` of each leg.
        permanent_impact: ``lambda`` of each leg.
        fee: Fee as a fraction of traded notional.
        window: Past log returns of each leg per observation.
    """

    temporary_impact: float = 1e-3
    permanent_impact: float = 5e-4
    fee: float = 0.0
    window: int = 10

    def leg(self) -> MarketParams:
        """The one-agent market each leg runs (team ruin replaces per-account ruin)."""
        return MarketParams(
            n_agents=1,
            lot=PAIR_LOT,
            initial_cash=PAIR_CASH,
            temporary_impact=self.temporary_impact,
            permanent_impact=self.permanent_impact,
            fee=self.fee,
            window=self.window,
            ruin=False,
        )

    @property
    def obs_size(self) -> int:
        return 2 * self.window + len(PAIRS_SCALAR_NAMES)

    def validate(self) -> None:
        """Raises ValueError naming the first bad parameter (see :meth:`MarketParams.validate`)."""
        self.leg().validate()


@dataclass(frozen=True, eq=False)
class PairsEpisode:
    """Constants of one episode: one market episode per leg on a shared calendar."""

    params: PairsParams
    legs: tuple[MarketEpisode, MarketEpisode]
    steps: int
    symbols: tuple[str, str]

    def date(self, t: int) -> str:
        return self.legs[0].date(t)


def make_pairs_episode(
    params: PairsParams, prices: Any, steps: int, dates: Sequence[str] | None = None,
    symbols: Sequence[str] = ("A", "B"), sessions: Sequence[int] | np.ndarray | None = None,
) -> PairsEpisode:
    """Bundle two aligned exogenous price paths (shape ``(2, window + steps + 1)``) into an episode
    (``sessions``: the session index of each row from the first decision, as in
    :func:`~finenvs.multiagent.market_core.make_episode`).

    Raises:
        ValueError: Not two paths, or a path :func:`~finenvs.multiagent.market_core.make_episode` rejects.
    """
    arr = np.asarray(prices, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != N_LEGS:
        raise ValueError(f"pairs prices must have shape (2, window + steps + 1); got {arr.shape}")
    leg_params = params.leg()
    first, second = (make_episode(leg_params, arr[j], steps, dates, label=symbols[j], sessions=sessions)
                     for j in range(N_LEGS))
    return PairsEpisode(params=params, legs=(first, second), steps=int(steps), symbols=(str(symbols[0]), str(symbols[1])))


@dataclass(frozen=True, eq=False)
class PairsState:
    """Both legs' market states and whether the team is ruined."""

    legs: tuple[MarketState, MarketState]
    ruined: bool = False

    @property
    def t(self) -> int:
        return self.legs[0].t

    @property
    def team_equity(self) -> float:
        return float(self.legs[0].equity[0] + self.legs[1].equity[0])


@dataclass(frozen=True, eq=False)
class PairsOutcome:
    """One team step: the shared reward and each leg's market outcome.

    Attributes:
        team_pnl: Change in team equity (both agents' reward).
        legs: Each leg's :class:`~finenvs.multiagent.market_core.StepOutcome`.
        terminated: Team ruin.
        truncated: The path ran out.
    """

    team_pnl: float
    legs: tuple[StepOutcome, StepOutcome]
    terminated: bool
    truncated: bool


def initial_pairs_state(ep: PairsEpisode) -> PairsState:
    """Both legs flat, team equity 1.0."""
    return PairsState(legs=(initial_state(ep.legs[0]), initial_state(ep.legs[1])))


def pairs_transition(ep: PairsEpisode, state: PairsState, targets: Sequence[int] | np.ndarray
                     ) -> tuple[PairsState, PairsOutcome]:
    """Each leg trades to its target (units, -1/0/+1) and both legs advance one step.

    ``state`` must not be done.
    """
    s0, o0 = transition(ep.legs[0], state.legs[0], (int(targets[0]),))
    s1, o1 = transition(ep.legs[1], state.legs[1], (int(targets[1]),))
    ruined = float(s0.equity[0] + s1.equity[0]) <= 0.0
    truncated = o0.truncated and not ruined
    return (
        PairsState(legs=(s0, s1), ruined=ruined),
        PairsOutcome(team_pnl=float(o0.pnl[0] + o1.pnl[0]), legs=(o0, o1), terminated=ruined, truncated=truncated),
    )


def pairs_done(ep: PairsEpisode, state: PairsState) -> bool:
    return state.ruined or state.legs[0].ended


def spread_z(ep: PairsEpisode, state: PairsState, leg: int) -> float:
    """z-score of ``log p_leg - log p_other`` within its last ``window + 1`` values (0 if constant)."""
    s = state.legs[leg].log_mids - state.legs[1 - leg].log_mids
    sd = float(s.std(ddof=1))
    return float((s[-1] - s.mean()) / sd) if sd > 0.0 else 0.0


def pairs_observe(ep: PairsEpisode, state: PairsState, leg: int) -> np.ndarray:
    """Observation of the agent trading leg ``leg`` (a fresh float32 array, see module doc)."""
    w = ep.params.window
    own, other = state.legs[leg], state.legs[1 - leg]
    obs = np.empty(ep.params.obs_size)
    obs[:w] = np.diff(own.log_mids)
    obs[w : 2 * w] = np.diff(other.log_mids)
    obs[2 * w] = spread_z(ep, state, leg)
    obs[2 * w + 1] = own.positions[0]
    obs[2 * w + 2] = other.positions[0]
    obs[2 * w + 3] = state.team_equity
    obs[2 * w + 4] = (ep.steps - ep.legs[0].sessions[state.t]) / ep.steps
    return np.clip(obs, -OBS_BOUND, OBS_BOUND).astype(np.float32)


def pairs_observation_names(window: int) -> list[str]:
    """A name for every observation index."""
    return (
        [f"own_log_return[t-{window - 1 - d}]" for d in range(window)]
        + [f"other_log_return[t-{window - 1 - d}]" for d in range(window)]
        + list(PAIRS_SCALAR_NAMES)
    )


__all__ = [
    "N_LEGS",
    "PAIRS_SCALAR_NAMES",
    "PAIR_CASH",
    "PAIR_LOT",
    "PairsEpisode",
    "PairsOutcome",
    "PairsParams",
    "PairsState",
    "initial_pairs_state",
    "make_pairs_episode",
    "pairs_done",
    "pairs_observation_names",
    "pairs_observe",
    "pairs_transition",
    "spread_z",
]
