"""FinTrading-v0: one asset, one SELL/HOLD/BUY decision per trading day.

The Gymnasium shell around :mod:`finenvs.tasks.trading.core`.
"""

from __future__ import annotations

from math import log
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.data.calendar import DEFAULT_CALENDAR, check_calendar
from finenvs.data.schema import PriceSeries
from finenvs.data.splits import (
    DEFAULT_SPLIT,
    SessionWindow,
    bar_window,
    resolve_split,
    session_window,
    split_bounds,
)
from finenvs.data.synthetic import SyntheticSpec, simulate
from finenvs.errors import UnknownSymbolError, WindowError, shown
from finenvs.tasks.trading.core import (
    ACTION_NAMES,
    FILLS,
    REWARDS,
    SCALAR_NAMES,
    SHORT_EXIT_FEES,
    Episode,
    MarketData,
    TradingParams,
    TradingState,
    initial_state,
    make_episode,
    observe,
    transition_at_last_bar,
    transition_to,
)
from finenvs.tasks.trading.features import FEATURE_BOUND, FEATURE_NAMES, WARMUP
from finenvs.tasks.trading.protocol import TRADING_PROTOCOL
from finenvs.tasks.validation import check_choice, check_render_mode, fee_fraction
from finenvs.text.protocol import trimmed

SOURCES = ("real", "synthetic")
RESET_OPTIONS = ("symbol", "start", "end")
DEFAULT_SYNTHETIC_LENGTH = 252
EPISODE_CACHE_SIZE = 16
_POSITION_NAMES = {-1: "SHORT", 0: "FLAT", 1: "LONG"}
#: ``_done`` at the data's last bar of a window that goes on: truthy, so step() leaves its fast path there
_AT_LAST_BAR = "at the data's last bar"


#: ``info=`` values: every step's info in full, or only the episode's last step's (see the class docstring).
INFO_MODES = ("full", "lean")


