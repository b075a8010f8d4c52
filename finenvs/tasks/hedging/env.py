"""FinHedging-v0: choose a pair on the first day, then trade it dollar-neutral daily.

The Gymnasium shell around :mod:`finenvs.tasks.hedging.core`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.data.calendar import DEFAULT_CALENDAR, check_calendar
from finenvs.data.schema import PriceSeries
from finenvs.data.splits import (
    DEFAULT_SPLIT,
    LATEST,
    SessionWindow,
    bar_window,
    resolve_split,
    session_window,
    split_bounds,
)
from finenvs.data.synthetic_pairs import PairsSpec, simulate_pairs
from finenvs.data.universe import Universe, check_calendars
from finenvs.errors import UnknownSymbolError, WindowError, shown
from finenvs.tasks.hedging.core import (
    ACTION_NAMES,
    HOLD,
    INVALID_ACTIONS,
    N_TRADE_ACTIONS,
    OBS_BOUND,
    Episode,
    HedgingParams,
    HedgingState,
    Layout,
    PairBook,
    initial_state,
    make_book,
    make_episode,
    observe,
    pair_index,
    pair_list,
    select,
    transition,
)
from finenvs.tasks.hedging.protocol import hedging_protocol
from finenvs.tasks.validation import check_choice, check_render_mode, fee_fraction
from finenvs.text.protocol import ParsedAction

DEFAULT_UNIVERSE = ("AAPL", "ADBE", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
SOURCES = ("real", "synthetic")
RESET_OPTIONS = ("start", "end")
DEFAULT_SYNTHETIC_LENGTH = 252
#: Days simulated before a synthetic episode's first decision, so selection rules have a year of history.
SYNTHETIC_HISTORY = 252
EPISODE_CACHE_SIZE = 16
_POSITION_NAMES = {1: "LONG_SHORT", -1: "SHORT_LONG", 0: "FLAT"}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class FinHedgingEnv(gym.Env):
    """Pick one ordered pair of a universe, then run a dollar-neutral long/short book on it.

    ## Description
    HERCULEAN's hedging task as a Gymnasium env. At the close of the window's
    first trading day the agent chooses an ordered pair ``(i, j)`` of the
    universe; the pair is then fixed. At every later close it chooses
    LONG_SHORT (long i, short j), SHORT_LONG (long j, short i), HOLD (keep any
    open exposure, or stay flat) or CLOSE (go flat). An entry puts half of
    equity long one leg and half short the other; share counts then stay fixed
    while the position is held (see :mod:`finenvs.tasks.hedging.core`).

    ## Data
    ``source="real"``: the shipped catalog (default universe AAPL ADBE AMZN
    GOOGL META MSFT NVDA TSLA) or ``data=`` a CSV/Parquet path or DataFrame in
    the finenvs schema. Symbols are aligned on the trading days they all have
    (a day one symbol's calendar lacks is dropped for all); a symbol that lacks
    more than one consecutive day the others trade inside the rows an episode
    reads, or does not cover the first decision's history, is an error naming
    it. A symbol whose data stops inside the window ends the common calendar
    there: the episode ends at the decision that finds no next common bar (see
    Episode End). ``source="synthetic"``: a
    fresh universe from ``self.np_random`` every reset (a year of history,
    then ``episode_length`` decisions, default 252), whose first two assets
    are cointegrated by construction (``synthetic=`` takes the fields of
    :class:`finenvs.data.synthetic_pairs.PairsSpec`, e.g. ``{"n_assets": 4,
    "half_life": 10, "break_rate": 2}``).

    ## Action Space
    ``Discrete(max(n * (n - 1), 4))`` for a universe of n symbols (56 for the
    default 8). On the selection step (stage 1) action ``k < n * (n - 1)`` chooses
    ordered pair ``pair_list(n)[k]``: ``(0,1), (0,2), .., (0,n-1), (1,0), (1,2), ..``,
    i.e. ``k = i * (n - 1) + (j if j < i else j - 1)`` (``env.pair_index("AAPL",
    "MSFT")`` computes it). On every later step (stage 0) actions 0..3 are
    LONG_SHORT, SHORT_LONG, HOLD, CLOSE. ``info["action_mask"]`` (and
    ``action_masks()``, for maskable policies) marks the actions valid now.

    An integer outside the space, or a non-integer, always raises
    ``ValueError``. An action inside the space but invalid for the stage
    depends on ``invalid_action``: ``"hold"`` (default) makes it HOLD on a
    trading step and pair ``k mod n * (n - 1)`` on the selection step (only
    possible when n = 2), records what was mapped in ``info["invalid_action"]``
    and counts it in ``info["invalid_actions"]``; ``"error"`` raises
    ``ValueError`` naming the valid actions. ``"hold"`` is the default because
    Gymnasium's contract is that every element of the action space can be
    stepped: ``check_env`` and unmasked policies (PPO, DQN) sample the whole
    space. Use ``"error"`` to catch an agent's stage mistakes loudly.

    ## Observation Space
    ``Box(-10, 10, (size,), float32)``, laid out by ``env.layout`` (a
    :class:`finenvs.tasks.hedging.core.Layout`; ``env.layout.names()`` names
    every index): the stage flag; on the selection step every asset's last
    ``window`` log returns and, per unordered pair, correlation, spread
    z-score, Dickey-Fuller t-statistic and volatility over ``pair_lookback``
    days; on trading steps the pair's spread z-score over each of
    ``lookbacks``, each leg's last ``leg_days`` returns, the position, days
    held / 21, time remaining (``(n - i) / n`` for the day's index ``i`` among
    the window's ``n + 1`` exchange sessions: 1 at the first decision, 0 at the
    last session) and the open position's log return. Blocks of the other stage
    are zeros.

    ## Rewards
    log(E_{t+1}/E_t) of equity marked at successive closes, fees included; 0 on
    the selection step. Rewards sum to log(final equity).

    ## Costs
    ``fee_bps`` (default 5) of traded notional per leg on every entry and exit:
    an entry costs ``fee * equity``, an exit ``fee * (|long value| + |short value|)``,
    a reversal both. A position open at the window's last close is closed there.

    ## Starting State
    Flat, equity 1.0, no pair, at the close of the window's first trading day.
    With ``episode_length`` the start of a sub-window is drawn from
    ``self.np_random``; ``reset(options={"start": ..., "end": ...})`` chooses
    the window.

    ## Episode End
    ``terminated``: ruin (equity <= 0). ``truncated``: the window's last close.
    The window is counted in sessions of the exchange calendar (``calendar``),
    not in common bars: ``info["n_decisions"]``, the prompt's "decision k of n"
    (k = the day's session index plus one), the window bounds shown and time
    remaining are the same whether or not later bars exist. A day missing from
    the common calendar is stepped over (the position is held across it). When
    the common bars stop before the window's last session (a symbol delisted,
    or the last session without its bar), the decision at the last common bar
    finds no next bar: its step closes the position at that close (exit fee,
    ``info["closed_out"]``) and truncates; nothing before it differs from data
    that goes on.

    ## Look-ahead Guarantee
    The observation at day t reads closes dated <= t only (selection statistics
    included); rewards and info up to t depend on nothing after t. Tests perturb
    every bar of any asset after a random t and check everything up to t is
    byte-identical. ``as_of_view()`` gives date-locked reads at the current close.

    ## Arguments
    * ``symbols``: the universe (default the 8 above; at least 2, no repeats).
    * ``split``: ``"train"`` (2024-01-02..2025-12-31, the default on the shipped data), ``"eval"``
      (2026-01-02..2026-03-31), ``"live"`` (2026-04-01..2026-05-01) or None (the whole history; the default
      with ``data=``: a user's series need not meet the shipped calendar); ``start``, ``end`` override its
      dates.
    * ``episode_length``: decisions per episode (None = the whole window; >= 2).
    * ``window`` (20), ``pair_lookback`` (60), ``lookbacks`` ((5, 20, 60)),
      ``leg_days`` (5): observation sizes, see above.
    * ``fee_bps``: fee per leg in basis points of traded notional (default 5).
    * ``invalid_action``: ``"error"`` or ``"hold"`` (see Action Space).
    * ``source``, ``dataset``, ``data``, ``synthetic``: see Data.
    * ``render_mode``: None, ``"ansi"`` or ``"rgb_array"`` (spread with entries
      and exits, and equity; needs ``finenvs[plot]``).
    * ``open_end``: a window still open at the data's newest bar truncates there with the position still held
      (no close-out; reset info ``open_end`` True), as in FinTrading-v0; ``finenvs llm --live`` sets it.
    * ``calendar``: the exchange calendar the window is counted in (default ``"XNYS"``; any
      ``exchange_calendars`` name). Synthetic universes count their own simulated days.

    The first decision needs ``max(window, pair_lookback, max(lookbacks),
    leg_days)`` earlier common trading days (60 by default). A named split
    whose first days lack them starts at the first day that has them; an
    explicit ``start`` without them is an error naming the earliest valid start.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    task_family = "hedging"

    def __init__(
        self,
        symbols: list[str] | tuple[str, ...] | None = None,
        *,
        split: str | None = DEFAULT_SPLIT,
        start: Any = None,
        end: Any = None,
        episode_length: int | None = None,
        window: int = 20,
        pair_lookback: int = 60,
        lookbacks: list[int] | tuple[int, ...] = (5, 20, 60),
        leg_days: int = 5,
        fee_bps: float = 5.0,
        invalid_action: str = "hold",
        source: str = "real",
        dataset: str = "core",
        data: Any = None,
        synthetic: dict[str, Any] | None = None,
        render_mode: str | None = None,
        open_end: bool = False,
        calendar: str | None = DEFAULT_CALENDAR,
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        self.calendar = check_calendar(calendar) if source == "real" and calendar is not None else calendar
        check_choice("source", source, SOURCES)
        if invalid_action not in INVALID_ACTIONS:
            raise ValueError(f"invalid_action={invalid_action!r}; valid: {list(INVALID_ACTIONS)}")
        for name, value, least in (("window", window, 1), ("pair_lookback", pair_lookback, 3), ("leg_days", leg_days, 1)):
            if not _is_int(value) or value < least:
                raise ValueError(f"{name}={value!r} must be an integer >= {least}")
        lookbacks = tuple(lookbacks) if isinstance(lookbacks, (list, tuple)) else lookbacks
        if not isinstance(lookbacks, tuple) or not lookbacks or not all(_is_int(x) and x >= 2 for x in lookbacks):
            raise ValueError(f"lookbacks={lookbacks!r} must be a non-empty list of integers >= 2")
        fee = fee_fraction(fee_bps)
        if episode_length is not None and (not _is_int(episode_length) or episode_length < 2):
            raise ValueError(f"episode_length={episode_length!r} must be None or an integer >= 2 (a selection and a trade)")
        if source == "synthetic" and data is not None:
            raise ValueError("data= is for source='real'; synthetic markets are generated")
        if source == "real" and synthetic is not None:
            raise ValueError("synthetic= is for source='synthetic'")
        if isinstance(symbols, str):
            raise ValueError(f"symbols={symbols!r} must be a list of at least 2 symbols, not one string")

        self.params = HedgingParams(
            fee=fee,
            window=int(window),
            pair_lookback=int(pair_lookback),
            lookbacks=tuple(int(x) for x in lookbacks),
            leg_days=int(leg_days),
        )
        self.invalid_action = invalid_action
        self.render_mode = render_mode
        self.source = source
        self.dataset = dataset
        self.split = resolve_split(split, user_data=data is not None)
        self._start, self._end = start, end
        if not isinstance(open_end, bool):
            raise ValueError(f"open_end={open_end!r} must be True or False")
        self.open_end = open_end
        self.episode_length = None if episode_length is None else int(episode_length)
        self._series: dict[str, PriceSeries] = {}
        self._user_data = data is not None

        if source == "synthetic":
            if symbols is not None:
                raise ValueError("symbols= is for source='real'; a synthetic universe is named SYN-A, SYN-B, ...")
            self._synthetic: PairsSpec | None = PairsSpec.from_dict(synthetic)
            self._symbols = self._synthetic.symbols()
            if self.episode_length is None:
                self.episode_length = DEFAULT_SYNTHETIC_LENGTH
        else:
            self._synthetic = None
            if data is not None:
                from finenvs.data.catalog import load_prices

                self._series.update(load_prices(data))
            universe = list(DEFAULT_UNIVERSE if symbols is None else symbols)
            if len(universe) < 2:
                raise ValueError(f"symbols={universe!r}: a pairs universe needs at least 2 symbols")
            if len(set(universe)) != len(universe):
                raise ValueError(f"symbols={universe!r} lists a symbol more than once")
            self._symbols = tuple(str(s) for s in universe)
            series = [self._load(sym) for sym in self._symbols]
            self._universe = Universe.align(series)
            self._window = self._resolve_window(start, end, explicit_start=start is not None)

        n = len(self._symbols)
        #: How agents' text maps to actions (see :mod:`finenvs.tasks.hedging.protocol`).
        self.text_protocol = hedging_protocol(self._symbols)
        self.layout = Layout(n, self.params)
        self.n_pairs = n * (n - 1)
        self.pairs = pair_list(n)
        self.action_space: spaces.Discrete = spaces.Discrete(max(self.n_pairs, N_TRADE_ACTIONS))
        self.observation_space = spaces.Box(-OBS_BOUND, OBS_BOUND, shape=(self.layout.size,), dtype=np.float32)
        size = int(self.action_space.n)
        self._mask_select = np.zeros(size, dtype=np.int8)
        self._mask_select[: self.n_pairs] = 1
        self._mask_trade = np.zeros(size, dtype=np.int8)
        self._mask_trade[:N_TRADE_ACTIONS] = 1
        for mask in (self._mask_select, self._mask_trade):
            mask.setflags(write=False)

        self._lookahead = LookAheadCounter()
        self._episodes: dict[tuple, Episode] = {}
        self._window_now: SessionWindow | None = None
        self._books: dict[int, PairBook] = {}
        self._book: PairBook | None = None  # the chosen pair's, from the selection step on
        self._state: tuple = ()  # a HedgingState-ordered tuple (see hedging core); empty until reset()
        self._episode_series: dict[str, PriceSeries] = {}
        self._equity_hist: list[float] = []
        self._held_hist: list[int] = []
        self._invalid = 0
        self._done = True

    #: The common calendar of the symbols and its default window (source="real" only: a synthetic universe is
    #: simulated each reset).
    _universe: Universe
    _window: SessionWindow
    #: The current episode's constants, set by reset() with the state: step() reads it only once reset() has
    #: made _done False, so the step loop needs no None check.
    _episode: Episode

    # ------------------------------------------------------------------ data
    def _catalog(self) -> Any:
        from finenvs.data.catalog import default_catalog

        return default_catalog()

    def _load(self, symbol: str) -> PriceSeries:
        series = self._series.get(symbol)
        if series is None:
            if self._user_data:
                raise UnknownSymbolError(
                    f"unknown symbol {symbol!r} in the data passed with data=; valid symbols: {sorted(self._series)}"
                )
            series = self._catalog().series(symbol, self.dataset)
            self._series[symbol] = series
        return series

    def _resolve_window(self, start: Any, end: Any, *, explicit_start: bool) -> SessionWindow:
        universe = self._universe
        lo, hi = split_bounds(self.split, start, end)
        need = self.params.history
        window = session_window(
            universe.dates, lo, hi, calendar=self.calendar, history=need, label="/".join(universe.symbols),
            explicit_start=explicit_start, min_decisions=2, episode_length=self.episode_length,
            calendar_word="common ",
            history_note="max of window, pair_lookback, lookbacks, leg_days; the common calendar starts "
            f"{universe.dates[0]}, the first day of {self._latest_start()}",
        )
        # a data check before any decision: no symbol may lack more than MAX_CALENDAR_GAP days in a row that
        # others trade in the window. A symbol whose data stops (a delisting) ends the common calendar there and
        # the episode with it, as for any series that stops: the check runs to the first symbol's last bar.
        series = [self._series[s] for s in universe.symbols]
        latest = universe.dates[window.last]
        if end != LATEST:  # an open end is the newest day every symbol holds
            for s in series:
                k = int(np.searchsorted(s.dates, hi, side="right")) - 1 if hi is not None else len(s) - 1
                if k >= 0 and s.dates[k] > latest:
                    latest = s.dates[k]
        stopped = min(s.dates[-1] for s in series)
        check_calendars(series, universe.dates[window.first - need], min(latest, stopped))
        return window

    def _latest_start(self) -> str:
        """The symbol(s) whose data starts last (they bound the universe's common history)."""
        firsts = {sym: self._series[sym].dates[0] for sym in self._universe.symbols}
        latest = max(firsts.values())
        return ", ".join(sym for sym, d in firsts.items() if d == latest)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {list(RESET_OPTIONS)}")
        rng = self.np_random
        if self._synthetic is not None:  # source="synthetic"
            if options:
                raise ValueError("start/end options apply to source='real' only")
            first = max(self.params.history, SYNTHETIC_HISTORY)
            assert self.episode_length is not None  # a synthetic env always has one (__init__ sets the default)
            n_rows = first + self.episode_length + 1
            sim = simulate_pairs(self._synthetic, n_rows, rng)
            self._episode_series = {s.symbol: s for s in sim.series}
            universe = Universe.align(list(sim.series))
            last = n_rows - 1
            window = bar_window(universe.dates, first, last)  # every simulated day a session
            episode = make_episode(universe, self.params, first, last)
        else:
            universe = self._universe
            self._episode_series = {s: self._series[s] for s in universe.symbols}
            if options:
                window = self._resolve_window(
                    options.get("start", self._start), options.get("end", self._end),
                    explicit_start=options.get("start", self._start) is not None,
                )
            else:
                window = self._window
            if self.episode_length is not None and self.episode_length < window.n_decisions:
                window = window.sub_window(universe.dates, self.episode_length, rng)  # that many sessions
            first, last = window.first, window.last
            open_now = self.open_end and self._window_open(last, options)
            if open_now and last - first < 2:
                raise WindowError(f"the live window {window.start_day}..{window.end_day} has {last - first + 1} "
                                  "common bar(s) so far; an episode needs at least 3 (a selection and a trade)")
            key = (first, last, window.end_day, open_now)
            cached = self._episodes.get(key)
            if cached is not None:
                episode = cached
            else:
                episode = make_episode(universe, self.params, first, last, close_at_end=not open_now,
                                       remaining=window.time_remaining(),
                                       data_ends=not (open_now or window.complete))
                if len(self._episodes) >= EPISODE_CACHE_SIZE:
                    self._episodes.pop(next(iter(self._episodes)))
                self._episodes[key] = episode
        if not self._state or episode is not self._episode:
            self._books = {}
        self._episode = episode
        self._window_now = window
        self._book = None
        self._state = initial_state(first, last)
        self._done = False
        self._invalid = 0
        self._lookahead.reset()
        self._equity_hist = [1.0]
        self._held_hist = [0]
        info = {
            "date": universe.date_strings[first],
            "symbols": list(universe.symbols),
            "stage": "select",
            "action_mask": self._mask_select.copy(),
            "position": 0,
            "equity": 1.0,
            "fees": 0.0,
            "look_ahead_attempts": 0,
            "window_start": window.start_day,
            "window_end": window.end_day,
            "n_decisions": window.n_decisions,
        }
        if self.open_end:
            info["open_end"] = not episode.close_at_end
        return observe(episode, None, self._state), info

    def _window_open(self, last: int, options: dict[str, Any]) -> bool:
        """The episode runs to the data's newest common bar while the window asked for ends later (or is open)."""
        dates = self._universe.dates
        if last != len(dates) - 1:
            return False
        _, hi = split_bounds(self.split, options.get("start", self._start), options.get("end", self._end))
        return hi is None or dates[last] < hi

    def _validate_action(self, action: Any) -> int:
        if _is_int(action):
            a = int(action)
        elif isinstance(action, np.ndarray) and action.dtype.kind in "iu" and action.size == 1 and action.ndim <= 1:
            a = int(action.reshape(-1)[0])
        else:
            raise ValueError(
                f"invalid action {shown(action)} of type {type(action).__name__}; FinHedging-v0 takes an integer in "
                f"[0, {self.action_space.n - 1}]: a pair index on the selection step, then "
                "0 LONG_SHORT, 1 SHORT_LONG, 2 HOLD, 3 CLOSE"
            )
        if not 0 <= a < self.action_space.n:
            raise ValueError(f"invalid action {shown(a)}: outside Discrete({self.action_space.n})")
        return a

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done:
            raise gym.error.ResetNeeded(
                "call reset() before step()" if not self._state
                else "the episode has ended; call reset() before step()"
            )
        a = action if action.__class__ is int and 0 <= action < N_TRADE_ACTIONS else self._validate_action(action)
        state = self._state
        ep = self._episode
        mapped = None
        if state[3] < 0:  # selection stage
            if a >= self.n_pairs:
                if self.invalid_action == "error":
                    raise ValueError(
                        f"invalid action {a} on the selection step: choose a pair index in [0, {self.n_pairs - 1}] "
                        "(see env.pairs)"
                    )
                mapped = f"action {a} is not a pair index; mapped to pair {a % self.n_pairs}"
                a %= self.n_pairs
            book = self._books.get(a)
            if book is None:
                book = self._books[a] = make_book(ep, a)
            self._book = book
            state, outcome = select(ep, state, a)
        else:
            if a >= N_TRADE_ACTIONS:
                if self.invalid_action == "error":
                    raise ValueError(
                        f"invalid action {a} after the pair is chosen: valid actions are "
                        "0 LONG_SHORT, 1 SHORT_LONG, 2 HOLD, 3 CLOSE"
                    )
                mapped = f"action {a} is not a trading action; mapped to HOLD"
                a = HOLD
            book = self._book
            if book is None:  # the selection step sets it with state[3]; never None here
                raise RuntimeError("FinHedging-v0: a trading step without a chosen pair's book")
            state, outcome = transition(book, state, a)
        reward, held, equity_at_decision, fee, closed_out, terminated, truncated = outcome
        self._state = state
        t = state[0]
        if self.render_mode is not None:
            self._equity_hist.append(state[8])
            self._held_hist.append(held)
        info = {
            "date": ep.universe.date_strings[t],
            "pair": book.label,
            "stage": "trade",
            "action_mask": self._mask_trade.copy(),
            "position": held,
            "equity": state[8],
            "equity_at_decision": equity_at_decision,
            "fee": fee,
            "fees": state[10],
            "entries": state[12],
            "look_ahead_attempts": self._lookahead.attempts,
        }
        if mapped is not None:
            self._invalid += 1
            info["invalid_action"] = mapped
        if self._invalid:
            info["invalid_actions"] = self._invalid
        if terminated or truncated:
            self._done = True
            if closed_out:
                info["closed_out"] = True
        return observe(ep, book, state), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the actions valid now (the interface maskable policies expect)."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return (self._mask_select if self._state[3] < 0 else self._mask_trade).astype(bool)

    # ------------------------------------------------------------------ extras
    def pair_index(self, long_leg: str, short_leg: str) -> int:
        """Selection action of the ordered pair ``(long_leg, short_leg)`` (LONG_SHORT is long the first)."""
        for sym in (long_leg, short_leg):
            if sym not in self._symbols:
                raise UnknownSymbolError(f"unknown symbol {sym!r}; this universe is {list(self._symbols)}")
        if long_leg == short_leg:
            raise ValueError(f"a pair needs two different symbols; got {long_leg!r} twice")
        return pair_index(self._symbols.index(long_leg), self._symbols.index(short_leg), len(self._symbols))

    def pair_symbols(self, index: int) -> tuple[str, str]:
        """The ordered pair of selection action ``index``."""
        if not _is_int(index) or not 0 <= index < self.n_pairs:
            raise ValueError(f"pair index {index!r} must be an integer in [0, {self.n_pairs - 1}]")
        i, j = self.pairs[int(index)]
        return self._symbols[i], self._symbols[j]

    def text_action(self, parsed: ParsedAction) -> ParsedAction:
        """A parsed text action as the integer action of the current stage (see :mod:`finenvs.tasks.hedging.protocol`).

        A word of the wrong stage, or an invalid reply, becomes the stage's
        default (pair 0 on the selection step, HOLD afterwards) with the reason.
        """
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before text_action()")
        pair = self._state[3]
        selecting = pair < 0
        kind, value = parsed.action
        if selecting:
            default = ParsedAction(0, self.text_protocol.word_of(("pair", 0)), parsed.invalid, "default", parsed.reasoning)
            if not parsed.valid:
                return default
            if kind != "pair":
                first = self.text_protocol.word_of(("pair", 0))
                return ParsedAction(
                    0, first, f"{parsed.name} needs a pair, and none is chosen yet: the first decision names one "
                    f"as LONG/SHORT (e.g. {first}); took {first}", "default", parsed.reasoning,
                )
            return ParsedAction(value, parsed.name, None, parsed.via, parsed.reasoning)
        if kind != "trade":
            chosen = "/".join(self.pair_symbols(pair))
            return ParsedAction(
                HOLD, "HOLD", f"the pair is already chosen ({chosen}); {parsed.name} is not a trading action; "
                "took HOLD", "default", parsed.reasoning,
            )
        return ParsedAction(value, parsed.name, parsed.invalid, parsed.via, parsed.reasoning)

    def text_state(self) -> dict[str, str]:
        """The state at the current close as prompt lines (used by the text interface)."""
        ep, window, state = self._current("text_state")
        u = ep.universe
        k, n = int(window.positions[state.t - window.first]), window.n_decisions
        out = {
            "Universe": ", ".join(u.symbols),
            "Date": f"{u.date_strings[state.t]} (decision {k + 1} of {n}; window "
            f"{window.start_day}..{window.end_day})",
        }
        book = self._book  # set with the pair, by the selection step
        if book is None:
            out["Stage"] = "choose the pair (answer LONG/SHORT, e.g. " + self.text_protocol.word_of(("pair", 0)) + ")"
            out["Closes"] = ", ".join(f"{sym} {u.close_values[i][state.t]:.2f}" for i, sym in enumerate(u.symbols))
        else:
            a, b = self.pair_symbols(state.pair)
            out["Stage"] = f"trade the pair {a}/{b} (LONG_SHORT = long {a}, short {b})"
            out["Closes"] = f"{a} {book.close_i[state.t]:.2f}, {b} {book.close_j[state.t]:.2f}"
            held = "" if state.position == 0 else f", held {state.days_held} day(s)"
            out["Position"] = _POSITION_NAMES[state.position] + held
        out["Equity"] = f"{state.equity:.4f} (started at 1.0000; fees paid {state.fees_paid:.4f})"
        out["Costs"] = f"{self.params.fee * 10_000.0:g} bps of traded notional per leg on every entry and exit"
        return out

    def as_of_view(self) -> AsOfView:
        """Date-locked reads at the current close (look-ahead attempts are counted).

        Prices are each symbol's own series (its own calendar); with
        ``source="real"`` the view also reads the shipped rates, news and filings.
        """
        ep, _, state = self._current("as_of_view")
        as_of = ep.universe.dates[state.t]
        series = dict(self._episode_series)
        symbols = sorted(series)

        def _lookup(sym: str) -> PriceSeries:
            if sym not in series:
                raise UnknownSymbolError(f"unknown symbol {sym!r}; this universe is {symbols}")
            return series[sym]

        if self.source == "synthetic":
            return AsOfView(_lookup, as_of, counter=self._lookahead, symbols=symbols)
        catalog = self._catalog()
        return AsOfView(
            _lookup, as_of, counter=self._lookahead, rate_lookup=catalog.rates,
            news=catalog.news(), filings=catalog.filings(), symbols=symbols,
        )

    @property
    def state(self) -> HedgingState | None:
        """The current core state as a named tuple (None before reset)."""
        return HedgingState(*self._state) if self._state else None

    @property
    def universe(self) -> tuple[str, ...]:
        return self._symbols

    @property
    def episode(self) -> Episode | None:
        """Constants of the current episode (its universe arrays and selection observation); None before reset."""
        return self._episode if self._state else None

    @property
    def book(self) -> PairBook | None:
        """Constants of the chosen pair (None before selection)."""
        return self._book

    @property
    def pair(self) -> tuple[str, str] | None:
        """The chosen ordered pair (None before selection)."""
        if not self._state or self._state[3] < 0:
            return None
        return self.pair_symbols(self._state[3])

    def spread_path(self) -> np.ndarray | None:
        """The chosen pair's log price ratio ``log P_i - log P_j`` from the first decision to now (None before selection)."""
        book = self._book
        if book is None or not self._state:
            return None
        u = self._episode.universe
        return (u.log_close[book.i] - u.log_close[book.j])[self._state[1] : self._state[0] + 1].copy()

    @staticmethod
    def action_names() -> tuple[str, ...]:
        return ACTION_NAMES

    def _current(self, method: str) -> tuple[Episode, SessionWindow, HedgingState]:
        """The current episode, its window and state; ``ResetNeeded`` naming ``method`` before reset()."""
        window = self._window_now
        if not self._state or window is None:
            raise gym.error.ResetNeeded(f"call reset() before {method}()")
        return self._episode, window, HedgingState(*self._state)

    def render(self) -> Any:
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        ep, window, state = self._current("render")
        u = ep.universe
        if self.render_mode == "ansi":
            peak = max(self._equity_hist)
            drawdown = 1.0 - state.equity / peak if peak > 0 else 0.0
            pair = "not chosen" if self.pair is None else "/".join(self.pair)
            return (
                f"{u.date_strings[state.t]} pair {pair} | position {_POSITION_NAMES[state.position]} | "
                f"equity {state.equity:.4f} | drawdown {drawdown:.2%} | fees {state.fees_paid:.4f} | "
                f"entries {state.entries} | day {int(window.positions[state.t - state.start])}/"
                f"{window.n_decisions}"
            )
        from finenvs.tasks.rendering import spread_chart

        idx = slice(state.start, state.start + len(self._equity_hist))
        book = self._book
        if book is None:
            spread = np.zeros(len(self._equity_hist))
            title, label = f"pair not chosen {u.date_strings[state.start]}", "spread"
        else:
            spread = (u.log_close[book.i] - u.log_close[book.j])[idx]
            pi, pj = u.symbols[book.i], u.symbols[book.j]
            title = f"{pi}/{pj} {window.start_day}..{window.end_day}"
            label = f"log({pi} / {pj})"
        return spread_chart(
            dates=u.dates[idx], spread=spread, positions=np.asarray(self._held_hist),
            equity=np.asarray(self._equity_hist), title=title, closed_at_end=self._done, spread_label=label,
        )


__all__ = ["DEFAULT_UNIVERSE", "FinHedgingEnv"]
