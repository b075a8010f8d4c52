"""finenvs_pairs_market_v0: a cooperative pairs book, one agent per leg (PettingZoo ParallelEnv).

The PettingZoo shell around :mod:`finenvs.multiagent.pairs_core`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from finenvs.data.calendar import DEFAULT_CALENDAR, check_calendar
from finenvs.data.splits import session_window, split_bounds
from finenvs.data.synthetic_pairs import PairsSpec, simulate_pairs
from finenvs.multiagent._shell import (
    DATASET,
    DEFAULT_STEPS,
    EXOGENOUS,
    MarketShell,
    business_dates,
    check_steps,
)
from finenvs.multiagent.market_core import ACTION_NAMES, OBS_BOUND, target_positions
from finenvs.multiagent.pairs_core import (
    N_LEGS,
    PairsEpisode,
    PairsOutcome,
    PairsParams,
    PairsState,
    initial_pairs_state,
    make_pairs_episode,
    pairs_observation_names,
    pairs_observe,
    pairs_transition,
)
from finenvs.tasks.validation import check_render_mode, fee_fraction

DEFAULT_SYMBOLS = ("QQQ", "SPY")
_POSITION_NAMES = {-1: "SHORT", 0: "FLAT", 1: "LONG"}


class PairsMarketEnv(MarketShell):
    """Two agents run one pairs book together: each trades its own leg with impact, both earn the book's P&L.

    ## Description
    A cooperative PettingZoo ``ParallelEnv``. Agent ``leg_0`` trades asset A
    and ``leg_1`` asset B of a co-moving pair. Each step each picks a target
    position in its own leg (short, flat or long one unit); each leg is a
    one-agent market-impact market (see :mod:`finenvs.multiagent.market_core`),
    so a trade fills at ``p + temporary_impact * q`` and moves that leg's mid by
    ``permanent_impact * q``. Both agents receive the SAME reward, the change
    in the team's equity: the game is fully cooperative (a common-payoff
    Markov game). Opposite positions make the classic spread trade; the agents
    must coordinate to get there without paying the impact twice.

    ## Data
    ``exogenous="synthetic"`` (default): a fresh cointegrated pair every reset
    (``finenvs.data.synthetic_pairs``: a common GBM factor plus a mean-reverting
    log price ratio; ``synthetic=`` takes the fields of ``PairsSpec``, with
    ``n_assets`` 2). ``"real"``: the shipped closes of ``symbols`` (default QQQ
    and SPY) aligned on their common trading days inside ``split``. ``"flat"``:
    constant prices. Each leg's prices are divided by its price at the first
    decision.

    ## Action Space
    Per agent ``Discrete(3)``: 0 = SELL (short one unit of its leg), 1 = HOLD
    (flat), 2 = BUY (long one unit). A unit is 0.5 shares of the normalised
    leg: half of the team's starting equity. Bad action dicts raise
    ``ValueError`` as in ``MarketImpactEnv``.

    ## Observation Space
    Per agent ``Box(-10, 10, (2 * window + 5,), float32)``, own leg first so
    the two agents can share one policy:

    | index | content |
    |---|---|
    | ``0 .. window-1`` | own leg's mid log returns, oldest first |
    | ``window .. 2*window-1`` | the other leg's mid log returns |
    | ``2*window`` | z-score of log(own mid / other mid) over the last ``window + 1`` mids |
    | ``2*window + 1`` | own position: -1, 0, +1 |
    | ``2*window + 2`` | partner's position (the book is the team's) |
    | ``2*window + 3`` | team equity |
    | ``2*window + 4`` | time remaining ``(T - s) / T``: ``s`` the decision's index among the window's ``T + 1`` exchange sessions (real data; the step count otherwise), 1 at the first decision, 0 at the end |

    ## Rewards
    Both agents: the team's P&L, ``E_{t+1} - E_t`` of the team equity (the sum
    of the two legs' accounts, marked at each leg's mid; impact, fees and the
    close-out included). Rewards sum to final team equity minus 1.

    ## Costs
    On each leg, temporary impact ``temporary_impact * q`` per share of the
    leg's flow (the agent's own trade), permanent impact on that leg's mid, and
    ``fee_bps`` of traded notional (default 0).

    ## Starting State
    Both legs flat, each account with cash 0.5 (team equity 1.0), both mids 1.0.

    ## Episode End
    ``truncated``: the path ran out; the last step closes both legs (with
    impact and fees). ``terminated``: team equity fell to 0 or below; both
    agents terminate together. Done agents are removed from ``self.agents``.

    ## Look-ahead Guarantee
    Observations and infos at step t read both paths at rows <= t only; a
    step's reward depends on the paths up to the step's end.

    ## Arguments
    * ``steps``: decisions per episode; None = 252 for flat/synthetic, the whole split window for real.
    * ``temporary_impact``, ``permanent_impact``: each leg's impact (defaults 0.001 and 0.0005).
    * ``fee_bps``: fee in basis points of traded notional (default 0).
    * ``exogenous``: ``"flat"``, ``"synthetic"`` or ``"real"``.
    * ``symbols``: the two shipped symbols for ``"real"`` (default ``("QQQ", "SPY")``).
    * ``split``, ``start``, ``end``: the real window (as in FinTrading-v0); ``calendar``: its exchange calendar
      (default ``"XNYS"``): ``steps`` and time remaining count its sessions, whichever common bars exist.
    * ``synthetic``: ``PairsSpec`` fields (e.g. ``{"half_life": 5, "spread_sd": 0.03}``).
    * ``window``: returns per leg per observation (default 10).
    * ``render_mode``: None or ``"ansi"``.

    ``reset(options={"path": prices})`` replays a ``(2, window + steps + 1)``
    array of your own exogenous prices.

    ## Version History
    * v0: initial release.
    """

    metadata = {"name": "finenvs_pairs_market_v0", "render_modes": ["ansi"], "is_parallelizable": True, "render_fps": 4}

    def __init__(
        self,
        steps: int | None = None,
        *,
        temporary_impact: float = 1e-3,
        permanent_impact: float = 5e-4,
        fee_bps: float = 0.0,
        exogenous: str = "synthetic",
        symbols: tuple[str, str] | list[str] = DEFAULT_SYMBOLS,
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
        self.params = PairsParams(
            temporary_impact=temporary_impact, permanent_impact=permanent_impact, fee=fee_fraction(fee_bps),
            window=window,
        )
        self.params.validate()
        if synthetic is not None and exogenous != "synthetic":
            raise ValueError(f"synthetic= is for exogenous='synthetic'; got exogenous={exogenous!r}")
        self.exogenous = exogenous
        w = self.params.window
        self._synthetic: PairsSpec | None = None
        self._dates: tuple[str, ...] = ()
        if exogenous == "synthetic":
            self._synthetic = PairsSpec.from_dict(synthetic)
            if self._synthetic.n_assets != N_LEGS:
                raise ValueError(f"synthetic n_assets={self._synthetic.n_assets}; the pairs market has exactly 2 legs")
            self.symbols: tuple[str, ...] = self._synthetic.symbols()
        elif exogenous == "real":
            from finenvs.data.catalog import default_catalog
            from finenvs.data.universe import Universe, check_calendars

            names = tuple(symbols)
            if len(names) != N_LEGS:
                raise ValueError(f"symbols={list(names)} must name exactly 2 symbols, one per leg")
            catalog = default_catalog()
            series = [catalog.series(s, DATASET) for s in names]
            universe = Universe.align(series)
            lo, hi = split_bounds(split, start, end)
            self._window = session_window(
                universe.dates, lo, hi, calendar=None if calendar is None else check_calendar(calendar), history=w, label="/".join(names),
                explicit_start=start is not None, min_decisions=1, episode_length=steps,
                history_note=f"window={w} mid returns need {w} earlier closes", calendar_word="common ",
            )
            # a symbol that stops inside the window ends the common calendar (and the episode) there
            check_calendars(series, universe.dates[self._window.first - w], universe.dates[self._window.last])
            self._closes = universe.close
            self._row_dates = universe.dates
            self._dates = universe.date_strings
            self.symbols = names
        else:
            self.symbols = ("FLAT-A", "FLAT-B")
        if exogenous == "real":
            self.steps = steps if steps is not None else self._window.n_decisions
        else:
            if start is not None or end is not None:
                raise ValueError(f"start/end choose a window of real data; exogenous={exogenous!r} has none")
            self.steps = steps if steps is not None else DEFAULT_STEPS
            if exogenous == "flat":
                self._dates = business_dates(w + self.steps + 1)
        self._setup([f"leg_{j}" for j in range(N_LEGS)], self.params.obs_size, OBS_BOUND, render_mode)
        self.state_space = spaces.Box(low=-OBS_BOUND, high=OBS_BOUND, shape=(self.params.obs_size,), dtype=np.float32)
        self._index = {a: j for j, a in enumerate(self.possible_agents)}
        self._last_outcome: PairsOutcome | None = None

    #: The real paths' closes, one row per leg (exogenous="real" only; flat and synthetic paths are made each reset).
    _closes: np.ndarray
    #: The current episode's constants and core state, set by reset() (``_started``): step() reaches them only
    #: through _check_actions(), which raises ResetNeeded before the first reset, so the step needs no None check.
    _episode: PairsEpisode
    _state: PairsState

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
            prices, dates = np.ones((N_LEGS, n_rows)), self._dates
        elif self.exogenous == "synthetic":
            sim = simulate_pairs(self._synthetic, n_rows, rng)
            prices = np.stack([s.close for s in sim.series])
            dates = tuple(np.datetime_as_string(sim.series[0].dates, unit="D").tolist())
        else:
            window = self._episode_window(rng)
            prices = self._closes[:, window.first - w : window.last + 1]
            dates = self._dates[window.first - w : window.last + 1]
            sessions = window.positions
        if "path" in options:
            prices, sessions = options["path"], None
        self._episode = make_pairs_episode(self.params, prices, steps, dates, tuple(self.symbols), sessions)
        self._state = initial_pairs_state(self._episode)
        self._last_outcome = None
        self._start()
        return self._observations(self.agents), {a: self._info(a) for a in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
    ]:
        chosen = self._check_actions(actions)
        targets = target_positions([chosen[a] for a in self.possible_agents])
        state, outcome = pairs_transition(self._episode, self._state, targets)
        self._state, self._last_outcome = state, outcome
        live = list(self.agents)
        rewards = dict.fromkeys(live, outcome.team_pnl)
        terminations = dict.fromkeys(live, outcome.terminated)
        truncations = dict.fromkeys(live, outcome.truncated)
        observations = self._observations(live)
        infos = {a: self._info(a) for a in live}
        if outcome.terminated or outcome.truncated:
            reason = (f"team ruined at step {state.t}" if outcome.terminated
                      else f"truncated at step {state.t}, the end of the path")
            for agent in live:
                self._retire(agent, reason)
                if outcome.terminated:
                    infos[agent]["ruined"] = True
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """Global state: ``leg_0``'s observation (the team book is common knowledge)."""
        if not self._started:
            raise ResetNeeded(f"{self.metadata['name']}: call reset() before state()")
        return pairs_observe(self._episode, self._state, 0)

    # ------------------------------------------------------------------ helpers
    def _observations(self, agents: list[str]) -> dict[str, np.ndarray]:
        return {a: pairs_observe(self._episode, self._state, self._index[a]) for a in agents}

    def _info(self, agent: str) -> dict[str, Any]:
        j, ep, s, o = self._index[agent], self._episode, self._state, self._last_outcome
        leg = s.legs[j]
        info: dict[str, Any] = {
            "step": s.t,
            "date": ep.date(s.t),
            "symbol": ep.symbols[j],
            "mid": leg.mid,
            "position": int(leg.positions[0]),
            "partner_position": int(s.legs[1 - j].positions[0]),
            "cash": float(leg.cash[0]),
            "equity": float(leg.equity[0]),
            "team_equity": s.team_equity,
            "fees": float(leg.fees_paid[0]),
            "impact_costs": float(leg.impact_paid[0]),
        }
        if o is not None:
            lo = o.legs[j]
            info.update(
                exec_price=lo.exec_price,
                trade=float(lo.trades[0]),
                fee=float(lo.fees[0]),
                impact_cost=float(lo.impact_costs[0]),
                team_pnl=o.team_pnl,
            )
            if lo.truncated:
                info.update(closeout_price=lo.closeout_price, closeout_flow=lo.closeout_flow)
        return info

    # ------------------------------------------------------------------ extras
    @property
    def episode(self) -> PairsEpisode | None:
        """The current episode's constants (both legs' exogenous prices and paths; None before reset)."""
        return self._episode if self._started else None

    @property
    def market_state(self) -> PairsState | None:
        """The current core state (both legs' books; None before reset)."""
        return self._state if self._started else None

    @staticmethod
    def action_names() -> tuple[str, ...]:
        return ACTION_NAMES

    def observation_names(self) -> list[str]:
        return pairs_observation_names(self.params.window)

    def _render_text(self) -> str:
        ep, s = self._episode, self._state
        lines = [f"{self.metadata['name']} {ep.date(s.t)} step {ep.legs[0].sessions[s.t]}/{ep.steps} | team equity {s.team_equity:.4f}"]
        for agent, j in self._index.items():
            leg = s.legs[j]
            status = "live" if agent in self.agents else self._done_at.get(agent, "not started")
            lines.append(
                f"  {agent} {ep.symbols[j]}: mid {leg.mid:.4f} {_POSITION_NAMES[int(leg.positions[0])]:5s} "
                f"account {leg.equity[0]:+.4f} impact {leg.impact_paid[0]:+.5f} fees {leg.fees_paid[0]:.5f} ({status})"
            )
        return "\n".join(lines)


__all__ = ["DEFAULT_SYMBOLS", "PairsMarketEnv"]