class FinTradingEnv(gym.Env):
    """Trade one asset daily: each close, choose the position for the next day.

    ## Description
    HERCULEAN's trading task as a Gymnasium env. At the close of every trading
    day of a window the agent picks SELL, HOLD or BUY, read as the target
    position for the next day: short, flat or long the whole equity. Prices are
    split- and dividend-adjusted closes of the shipped data (or a user's data,
    or a synthetic GBM/Heston/Merton path).

    ## Data
    ``source="real"``: the shipped catalog (``dataset="core"``: AAPL ADBE AMZN
    GOOGL META MSFT NVDA TSLA SPY QQQ, 2024-01-02 .. 2026-09/10) or ``data=`` a
    CSV/Parquet path or DataFrame in the finenvs schema. ``source="synthetic"``:
    a fresh path from ``self.np_random`` every reset (``synthetic={"model": ...}``).

    ## Action Space
    ``Discrete(3)``: 0 = SELL (short; flat if ``allow_short=False``), 1 = HOLD
    (flat), 2 = BUY (long). Anything else (out of range, float, bool, NaN,
    array of the wrong shape) raises ``ValueError`` naming the valid set.

    ## Observation Space
    ``Box(-10, 10, (window * 6 + 3,), float32)``:

    | index | content |
    |---|---|
    | ``0 .. window*6-1`` | the last ``window`` days of features, oldest first, 6 per day: log_return, overnight_gap, log_range, close_location, volume_z, trend_20 (see ``finenvs.tasks.trading.features``) |
    | ``-3`` | position: -1 short, 0 flat, +1 long |
    | ``-2`` | time remaining: the share of the window's exchange sessions still ahead, ``(n - i) / n`` for the day's session index ``i`` of ``n`` decisions (1 at the first decision, 0 at the last session) |
    | ``-1`` | log(equity / equity at entry) of the open position, 0 when flat |

    ## Rewards
    ``reward="log_return"`` (default): log(E_{t+1}/E_t) of equity marked at
    successive closes, fees included; rewards sum to log(final equity).
    ``reward="dsr"``: the differential Sharpe ratio (Moody & Saffell), see
    ``finenvs.tasks.trading.core``.

    ## Costs
    ``fee_bps`` (default 5) of traded notional on every entry and every exit; a
    reversal pays both. A position open at the window's last close is closed
    there and pays the exit fee (so is one open when the data stops before the
    window's end: see Episode End). Buy-and-hold therefore has equity 1 - fee after
    entry and (1 - fee)^2 * last/first at the end (``fill="close"``). An exit's
    notional is the value of the shares sold or bought back;
    ``short_exit_fee="equity"`` charges a short's exit on its equity instead
    (HERCULEAN's reference scorer).

    ## Starting State
    Flat, equity 1.0, at the close of the window's first trading day. The
    symbol (when ``symbol`` is None) and, with ``episode_length``, the start of
    a sub-window are drawn from ``self.np_random``; ``reset(options=...)``
    accepts ``symbol``, ``start`` and ``end`` to choose them.

    ## Episode End
    ``terminated``: ruin (equity <= 0, possible only when short). ``truncated``:
    the window's last close was reached (one step per bar of the window but the
    last). The window is counted in sessions of the exchange calendar
    (``calendar``), not in bars: ``info["n_decisions"]``, the prompt's "decision
    k of n" (k = the day's session index in the window, plus one), the window
    bounds shown and the time-remaining feature are the same whether or not later
    bars exist. A missing bar (a gap) is stepped over (the position is held
    across it). When the data stops before the window's last session (a
    delisting, or the last session without its bar), the decision at the last bar
    finds no next bar: its step closes the position at that close (exit fee
    paid, ``info["closed_out"]``) and truncates; nothing before that decision
    differs from a series that goes on.

    ## Look-ahead Guarantee
    The observation at day t reads feature rows t-window+1..t only, and every
    feature row is computed from bars dated <= its own date; rewards and info up
    to t depend on nothing after t. ``as_of_view()`` gives date-locked reads at
    the current close; requests past it are counted in
    ``info["look_ahead_attempts"]``. Tests perturb every bar after a random t
    and check everything up to t is byte-identical.

    ## Arguments
    * ``symbol``: ticker, or None for a random one from ``symbols`` each reset.
    * ``symbols``: universe for random choice (default: every symbol of the dataset).
    * ``split``: ``"train"`` (2024-01-02..2025-12-31), ``"eval"``
      (2026-01-02..2026-03-31), ``"live"`` (2026-04-01..2026-05-01) or None
      (every date). Default ``"default"``: ``"train"`` for the shipped data, the
      whole series for ``data=``.
    * ``start``, ``end``: explicit window (override the split's dates).
    * ``episode_length``: decisions per episode; None = the whole window, an int
      = a random sub-window of that many decisions.
    * ``window``: days of features per observation (default 30).
    * ``fee_bps``: fee in basis points of traded notional (default 5, 0 allowed).
    * ``short_exit_fee``: what a short's exit fee is charged on: ``"shares"`` (default: the value of the shares
      bought back) or ``"equity"`` (the short's equity at the exit, as HERCULEAN's reference scorer charges it;
      a short that gained costs more to close, one that lost less). Longs pay the same either way.
    * ``allow_short``: SELL shorts (True) or goes flat (False).
    * ``fill``: ``"close"`` (default) or ``"next_open"``.
    * ``reward``: ``"log_return"`` (default) or ``"dsr"``; ``dsr_eta``: its adaptation rate.
    * ``source``: ``"real"`` or ``"synthetic"``; ``dataset``: catalog dataset (default ``"core"``).
    * ``data``: path to a CSV/Parquet file or a DataFrame with the user's own bars.
    * ``synthetic``: ``{"model": "gbm"|"heston"|"merton", "params": {...}, "bars": {...}}``.
    * ``calendar``: the exchange calendar the window is counted in (default ``"XNYS"``, the shipped data's;
      any ``exchange_calendars`` name, e.g. ``"XLON"``, ``"24/7"``). A bar on a day the calendar has no session
      counts as the session before it. ``None`` counts the bars themselves (for data no exchange calendar
      covers, e.g. centuries of daily bars; the counts then do show a series that stops or misses a day).
      Synthetic paths count their own simulated days (every day a session).
    * ``render_mode``: None, ``"ansi"`` or ``"rgb_array"`` (needs ``finenvs[plot]``).
    * ``info``: ``"full"`` (default) or ``"lean"``: ``step`` returns an empty info dict except on the episode's
      last step (terminated or truncated), which carries the full info. For RL loops that read only
      observations and rewards (more steps/s: ``benchmarks/RESULTS.md``); the text interface, the runner and the
      bench use the default.
    * ``open_end``: a window still open at the data's newest bar (``end="latest"`` or an end after the data)
      truncates there with the position still held: no close-out, no exit fee, reset info ``open_end`` True.
      ``finenvs llm --live`` sets it, so a run rolled forward over more data steps on with the same rewards
      (default False: the last close closes the position).

    The first decision day needs ``window + 18`` earlier trading days of
    history (a full observation window of features, which need 20 days each). A
    named split whose first days lack it starts at the first day that has it
    (``train`` starts 2024-03-12 with the default window); an explicit
    ``start`` without it is an error naming the earliest valid start.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: How agents' text maps to actions (see :mod:`finenvs.text.protocol`); default HOLD.
    text_protocol = TRADING_PROTOCOL
    #: Which tool set agents get (see :mod:`finenvs.tools`).
    task_family = "trading"

    def __init__(
        self,
        symbol: str | None = None,
        *,
        symbols: list[str] | None = None,
        split: str | None = DEFAULT_SPLIT,
        start: Any = None,
        end: Any = None,
        episode_length: int | None = None,
        window: int = 30,
        fee_bps: float = 5.0,
        allow_short: bool = True,
        fill: str = "close",
        reward: str = "log_return",
        dsr_eta: float = 0.01,
        source: str = "real",
        dataset: str = "core",
        data: Any = None,
        synthetic: dict[str, Any] | None = None,
        render_mode: str | None = None,
        open_end: bool = False,
        calendar: str | None = DEFAULT_CALENDAR,
        short_exit_fee: str = "shares",
        info: str = "full",
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        self.calendar = check_calendar(calendar) if source == "real" and calendar is not None else calendar
        if not isinstance(open_end, bool):
            raise ValueError(f"open_end={open_end!r} must be True or False")
        self.open_end = open_end
        check_choice("source", source, SOURCES)
        check_choice("fill", fill, FILLS)
        check_choice("reward", reward, REWARDS)
        check_choice("short_exit_fee", short_exit_fee, SHORT_EXIT_FEES)
        check_choice("info", info, INFO_MODES)
        self.info_mode = info
        self._lean_info = info == "lean"
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window={window!r} must be an integer >= 1")
        fee = fee_fraction(fee_bps)
        if not (isinstance(dsr_eta, (int, float)) and 0.0 < float(dsr_eta) <= 1.0):
            raise ValueError(f"dsr_eta={dsr_eta!r} must be in (0, 1]")
        if episode_length is not None and (
            isinstance(episode_length, bool)
            or not isinstance(episode_length, (int, np.integer))
            or episode_length < 1
        ):
            raise ValueError(f"episode_length={episode_length!r} must be None or an integer >= 1")
        if source == "synthetic" and data is not None:
            raise ValueError("data= is for source='real'; synthetic markets are generated")

        self.params = TradingParams(
            fee=fee,
            allow_short=bool(allow_short),
            fill=fill,
            reward=reward,
            dsr_eta=float(dsr_eta),
            window=int(window),
            short_exit_fee=short_exit_fee,
        )
        self.render_mode = render_mode
        self.source = source
        self.dataset = dataset
        self.split = resolve_split(split, user_data=data is not None)
        self._start, self._end = start, end
        self.episode_length = None if episode_length is None else int(episode_length)
        self._history_needed = WARMUP + self.params.window - 1  # first row index with a full observation

        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(
            low=-FEATURE_BOUND, high=FEATURE_BOUND, shape=(self.params.obs_size,), dtype=np.float32
        )

        self._series: dict[str, PriceSeries] = {}
        self._user_data = data is not None  # then every symbol must come from it, never the catalog
        self._markets: dict[str, MarketData] = {}
        self._windows: dict[str, SessionWindow] = {}
        if source == "synthetic":
            self._synthetic: SyntheticSpec | None = SyntheticSpec.from_dict(synthetic)
            self._universe: tuple[str, ...] = (symbol or f"SYN-{self._synthetic.model.upper()}",)
            if self.episode_length is None:
                self.episode_length = DEFAULT_SYNTHETIC_LENGTH
        else:
            if synthetic is not None:
                raise ValueError("synthetic= is for source='synthetic'")
            self._synthetic = None
            if data is not None:
                from finenvs.data.catalog import load_prices

                loaded = load_prices(data, symbol=symbol)
                self._series.update(loaded)
                available = sorted(loaded)
            else:
                available = None
            if symbol is not None:
                universe = [symbol]
            elif symbols is not None:
                universe = list(symbols)
                if not universe:
                    raise ValueError("symbols=[] is empty; pass at least one symbol or None for all")
            else:
                universe = available if available is not None else self._catalog().symbols(dataset)
            self._universe = tuple(universe)
            lo, hi = split_bounds(self.split, start, end)
            for sym in self._universe:
                market = self._market(sym)
                self._windows[sym] = self._resolve_window(market, lo, hi, explicit_start=start is not None)

        self._lookahead = LookAheadCounter()
        self._market_now: MarketData | None = None
        self._window_now: SessionWindow | None = None
        # precomputed episode constants (observation templates) of recent windows, reused on reset
        self._episodes: dict[tuple, Episode] = {}
        self._state: tuple = ()  # a TradingState-ordered tuple (see trading_core); empty until reset()
        self._equity_hist: list[float] = []
        self._held_hist: list[int] = []
        self._record = render_mode is not None  # keep curves only when they can be rendered
        #: False while the episode runs, _AT_LAST_BAR at the data's last bar, True with no episode (ended or not begun)
        self._done: bool | str = True

    #: The current episode's constants and series, set by reset(): step() reads _episode only once reset() has
    #: made _done falsy (or _AT_LAST_BAR), so the step loop needs no None check; the rest reach both through
    #: _current(), which raises ResetNeeded before the first reset().
    _episode: Episode
    _episode_series: PriceSeries

    # ------------------------------------------------------------------ data
    def _catalog(self) -> Any:
        from finenvs.data.catalog import default_catalog

        return default_catalog()

    def _market(self, symbol: str) -> MarketData:
        market = self._markets.get(symbol)
        if market is None:
            series = self._series.get(symbol)
            if series is None and self._user_data:
                raise UnknownSymbolError(
                    f"unknown symbol {symbol!r} in the data passed with data=; valid symbols: {sorted(self._series)}"
                )
            if series is None:
                series = self._catalog().series(symbol, self.dataset)
                self._series[symbol] = series
            market = MarketData.from_series(series)
            self._markets[symbol] = market
        return market

    def _resolve_window(
        self, market: MarketData, lo: Any, hi: Any, *, explicit_start: bool
    ) -> SessionWindow:
        return session_window(
            market.dates, lo, hi, calendar=self.calendar, history=self._history_needed, label=market.symbol,
            explicit_start=explicit_start, min_decisions=1, episode_length=self.episode_length,
            history_note=f"window={self.params.window} + {WARMUP - 1} for the 20-day features",
        )

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {list(RESET_OPTIONS)}")
        market, series, window = self._draw_episode(self.np_random, options)
        assert market is not None  # _draw_episode builds the market unless told not to
        first, last = window.first, window.last
        self._market_now = market
        self._window_now = window
        self._episode_series = series
        open_now = self.open_end and self.source == "real" and self._window_open(market, last, options)
        if open_now and last == first:
            raise WindowError(f"{market.symbol}: the live window {window.start_day}..{window.end_day} has one bar so "
                              "far; an episode needs at least 2 (the run can start once the next bar exists)")
        key = (market.symbol, first, last, window.end_day, open_now)
        episode = self._episodes.get(key) if self.source == "real" else None
        if episode is None or episode.market is not market:
            episode = make_episode(market, self.params, first, last, close_at_end=not open_now,
                                   remaining=window.time_remaining(),
                                   data_ends=not (open_now or window.complete))
            if self.source == "real":
                if len(self._episodes) >= EPISODE_CACHE_SIZE:
                    self._episodes.pop(next(iter(self._episodes)))
                self._episodes[key] = episode
        self._episode = episode
        self._state = initial_state(first, last)
        self._done = _AT_LAST_BAR if episode.data_ends and last == first else False
        self._lookahead.reset()
        self._equity_hist = [1.0]
        self._held_hist = [0]
        obs = observe(self._episode, self._state)
        info = {
            "date": market.date_strings[first],
            "symbol": market.symbol,
            "price": float(market.close[first]),
            "position": 0,
            "equity": 1.0,
            "fees": 0.0,
            "look_ahead_attempts": 0,
            "window_start": window.start_day,
            "window_end": window.end_day,
            "n_decisions": window.n_decisions,
        }
        if self.open_end:
            info["open_end"] = open_now
        return obs, info

    def _window_open(self, market: MarketData, last: int, options: dict[str, Any]) -> bool:
        """The episode runs to the data's newest bar while the window asked for ends later (or is open)."""
        if last != len(market.dates) - 1:
            return False
        _, hi = split_bounds(self.split, options.get("start", self._start), options.get("end", self._end))
        return hi is None or market.dates[last] < hi

    def _draw_episode(
        self, rng: np.random.Generator, options: dict[str, Any], *, build: bool = True
    ) -> tuple[MarketData | None, PriceSeries, SessionWindow]:
        """The market, its series and the window (rows and sessions) of a new episode, drawn from ``rng``.

        The only randomness of a reset; :class:`~finenvs.tasks.trading.vector.FinTradingVectorEnv`
        draws its sub-episodes through this same method, so both make the same
        episodes from the same generator. With ``build=False`` a synthetic
        episode comes without its :class:`MarketData` (None; the caller computes
        what it needs from the series).
        """
        symbol: Any
        if self._synthetic is not None:  # source="synthetic"
            if "start" in options or "end" in options:
                raise ValueError("start/end options apply to source='real' only")
            symbol = str(options.get("symbol") or self._universe[0])
            assert self.episode_length is not None  # a synthetic env always has one (__init__ sets the default)
            n_rows = self._history_needed + self.episode_length + 1
            series = simulate(self._synthetic, n_rows, rng, symbol=symbol)
            market = MarketData.from_series(series) if build else None
            window = bar_window(series.dates, self._history_needed, n_rows - 1)  # every simulated day a session
        else:
            symbol = options.get("symbol")
            if symbol is None:
                symbol = self._universe[0] if len(self._universe) == 1 else self._universe[int(rng.integers(len(self._universe)))]
            market = self._market(str(symbol))
            series = self._series[market.symbol]
            if "start" in options or "end" in options or symbol not in self._windows:
                lo, hi = split_bounds(
                    self.split, options.get("start", self._start), options.get("end", self._end)
                )
                window = self._resolve_window(
                    market, lo, hi, explicit_start=options.get("start", self._start) is not None
                )
            else:
                window = self._windows[symbol]
        if self.episode_length is not None and self.episode_length < window.n_decisions:
            window = window.sub_window(series.dates, self.episode_length, rng)  # that many sessions
        return market, series, window

    def _validate_action(self, action: Any) -> int:
        if type(action) is int or isinstance(action, np.integer):
            a = int(action)
        elif (
            isinstance(action, np.ndarray)
            and action.dtype.kind in "iu"
            and action.size == 1
            and action.ndim <= 1
        ):
            a = int(action.reshape(-1)[0])
        else:
            raise ValueError(
                f"invalid action {shown(action)} of type {type(action).__name__}; FinTrading-v0 takes an integer "
                "in {0: SELL, 1: HOLD, 2: BUY}"
            )
        if not 0 <= a <= 2:
            raise ValueError(f"invalid action {shown(a)}; FinTrading-v0 takes an integer in {{0: SELL, 1: HOLD, 2: BUY}}")
        return a

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done:
            if self._done is _AT_LAST_BAR:
                return self._step_at_last_bar(action)
            raise gym.error.ResetNeeded(
                "call reset() before step()" if not self._state
                else "the episode has ended; call reset() before step()"
            )
        if action.__class__ is not int or not 0 <= action <= 2:  # fast path: a valid Python int
            action = self._validate_action(action)
        ep = self._episode
        # transition() is transition_to(ep, state, ep.targets[action]); calling the latter saves a frame per step
        state, (reward, held, equity_at_decision, fee, closed_out, terminated, truncated) = transition_to(
            ep, self._state, ep.targets[action]
        )
        self._state = state
        t = state[0]
        if self._record:
            self._equity_hist.append(state[6])
            self._held_hist.append(held)
        equity = state[6]
        if self._lean_info and not (terminated or truncated):  # info="lean": nothing until the episode's last step
            info = {}
        else:
            info = {
                "date": ep.date_strings[t],
                "price": ep.close_values[t],
                "position": held,
                "equity": equity,
                "equity_at_decision": equity_at_decision,
                "fee": fee,
                "fees": state[8],
                "look_ahead_attempts": self._lookahead.attempts,
            }
        # observe(ep, state), written out for the step loop (the call and its general checks are ~10% of a step).
        # Same result as trading_core.observe (tests/test_trading_env.py checks every step against it).
        obs = ep.obs_rows[t - ep.start].copy()
        if terminated or truncated:
            if closed_out is None:  # the data's last bar before the window's end: its decision ends the episode
                truncated = False
                self._done = _AT_LAST_BAR
            else:
                self._done = True
                if closed_out:
                    info["closed_out"] = True
                if not state[3]:  # ruin or the close-out at the window's end: the book is flat, the scalars stay 0
                    return obs, reward, terminated, truncated, info
        if held:  # still open (an open window's end keeps it), so equity > 0: ruin terminates
            n = ep.n_obs_features
            obs[n] = held
            pr = log(equity / state[7])
            obs[n + 2] = FEATURE_BOUND if pr > FEATURE_BOUND else -FEATURE_BOUND if pr < -FEATURE_BOUND else pr
        return obs, reward, terminated, truncated, info

    def _step_at_last_bar(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """The decision at the data's last bar of a window that goes on: no next bar, so the position closes
        at this close and the episode is truncated (:func:`~finenvs.tasks.trading.core.transition_at_last_bar`)."""
        self._validate_action(action)
        ep = self._episode
        state, (reward, held, equity_at_decision, fee, closed_out, terminated, truncated) = transition_at_last_bar(
            ep, self._state)
        self._state = state
        self._done = True
        t = state[0]
        if self._record:
            self._equity_hist.append(state[6])
            self._held_hist.append(held)
        info = {"date": ep.date_strings[t], "price": ep.close_values[t], "position": held, "equity": state[6],
                "equity_at_decision": equity_at_decision, "fee": fee, "fees": state[8],
                "look_ahead_attempts": self._lookahead.attempts}
        if closed_out:
            info["closed_out"] = True
        return ep.obs_rows[t - ep.start].copy(), reward, terminated, truncated, info

    # ------------------------------------------------------------------ extras
    def as_of_view(self) -> AsOfView:
        """Date-locked reads at the current close (look-ahead attempts are counted).

        The view reads the episode's symbol from the episode's own series, and
        other symbols from the env's data (the user's ``data=``, else the
        catalog dataset); with ``source="real"`` it also reads the shipped rates,
        news and filing sections. A synthetic market has only its own path.
        """
        market, _, state = self._current("as_of_view")
        episode_series = self._episode_series
        as_of = market.dates[state.t]
        if self.source == "synthetic":

            def _synthetic(sym: str) -> PriceSeries:
                if sym != market.symbol:
                    raise UnknownSymbolError(f"unknown symbol {sym!r}; this synthetic market has only {market.symbol!r}")
                return episode_series

            return AsOfView(_synthetic, as_of, counter=self._lookahead, symbols=[market.symbol])

        catalog = self._catalog()
        if self._user_data:
            user = self._series
            symbols = sorted(user)

            def _lookup(sym: str) -> PriceSeries:
                if sym == market.symbol:
                    return episode_series
                if sym not in user:
                    raise UnknownSymbolError(f"unknown symbol {sym!r} in the data passed with data=; valid symbols: {symbols}")
                return user[sym]

        else:
            dataset = self.dataset
            symbols = catalog.symbols(dataset)

            def _lookup(sym: str) -> PriceSeries:
                return episode_series if sym == market.symbol else catalog.series(sym, dataset)

        return AsOfView(
            _lookup,
            as_of,
            counter=self._lookahead,
            rate_lookup=catalog.rates,
            news=catalog.news(),
            filings=catalog.filings(),
            symbols=symbols,
        )

    def text_state(self) -> dict[str, str]:
        """The state at the current close as prompt lines (used by the text interface)."""
        market, window, state = self._current("text_state")
        k, n = int(window.positions[state.t - window.first]), window.n_decisions
        fee_bps = self.params.fee * 10_000.0
        return {
            "Symbol": market.symbol,
            "Date": f"{market.date_strings[state.t]} (decision {k + 1} of {n}; window "
            f"{window.start_day}..{window.end_day})",
            "Close": f"{market.close_values[state.t]:.2f}",
            "Position": _POSITION_NAMES[state.position],
            "Equity": f"{trimmed(f'{state.equity:.4f}')} (fees paid {trimmed(f'{state.fees_paid:.4f}')})",
            "Costs": f"{fee_bps:g} bps of the notional per entry and exit, filled "
            + ("at this close" if self.params.fill == "close" else "at the next open"),
            "Shorting": "allowed" if self.params.allow_short else "disabled (SELL goes flat)",
        }

    @property
    def state(self) -> TradingState | None:
        """The current core state as a named tuple (None before reset)."""
        return TradingState(*self._state) if self._state else None

    @property
    def market(self) -> MarketData | None:
        """Arrays of the current episode's symbol."""
        return self._market_now

    @property
    def universe(self) -> tuple[str, ...]:
        return self._universe

    @staticmethod
    def action_names() -> tuple[str, ...]:
        return ACTION_NAMES

    @staticmethod
    def feature_names() -> tuple[str, ...]:
        return FEATURE_NAMES

    @staticmethod
    def scalar_names() -> tuple[str, ...]:
        return SCALAR_NAMES

    def render(self) -> Any:
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        market, window, state = self._current("render")
        if self.render_mode == "ansi":
            return self._render_text(market, window, state)
        from finenvs.tasks.rendering import equity_chart

        idx = slice(state.start, state.start + len(self._equity_hist))
        return equity_chart(
            dates=market.dates[idx],
            close=market.close[idx],
            equity=np.asarray(self._equity_hist),
            positions=np.asarray(self._held_hist),
            title=f"{market.symbol} {window.start_day}..{window.end_day}",
        )

    def _current(self, method: str) -> tuple[MarketData, SessionWindow, TradingState]:
        """The current episode's market, window and state; ``ResetNeeded`` naming ``method`` before reset()."""
        market, window = self._market_now, self._window_now
        if not self._state or market is None or window is None:
            raise gym.error.ResetNeeded(f"call reset() before {method}()")
        return market, window, TradingState(*self._state)

    def _render_text(self, market: MarketData, window: SessionWindow, state: TradingState) -> str:
        peak = max(self._equity_hist)
        drawdown = 1.0 - state.equity / peak if peak > 0 else 0.0
        return (
            f"{market.date_strings[state.t]} {market.symbol} close {market.close[state.t]:.2f} | "
            f"position {_POSITION_NAMES[state.position]} | equity {state.equity:.4f} | "
            f"drawdown {drawdown:.2%} | fees {state.fees_paid:.4f} | "
            f"day {int(window.positions[state.t - state.start])}/{window.n_decisions}"
        )


__all__ = ["FinTradingEnv"]
