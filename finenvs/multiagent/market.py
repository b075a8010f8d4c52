"""finenvs_market_impact_v0: k traders on one asset with linear price impact (PettingZoo ParallelEnv).

The PettingZoo shell around :mod:`finenvs.multiagent.market_core`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from finenvs.data.calendar import DEFAULT_CALENDAR, check_calendar
from finenvs.data.splits import session_window, split_bounds
from finenvs.data.synthetic import SyntheticSpec, simulate
from finenvs.multiagent._shell import (
    DATASET,
    DEFAULT_STEPS,
    EXOGENOUS,
    MarketShell,
    business_dates,
    check_steps,
)
from finenvs.multiagent.market_core import (
    ACTION_NAMES,
    OBS_BOUND,
    MarketEpisode,
    MarketParams,
    MarketState,
    StepOutcome,
    global_state,
    initial_state,
    make_episode,
    observation_names,
    observe,
    public_features,
    target_positions,
    transition,
)
from finenvs.tasks.validation import check_render_mode, fee_fraction

_POSITION_NAMES = {-1: "SHORT", 0: "FLAT", 1: "LONG"}


class MarketImpactEnv(MarketShell):
    """k traders share one asset whose price their order flow moves (Kyle-style linear impact).

    ## Description
    A PettingZoo ``ParallelEnv``. At each step every trader picks a target
    position of short, flat or long one lot; the market nets their trades
    into one order flow ``q``, fills everyone at ``p + temporary_impact * q``,
    then moves the mid by ``permanent_impact * q`` plus the exogenous path's
    change. Traders who trade with the crowd pay impact; traders who trade
    against it earn it. The accounting is in
    :mod:`finenvs.multiagent.market_core`, including the conservation law:
    on a flat path without fees the traders' summed P&L is exactly minus the
    total impact cost ``(temporary - permanent/2) * sum q^2``.

    ## Data
    ``exogenous="synthetic"`` (default): a fresh GBM path (or Heston/Merton via
    ``synthetic={"model": ...}``, see ``finenvs.data.synthetic``) from the
    env's generator every reset. ``"real"``: the shipped adjusted closes of
    ``symbol`` (catalog dataset ``core``) inside ``split``. ``"flat"``: a
    constant path, so prices move only by the agents' own impact. Every path is
    divided by its price at the first decision: the mid starts at 1.0.

    ## Action Space
    Per agent ``Discrete(3)``: 0 = SELL (target short one lot), 1 = HOLD
    (target flat), 2 = BUY (target long one lot); one lot is ``lot`` shares,
    worth 1.0 (the starting cash) at the start with ``lot=1``. Missing or
    unknown agents, a done agent acting, and any action that is not an integer
    in {0, 1, 2} raise ``ValueError`` naming the agent and the valid set.

    ## Observation Space
    Per agent ``Box(-10, 10, (window + 5,), float32)``, values clipped:

    | index | content |
    |---|---|
    | ``0 .. window-1`` | log returns of the mid over the last ``window`` steps, oldest first (public) |
    | ``window`` | log of the mid (0 at the first decision; public) |
    | ``window + 1`` | time remaining ``(T - s) / T``: ``s`` the decision's index among the window's ``T + 1`` exchange sessions (real data; the step count on flat/synthetic paths), 1 at the first decision, 0 at the end (public) |
    | ``window + 2`` | own position: -1, 0, +1 |
    | ``window + 3`` | own cash |
    | ``window + 4`` | own equity = cash + position * lot * mid |

    No agent observes another agent's position, cash or trades. ``state()``
    gives the whole market (public part, then every position, cash and equity)
    for centralised critics.

    ## Rewards
    Each agent's change in equity marked at the mid, ``E_{t+1} - E_t`` (fees,
    impact and the close-out included), so an agent's rewards sum to its final
    equity minus 1. (Equity can fall below 0, which log equity could not
    express; the accounting stays exact.)

    ## Costs
    Temporary impact ``temporary_impact * q`` per share on every fill (``q`` the
    net flow of all agents, in shares); permanent impact ``permanent_impact * q``
    on the mid; a fee of ``fee_bps`` of traded notional (default 0). Requires
    ``temporary_impact >= permanent_impact / 2`` (no riskless round trips).

    ## Starting State
    Every agent flat with cash 1.0 at the first decision, mid 1.0. With
    ``exogenous="real"`` and ``steps`` shorter than the window, the start is
    drawn from the env's generator.

    ## Episode End
    ``truncated``: the path ran out; the last step closes every open position
    (with impact and fees) and every live agent is truncated. ``terminated``:
    an agent whose equity falls to 0 or below is ruined: it is removed from
    ``agents`` and its position is liquidated in the next step's order flow.
    Done agents are removed from ``self.agents``; the episode is over when
    ``agents`` is empty.

    ## Look-ahead Guarantee
    The observation and info at step t read the exogenous path at rows <= t
    only (prices are normalised by the first decision's price), and a step's
    reward depends on the path up to the step's end. Tests perturb the path
    after a random t and check observations, rewards and infos up to t are
    byte-identical.

    ## Arguments
    * ``n_agents``: number of traders (default 2); agents are ``trader_0 .. trader_{k-1}``.
    * ``steps``: decisions per episode; None = 252 for flat/synthetic paths, the whole split window for real.
    * ``temporary_impact``: execution price ``p + temporary_impact * q`` (default 0.001 per share of flow).
    * ``permanent_impact``: the mid moves by ``permanent_impact * q`` (default 0.0005).
    * ``fee_bps``: fee in basis points of traded notional (default 0).
    * ``lot``: shares per position unit (default 1).
    * ``exogenous``: ``"flat"``, ``"synthetic"`` or ``"real"``.
    * ``symbol``: shipped symbol for ``"real"`` (default ``"SPY"``).
    * ``split``: ``"train"``, ``"eval"``, ``"live"`` or None; ``start``/``end`` override its dates.
    * ``calendar``: the exchange calendar a real window is counted in (default ``"XNYS"``): ``steps`` and time
      remaining are sessions, whichever bars exist; a missing day is one step over two sessions, and a path
      that stops before the window's end ends at the decision that finds no next price (books closed there).
    * ``synthetic``: ``{"model": "gbm"|"heston"|"merton", "params": {...}, "bars": {...}}``.
    * ``window``: mid returns per observation (default 10).
    * ``render_mode``: None or ``"ansi"``.

    ``reset(seed=..., options={"path": prices})`` replays ``window + steps + 1``
    exogenous prices of your own (the calendar stays the drawn window's).

    ## Version History
    * v0: initial release.
    """

    metadata = {"name": "finenvs_market_impact_v0", "render_modes": ["ansi"], "is_parallelizable": True, "render_fps": 4}

    def __init__(
        self,
        n_agents: int = 2,
        steps: int | None = None,
        *,
        temporary_impact: float = 1e-3,
        permanent_impact: float = 5e-4,
        fee_bps: float = 0.0,
        lot: float = 1.0,
        exogenous: str = "synthetic",
        symbol: str = "SPY",
        split: str | None = "train",
        start: Any = None,
        end: Any = None,
        synthetic: dict[str, Any] | None = None,
        window: int = 10,
        render_mode: str | None = None,
        calendar: str | None = DEFAULT_CALENDAR,
    ) -> None:
        check_render_mode(render_mode, self.metadata)
        if exogenous not in EXOGENOUS:
            raise ValueError(f"exogenous={exogenous!r}; valid: {list(EXOGENOUS)}")
        steps = check_steps(steps)
        self.params = MarketParams(
            n_agents=n_agents,
            lot=lot,
            temporary_impact=temporary_impact,
            permanent_impact=permanent_impact,
            fee=fee_fraction(fee_bps),
            window=window,
        )
        self.params.validate()
        if synthetic is not None and exogenous != "synthetic":
            raise ValueError(f"synthetic= is for exogenous='synthetic'; got exogenous={exogenous!r}")
        self.exogenous = exogenous
        self.symbol = symbol
        w = self.params.window
        self._synthetic = SyntheticSpec.from_dict(synthetic) if exogenous == "synthetic" else None
        self._dates: tuple[str, ...] = ()
        if exogenous == "real":
            from finenvs.data.catalog import default_catalog

            series = default_catalog().series(symbol, DATASET)  # copies the arrays: no connection kept
            lo, hi = split_bounds(split, start, end)
            self._window = session_window(
                series.dates, lo, hi, calendar=None if calendar is None else check_calendar(calendar), history=w, label=symbol,
                explicit_start=start is not None, min_decisions=1, episode_length=steps,
                history_note=f"window={w} mid returns need {w} earlier closes",
            )
            self._closes = series.close
            self._row_dates = series.dates
            self._dates = tuple(np.datetime_as_string(series.dates, unit="D").tolist())
            self.steps = steps if steps is not None else self._window.n_decisions
        else:
            if start is not None or end is not None:
                raise ValueError(f"start/end choose a window of real data; exogenous={exogenous!r} has none")
            self.steps = steps if steps is not None else DEFAULT_STEPS
            if exogenous == "flat":
                self._dates = business_dates(w + self.steps + 1)
        self._setup(
            [f"trader_{i}" for i in range(self.params.n_agents)], self.params.obs_size, OBS_BOUND, render_mode
        )
        self.state_space = spaces.Box(
            low=-OBS_BOUND, high=OBS_BOUND, shape=(w + 2 + 3 * self.params.n_agents,), dtype=np.float32
        )
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._last_outcome: StepOutcome | None = None

    #: The real path's closes (exogenous="real" only; flat and synthetic paths are made each reset).
    _closes: np.ndarray
    #: The current episode's constants and core state, set by reset() (``_started``): step() reaches them only
    #: through _check_actions(), which raises ResetNeeded before the first reset, so the step needs no None check.
    _episode: MarketEpisode
    _state: MarketState

    # ------------------------------------------------------------------ PettingZoo API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        rng = self._seed(seed)
        options = self._reset_options(options)
        w, steps = self.params.window, self.steps
        n_rows = w + steps + 1
        sessions = None  # every row a session, except on real data (see _episode_window)
        if self.exogenous == "flat":
            prices, dates, label = np.ones(n_rows), self._dates, "FLAT"
        elif self.exogenous == "synthetic":
            series = simulate(self._synthetic, n_rows, rng)
            prices, label = series.close, series.symbol
            dates = tuple(np.datetime_as_string(series.dates, unit="D").tolist())
        else:
            window = self._episode_window(rng)
            prices = self._closes[window.first - w : window.last + 1]
            dates, label = self._dates[window.first - w : window.last + 1], self.symbol
            sessions = window.positions
        if "path" in options:
            prices, sessions = options["path"], None
        self._episode = make_episode(self.params, prices, steps, dates, label, sessions=sessions)
        self._state = initial_state(self._episode)
        self._last_outcome = None
        self._start()
        return self._observations(self.agents), {a: self._info(a) for a in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
    ]:
        chosen = self._check_actions(actions)
        ep, state = self._episode, self._state
        actions_all = np.ones(self.params.n_agents, dtype=np.int64)  # HOLD for agents no longer acting
        for agent, a in chosen.items():
            actions_all[self._index[agent]] = a
        state, outcome = transition(ep, state, target_positions(actions_all))
        self._state, self._last_outcome = state, outcome
        live = list(self.agents)
        rewards, terminations, truncations = {}, {}, {}
        for agent in live:
            i = self._index[agent]
            rewards[agent] = float(outcome.pnl[i])
            terminations[agent] = bool(outcome.terminated[i])
            truncations[agent] = outcome.truncated and not terminations[agent]
        observations = self._observations(live)
        infos = {a: self._info(a) for a in live}
        for agent in live:
            if terminations[agent]:
                infos[agent]["ruined"] = True
                self._retire(agent, f"ruined at step {state.t}")
            elif truncations[agent]:
                self._retire(agent, f"truncated at step {state.t}, the end of the path")
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """Global state: the public features, then every agent's position, cash and equity (float32)."""
        if not self._started:
            raise ResetNeeded(f"{self.metadata['name']}: call reset() before state()")
        return global_state(self._episode, self._state)

    # ------------------------------------------------------------------ helpers
    def _observations(self, agents: list[str]) -> dict[str, np.ndarray]:
        public = public_features(self._episode, self._state)
        return {a: observe(self._episode, self._state, self._index[a], public) for a in agents}

    def _info(self, agent: str) -> dict[str, Any]:
        i, ep, s, o = self._index[agent], self._episode, self._state, self._last_outcome
        info: dict[str, Any] = {
            "step": s.t,
            "date": ep.date(s.t),
            "mid": s.mid,
            "position": int(s.positions[i]),
            "cash": float(s.cash[i]),
            "equity": float(s.equity[i]),
            "fees": float(s.fees_paid[i]),
            "impact_costs": float(s.impact_paid[i]),
        }
        if o is not None:
            info.update(
                exec_price=o.exec_price,
                flow=o.flow,
                trade=float(o.trades[i]),
                fee=float(o.fees[i]),
                impact_cost=float(o.impact_costs[i]),
            )
            if o.truncated:
                info.update(closeout_price=o.closeout_price, closeout_flow=o.closeout_flow)
        return info

    # ------------------------------------------------------------------ extras
    @property
    def episode(self) -> MarketEpisode | None:
        """The current episode's constants (the exogenous prices and path; None before reset)."""
        return self._episode if self._started else None

    @property
    def market_state(self) -> MarketState | None:
        """The current core state (every agent's book; None before reset)."""
        return self._state if self._started else None

    @staticmethod
    def action_names() -> tuple[str, ...]:
        return ACTION_NAMES

    def observation_names(self) -> list[str]:
        return observation_names(self.params.window)

    def _render_text(self) -> str:
        ep, s, o = self._episode, self._state, self._last_outcome
        head = f"{self.metadata['name']} {ep.label} {ep.date(s.t)} step {ep.sessions[s.t]}/{ep.steps} | mid {s.mid:.4f}"
        if o is not None:
            head += f" | flow {o.flow:+g} sh @ {o.exec_price:.4f}"
        lines = [head]
        for agent, i in self._index.items():
            status = "live" if agent in self.agents else self._done_at.get(agent, "not started")
            lines.append(
                f"  {agent}: {_POSITION_NAMES[int(s.positions[i])]:5s} cash {s.cash[i]:+.4f} "
                f"equity {s.equity[i]:.4f} impact {s.impact_paid[i]:+.5f} fees {s.fees_paid[i]:.5f} ({status})"
            )
        return "\n".join(lines)


__all__ = ["MarketImpactEnv"]
