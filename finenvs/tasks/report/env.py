"""FinReport-v0: one equity research report (or rating) per week; the ratings traded daily.

The Gymnasium shell around :mod:`finenvs.tasks.report.core` (ratings, weeks,
metrics), :mod:`finenvs.tasks.report.protocol` (the report schema and parser) and
:mod:`finenvs.tasks.report.quality` (the deterministic quality score). The
ratings are held through :func:`finenvs.tasks.trading.core.transition_to`, the
same daily book, fees and close-out as FinTrading-v0.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.data.calendar import DEFAULT_CALENDAR, check_calendar
from finenvs.data.schema import PriceSeries
from finenvs.data.splits import SessionWindow, session_window, split_bounds
from finenvs.errors import UnknownSymbolError, WindowError, shown
from finenvs.tasks.report.core import (
    METRIC_NAMES,
    MIN_HISTORY,
    PEER_MAP,
    PERCENT_METRICS,
    RATINGS,
    align_closes,
    metric_display,
    metrics_vector,
    position_map_of,
    price_levels,
    rating_of,
    report_days,
    week_number,
    weekly_metrics,
)
from finenvs.tasks.report.protocol import (
    DEFAULT_RATING,
    MAX_REPORT_CHARS,
    REPORT_TEMPLATE,
    SECTIONS,
    numbers_in,
    parse_report,
)
from finenvs.tasks.report.quality import (
    DIMENSIONS,
    EMA_WINDOWS,
    SMA_WINDOWS,
    Judge,
    QualityCard,
    ReportFacts,
    score_report,
    value_pool,
)
from finenvs.tasks.trading.core import (
    RUIN_LOG_RETURN,
    SHORT_EXIT_FEES,
    Episode,
    MarketData,
    TradingParams,
    initial_state,
    make_episode,
    transition_at_last_bar,
    transition_to,
)
from finenvs.tasks.validation import check_choice, check_render_mode, fee_fraction
from finenvs.text.protocol import AnswerProtocol, ParsedAction, PrintableText, TextProtocol
from finenvs.tools import indicators as ind

ACTION_MODES = ("rating", "report")
RESET_OPTIONS = ("symbol", "start", "end")
OBS_BOUND = 10.0
SCALAR_NAMES = ("position", "time_remaining")
#: Daily rows of the symbol and its peers that a report's numbers may trace to.
EVIDENCE_DAYS = 260
NEWS_EVIDENCE_DAYS = 30
_POSITION_WORDS = {1: "LONG", 0: "FLAT", -1: "SHORT"}

REPORT_INSTRUCTIONS = f"""\
Each week, at the close of the week's last trading day, write an equity research report on one stock
and rate it. The rating is traded: every trading day until the next report holds it as the position
(STRONG_BUY and BUY long, HOLD flat, SELL and STRONG_SELL short), with the fees of FinTrading-v0.
The eight sections, in order: {'; '.join(SECTIONS)}.
The report is scored 0-10 against the data: structure, content accuracy (state the week's close,
weekly return and the weekly metrics exactly as the tools give them), evidence fidelity (every number
must be visible at the report date; never write a later date) and reasoning (a rating that follows from
the thesis, a quantified risk, bull/base/bear targets)."""

@dataclass(frozen=True)
class ReportProtocol(AnswerProtocol):
    """FinReport-v0's text protocol in ``action_mode="report"``: the reply is the report itself.

    The whole reply (or the ``report`` argument of ``commit_action``) is the
    eight-section Markdown report; its declared rating is the action's name. A
    report without one clear rating still goes to the env, which trades it as
    HOLD and scores its quality; ``invalid`` says why the rating is the default.
    Replies are printable Unicode (tables, %, $, € included) of at most
    :data:`MAX_REPORT_CHARS` characters; longer or non-text replies carry no
    report (an empty one is sent: HOLD, quality 0).
    """

    def check(self, answer: Any) -> str | None:
        return parse_report(answer).rating_problem

    def answer(self, obj: Any, via: str, reasoning: str = "") -> ParsedAction:
        text = obj if isinstance(obj, str) else ""
        parsed = parse_report(text)
        return ParsedAction(text, parsed.rating, parsed.rating_problem, via, reasoning)

    def commit_for(self, parsed: ParsedAction) -> dict[str, Any]:
        return {"report": parsed.action}

    def commit_schema(self) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"report": {"type": "string",
                                          "description": "The full eight-section Markdown report, with its "
                                          "'Rating: X' lines."}},
                "required": ["report"], "additionalProperties": False}

    def parse_commit(self, arguments: Any) -> ParsedAction:
        arguments, problem = self.commit_arguments(arguments)
        if problem is not None:
            return ParsedAction("", DEFAULT_RATING, problem, "tool")
        report = arguments.get("report")
        if not isinstance(report, str):
            return ParsedAction("", DEFAULT_RATING, "commit_action needs a string 'report'", "tool")
        if len(report) > self.max_chars:
            return ParsedAction("", DEFAULT_RATING,
                                f"the report has {len(report)} characters; the limit is {self.max_chars}", "tool")
        return self.answer(report, "tool")

    def parse_text(self, text: Any) -> ParsedAction:
        parsed = super().parse_text(text)
        if parsed.via == "default":  # not read: an empty report, traded as HOLD
            return ParsedAction("", DEFAULT_RATING, parsed.invalid, "default")
        return parsed


REPORT_TEXT_PROTOCOL = ReportProtocol(
    task="FinReport-v0",
    instructions=REPORT_INSTRUCTIONS,
    actions={"REPORT": "REPORT"},
    default=DEFAULT_RATING,
    default_reason="a report without one clear rating is traded as HOLD (flat: no market risk)",
    max_chars=MAX_REPORT_CHARS,
    hint="the eight-section report with 'Rating: <STRONG_SELL|SELL|HOLD|BUY|STRONG_BUY>' in sections 2 and 8",
    answer_note=(
        "Reply with the whole report (Markdown, the eight sections in order, 'Rating: X' in sections 2 and 8), "
        "or pass it as the 'report' argument of the commit_action tool. Call get_report_template for the "
        f"skeleton. At most {MAX_REPORT_CHARS:,} characters; a report without one clear rating is traded as "
        "HOLD and counted as invalid."),
    commit_note="Commit this week's report (the eight sections with its rating); the market then moves to the next "
                "report date.",
    episode_labels=("Symbol", "Ratings"),
)

REPORT_PROTOCOL = TextProtocol(
    task="FinReport-v0",
    instructions=REPORT_INSTRUCTIONS,
    actions={r: i for i, r in enumerate(RATINGS)},
    synonyms={"STRONG BUY": "STRONG_BUY", "STRONG SELL": "STRONG_SELL", "NEUTRAL": "HOLD"},
    default=DEFAULT_RATING,
    default_reason="HOLD is flat: an unreadable reply takes no market risk",
    max_chars=MAX_REPORT_CHARS,
    episode_labels=("Symbol", "Ratings"),
)


class FinReportEnv(gym.Env):
    """Rate one stock every week (with or without a written report); the ratings are traded daily.

    ## Description
    HERCULEAN's Market Insights workflow as a Gymnasium env. At the close of
    each week's last trading day in the window the agent issues a rating —
    STRONG_SELL, SELL, HOLD, BUY or STRONG_BUY — either as an integer (RL,
    ``action_mode="rating"``) or inside an eight-section Markdown research
    report (LLMs, ``action_mode="report"``), which is also scored for quality
    (0-10) against the data visible that day.

    ## Data
    The shipped catalog (``dataset="core"``). The symbol's peer basket comes from
    :data:`finenvs.tasks.report.core.PEER_MAP` (or ``peers=``); every peer must be a
    symbol of the dataset. News and filings are the shipped ones (news covers
    2024-12-31..2025-11-16 and filings 2024-11..2025-08, so reports in 2026 see
    only older documents).

    ## Action Space
    ``action_mode="rating"``: ``Discrete(5)``: 0 STRONG_SELL, 1 SELL, 2 HOLD,
    3 BUY, 4 STRONG_BUY. ``action_mode="report"``: ``Text(max_length=60000)``,
    the report. Either mode also accepts the other kind of action (an int
    rating, or a report ``str``/``bytes``). A report without one clear rating
    trades as HOLD with ``info["invalid_action"]`` saying why; an int outside
    0..4 or any other type raises ``ValueError``.

    ## Observation Space
    ``Box(-10, 10, (18,), float32)``: the 16 weekly metrics of the report day
    (order of ``METRIC_NAMES``; percent metrics x10, volatility x5, volume
    change x2, (RSI - 50) / 10, MACD histogram in price units, beta and
    correlation as they are; clipped to +-10, nan as 0), then the position
    held (-1..1) and the time remaining, ``1 - j / n`` for report number ``j``
    (0-based) of the window's ``n`` calendar report days (1 at the first report).

    ## Rewards
    log(E_next / E_now): the log return of equity from this report's close to
    the next report's close (or the window's end), fees included, under the
    rating's position. Rewards sum to log(final equity).

    ## Costs
    ``fee_bps`` (default 5) of traded notional on every entry and exit, as in
    FinTrading-v0; a rating that keeps the same position trades nothing; the
    window's last close closes any position.

    ## Starting State
    Flat, equity 1.0, at the close of the first report day. The symbol (when
    ``symbol`` is None) and, with ``episode_weeks``, the first report of a
    sub-window are drawn from ``self.np_random``; ``reset(options=...)``
    accepts ``symbol``, ``start`` and ``end``.

    ## Episode End
    ``terminated``: ruin (equity <= 0, possible only when short). ``truncated``:
    the last report's holding period ended at the window's last close. One step
    per report day (13 in the eval split). Report days come from the exchange
    calendar (``calendar``), not from the bars: the window's first session, then
    each later week's last session before the window's last session. ``n_reports``,
    the prompt's "report k of n", the window shown and time remaining are the
    same whether or not later bars exist. A report day without its bar (a gap)
    is reported at the next bar; when the data stops before the window's end,
    the last report's holding period ends at the last bar, whose close closes
    the position (exit fee paid) and truncates the episode.

    ## Look-ahead Guarantee
    The observation, the metrics and the quality facts of report day t are
    computed from rows dated <= t (``weekly_metrics`` reads nothing past its
    last row; tools read through ``as_of_view()``); a report's numbers are
    checked only against what was visible at t, and any later date it writes
    fails Evidence fidelity. Tests perturb every bar after t and check the
    observations, metrics and rewards up to t are byte-identical.

    ## Arguments
    * ``symbol`` / ``symbols``: the ticker, or the universe to draw from (default: every symbol with a peer basket).
    * ``split``: ``"train"``, ``"eval"`` (13 reports) or ``"live"``; ``start``, ``end``: explicit dates.
    * ``episode_weeks``: reports per episode (None = the whole window; an int = a random sub-window).
    * ``action_mode``: ``"rating"`` (default) or ``"report"``.
    * ``position_map``: ``"herculean"`` (default: strong and plain ratings both +-1), ``"scaled"``
      (plain ratings +-0.5) or a ``{rating: exposure in [-1, 1]}`` dict.
    * ``fee_bps``: fee in basis points (default 5).
    * ``short_exit_fee``: ``"shares"`` (default) or ``"equity"``: what a short's exit fee is charged on, as in
      FinTrading-v0 (``"equity"``: the short's equity at the exit, HERCULEAN's reference scorer).
    * ``peers``: ``{symbol: [peer, ...]}`` replacing ``PEER_MAP`` entries.
    * ``judge``: optional ``judge(report, context) -> score in [0, 1]`` adding a Reasoning check
      (see :func:`finenvs.tasks.report.baselines.llm_judge`); never required. Not JSON: pass it to ``gym.make`` directly.
    * ``dataset``: catalog dataset (default ``"core"``); ``render_mode``: None, ``"ansi"`` or ``"rgb_array"``.
    * ``calendar``: the exchange calendar of the report days and counts (default ``"XNYS"``; any
      ``exchange_calendars`` name).
    * ``open_end``: a live run (``finenvs llm --live`` sets it). A window still open at the data's newest bar
      (``end="latest"`` or an end after the data) truncates on reaching its last report that has a bar, with
      the position still held (no close-out; reset info ``open_end`` True): that report waits for the bars of
      its week, and a later run over more data steps on from it with the same rewards. Default False.

    The first report needs 61 earlier trading days (the 60-day beta and the
    12-week return); a named split starts at the first report day that has them.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}
    task_family = "report"

    def __init__(
        self,
        symbol: str | None = None,
        *,
        symbols: list[str] | None = None,
        split: str | None = "train",
        start: Any = None,
        end: Any = None,
        episode_weeks: int | None = None,
        action_mode: str = "rating",
        position_map: Any = None,
        fee_bps: float = 5.0,
        peers: dict[str, list[str]] | None = None,
        judge: Judge | None = None,
        dataset: str = "core",
        render_mode: str | None = None,
        calendar: str | None = DEFAULT_CALENDAR,
        open_end: bool = False,
        short_exit_fee: str = "shares",
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        self.calendar = None if calendar is None else check_calendar(calendar)
        if not isinstance(open_end, bool):
            raise ValueError(f"open_end={open_end!r} must be True or False")
        self.open_end = open_end
        check_choice("action_mode", action_mode, ACTION_MODES)
        check_choice("short_exit_fee", short_exit_fee, SHORT_EXIT_FEES)
        if episode_weeks is not None and (isinstance(episode_weeks, bool) or not isinstance(episode_weeks, int)
                                          or episode_weeks < 1):
            raise ValueError(f"episode_weeks={episode_weeks!r} must be None or an integer >= 1")
        if judge is not None and not callable(judge):
            raise ValueError(f"judge must be callable(report, context) -> score in [0, 1], got {type(judge).__name__}")
        self.position_map = position_map_of(position_map)
        self.params = TradingParams(fee=fee_fraction(fee_bps), allow_short=True, window=1,
                                    short_exit_fee=short_exit_fee)
        self.action_mode = action_mode
        #: The text protocol: rating words (``rating``), or the report itself (``report``).
        self.text_protocol = REPORT_PROTOCOL if action_mode == "rating" else REPORT_TEXT_PROTOCOL
        self.split, self._start, self._end = split, start, end
        self.episode_weeks = episode_weeks
        self.dataset = dataset
        self.judge = judge
        self.render_mode = render_mode
        catalog = self._catalog()
        available = set(catalog.symbols(dataset))
        self.peer_map: dict[str, tuple[str, ...]] = dict(PEER_MAP)
        for sym, basket in (peers or {}).items():
            self.peer_map[str(sym)] = tuple(str(p) for p in basket)
        if symbol is not None:
            universe = [symbol]
        elif symbols is not None:
            universe = list(symbols)
            if not universe:
                raise ValueError("symbols=[] is empty; pass at least one symbol or None for all")
        else:
            universe = sorted(s for s in self.peer_map if s in available)
        for sym in universe:
            if sym not in available:
                raise UnknownSymbolError(f"unknown symbol {sym!r} in dataset {dataset!r}; valid symbols: {sorted(available)}")
            listed = self.peer_map.get(sym)
            if not listed:
                raise ValueError(f"{sym} has no peer basket; pass peers={{{sym!r}: [...]}} with symbols of {dataset!r}")
            bad = [p for p in listed if p not in available or p == sym]
            if bad:
                raise ValueError(f"peers of {sym} must be other symbols of dataset {dataset!r}; invalid: {bad}")
        self._universe = tuple(universe)
        self._bounds = split_bounds(split, start, end)
        self._windows = {sym: self._window(sym, self._bounds, explicit_start=start is not None) for sym in universe}

        self.action_space: spaces.Space = (
            spaces.Discrete(len(RATINGS)) if action_mode == "rating" else PrintableText(MAX_REPORT_CHARS)
        )
        self.observation_space: spaces.Box = spaces.Box(
            -OBS_BOUND, OBS_BOUND, (len(METRIC_NAMES) + len(SCALAR_NAMES),), np.float32
        )
        self._lookahead = LookAheadCounter()
        self._markets: dict[str, MarketData] = {}
        self._metric_cache: dict[tuple[str, int], dict[str, float]] = {}
        self._doc_numbers: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._days: np.ndarray = np.empty(0, dtype=np.int64)  # rows of the report days that have a bar
        self._numbers: np.ndarray = np.empty(0, dtype=np.int64)  # their report numbers (0-based) on the calendar
        self._n_reports = 0  # report days of the window on the calendar
        self._open = False
        self._k = 0
        self._state: tuple = ()  # a TradingState-ordered tuple (see the trading core); empty until reset()
        self._done = True
        self._history: list[dict[str, Any]] = []
        self._daily: list[tuple[str, float, float]] = []

    #: The current episode's symbol, window and constants, set by reset() with the state: methods that read them
    #: first check that the state is set (ResetNeeded otherwise).
    _symbol: str
    _window_now: SessionWindow
    _episode: Episode

    # ------------------------------------------------------------------ data
    def _catalog(self) -> Any:
        from finenvs.data.catalog import default_catalog

        return default_catalog()

    def _series(self, symbol: str) -> PriceSeries:
        return self._catalog().series(symbol, self.dataset)

    def _market(self, symbol: str) -> MarketData:
        market = self._markets.get(symbol)
        if market is None:
            market = MarketData.from_series(self._series(symbol))
            self._markets[symbol] = market
        return market

    def _window(self, symbol: str, bounds: tuple[Any, Any], *, explicit_start: bool) -> SessionWindow:
        dates = self._series(symbol).dates
        return session_window(
            dates, *bounds, calendar=self.calendar, history=MIN_HISTORY, label=symbol,
            explicit_start=explicit_start, min_decisions=1, episode_length=None,
            history_note="the 60-day beta and 12-week return of the weekly metrics",
        )

    @staticmethod
    def _report_rows(dates: np.ndarray, window: SessionWindow) -> tuple[np.ndarray, np.ndarray]:
        """The window's report days on its calendar, as ``(rows, numbers)``: the row of each report day's bar
        (the first bar on or after it; a report day without its bar is reported at the next bar) and the
        report's number (0-based) among the calendar's report days; report days after the data's last bar in
        the window have no row. Reads the bars of each report day only."""
        sessions = window.sessions
        picks = report_days(sessions, 0, sessions.size - 1)  # session indices of the report days
        rows = np.searchsorted(dates, sessions[picks], side="left").astype(np.int64)
        keep = rows <= window.last
        keep[1:] &= rows[1:] > rows[:-1]  # one report per bar (a gap of a week or more merges report days)
        return rows[keep], np.flatnonzero(keep).astype(np.int64)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_markets"] = {}  # rebuilt from the catalog on demand
        state["_doc_numbers"] = {}
        return state

    def listed_peers(self, symbol: str, day: Any) -> tuple[str, ...]:
        """``symbol``'s peers with a bar on or before ``day``: a peer listed later is not named (nor used) before
        it lists, exactly as if it were not in the basket."""
        out = []
        for peer in self.peer_map[symbol]:
            dates = self._series(peer).dates
            if dates.size and dates[0] <= np.datetime64(day, "D"):
                out.append(peer)
        return tuple(out)

    def metrics_at(self, symbol: str, row: int) -> dict[str, float]:
        """The 16 weekly metrics of ``symbol`` at the close of row ``row`` (rows <= row only; the peers listed
        by then; none listed: nan sector-relative metrics)."""
        key = (symbol, int(row))
        cached = self._metric_cache.get(key)
        if cached is None:
            series = self._series(symbol)
            dates = series.dates[: row + 1]
            columns = []
            for peer in self.listed_peers(symbol, dates[-1]):
                ps = self._series(peer)
                stop = int(np.searchsorted(ps.dates, dates[-1], side="right"))  # peer rows <= the report day
                columns.append(align_closes(dates, ps.dates[:stop], ps.close[:stop]))
            peers = np.column_stack(columns) if columns else None
            cached = weekly_metrics(dates, series.close[: row + 1], series.volume[: row + 1], peers)
            self._metric_cache[key] = cached
        return dict(cached)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {list(RESET_OPTIONS)}")
        rng = self.np_random
        symbol = options.get("symbol")
        if symbol is None:
            symbol = self._universe[0] if len(self._universe) == 1 else self._universe[int(rng.integers(len(self._universe)))]
        symbol = str(symbol)
        if symbol not in self._windows and symbol not in self.peer_map:
            raise UnknownSymbolError(f"unknown symbol {symbol!r}; valid symbols: {list(self._universe)}")
        bounds = split_bounds(self.split, options.get("start", self._start), options.get("end", self._end))
        if "start" in options or "end" in options or symbol not in self._windows:
            window = self._window(symbol, bounds, explicit_start=options.get("start", self._start) is not None)
        else:
            window = self._windows[symbol]
        market = self._market(symbol)
        days, numbers = self._report_rows(market.dates, window)
        n_reports = int(report_days(window.sessions, 0, window.sessions.size - 1).size)
        weeks = self.episode_weeks
        if weeks is not None and weeks < n_reports:  # a sub-window of that many calendar report days
            fits = np.flatnonzero(numbers <= n_reports - weeks)
            k0 = int(fits[int(rng.integers(0, fits.size))])
            j0 = int(numbers[k0])
            picks = report_days(window.sessions, 0, window.sessions.size - 1)
            end_session = int(picks[j0 + weeks]) if j0 + weeks < n_reports else window.sessions.size - 1
            start_session = int(window.positions[int(days[k0]) - window.first])
            upto = int(np.searchsorted(window.positions, end_session, side="right"))
            window = SessionWindow(int(days[k0]), window.first + upto - 1,
                                   window.sessions[start_session:end_session + 1],
                                   window.positions[int(days[k0]) - window.first:upto] - start_session)
            inside = (numbers >= j0) & (numbers < j0 + weeks)
            days, numbers, n_reports = days[inside], numbers[inside] - j0, weeks
        first, last = int(days[0]), window.last
        open_now = self.open_end and last == len(market.dates) - 1 and (
            bounds[1] is None or market.dates[last] < bounds[1])
        if open_now and days.size < 2:
            raise WindowError(f"{symbol}: the live window's first report week has not ended ({window.start_day}; "
                              f"data to {market.date_strings[last]}): the run can start once its next report "
                              "day has a bar")
        self._symbol = symbol
        self._days, self._numbers, self._n_reports = days, numbers, n_reports
        self._window_now, self._open = window, open_now
        self._k = 0
        self._episode = make_episode(market, self.params, first, int(last), close_at_end=not open_now,
                                     data_ends=not (open_now or window.complete))
        self._state = initial_state(first, int(last))
        self._done = False
        self._lookahead.reset()
        self._history = []
        self._daily = [(market.date_strings[int(days[0])], 1.0, 0.0)]
        info = self._info()
        info.update({"symbol": symbol, "peers": list(self.listed_peers(symbol, market.dates[int(days[0])])),
                     "window_start": window.start_day,
                     "window_end": window.end_day, "n_reports": n_reports})
        if self.open_end:
            info["open_end"] = open_now
        return self._observe(), info

    def _observe(self) -> np.ndarray:
        metrics = self.metrics_at(self._symbol, int(self._days[min(self._k, self._days.size - 1)]))
        obs = np.empty(self.observation_space.shape, dtype=np.float32)
        obs[: len(METRIC_NAMES)] = metrics_vector(metrics, OBS_BOUND)
        obs[-2] = self._state[3]
        obs[-1] = 1.0 - int(self._numbers[min(self._k, self._days.size - 1)]) / self._n_reports
        return obs

    def _info(self) -> dict[str, Any]:
        state = self._state
        market = self._episode.market
        row = int(self._days[self._k]) if self._k < self._days.size else state[0]
        return {
            "date": market.date_strings[state[0]],
            "report_date": market.date_strings[row] if self._k < self._days.size else None,
            "price": market.close_values[state[0]],
            "position": float(state[3]),
            "equity": state[6],
            "fees": state[8],
            "look_ahead_attempts": self._lookahead.attempts,
        }

    def _rating_of_action(self, action: Any) -> tuple[str, str | None, QualityCard | None]:
        if self.action_mode == "report":
            if not isinstance(action, (str, bytes)):
                raise ValueError(f"invalid action of type {type(action).__name__}; FinReport-v0 with "
                                 "action_mode='report' takes the report (str)")
            card = score_report(action, self.facts(), direction_of=self.position_map.__getitem__, judge=self.judge)
            return card.rating, card.rating_problem, card
        if isinstance(action, np.ndarray) and action.dtype.kind in "iu" and action.size == 1 and action.ndim <= 1:
            action = int(action.reshape(-1)[0])
        if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
            rating = rating_of(int(action))
            if rating is not None:
                return rating, None, None
        raise ValueError(f"invalid action {shown(action)} of type {type(action).__name__}; FinReport-v0 takes an "
                         f"integer rating in {dict(enumerate(RATINGS))} (a report, with action_mode='report')")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done:
            raise gym.error.ResetNeeded("call reset() before step()" if not self._state
                                        else "the episode has ended; call reset() before step()")
        rating, problem, card = self._rating_of_action(action)
        report_date = self._episode.market.date_strings[int(self._days[self._k])]
        number = int(self._numbers[self._k])
        target = self.position_map[rating]
        last_report = self._k + 1 >= self._days.size
        stop = self._episode.end if last_report else int(self._days[self._k + 1])
        ep, state = self._episode, self._state
        start_equity = state[6]
        days: list[dict[str, Any]] = []
        fee_paid = 0.0
        terminated = truncated = False
        while state[0] < stop:
            state, outcome = transition_to(ep, state, target)
            _, held, equity_at_decision, fee, closed_out, terminated, truncated = outcome
            if closed_out is None:  # the data's last bar before the window's end: nothing ended there
                truncated = False
            fee_paid += fee
            days.append({"date": ep.date_strings[state[0]], "equity": state[6],
                         "equity_at_decision": equity_at_decision, "position": float(held)})
            self._daily.append((ep.date_strings[state[0]], state[6], float(held)))
            if terminated or truncated:
                break
        if last_report and ep.data_ends and not (terminated or truncated):
            # the data stops before the window's end: no next bar, the position closes at the last close
            state, outcome = transition_at_last_bar(ep, state)
            _, _, _, fee, _, terminated, truncated = outcome
            fee_paid += fee
        self._state = state
        self._k += 1
        end_equity = state[6]
        reward = math.log(end_equity / start_equity) if end_equity > 0 else RUIN_LOG_RETURN
        waiting = self._open and self._k == self._days.size - 1 and not terminated
        if waiting:  # a live window's last report with a bar: it waits for the bars of its week
            truncated = True
        done = terminated or truncated or self._k >= self._days.size
        if done and not (terminated or truncated):  # a sub-window ends at its next report's close
            truncated = True
        self._done = done
        record = {"report_date": report_date, "rating": rating, "position": target, "reward": reward,
                  "invalid": problem}
        if card is not None:
            record["quality"] = card.score
            record["dimensions"] = dict(card.dimensions)
            record["text"] = card.text
            record["card"] = card.to_dict()
        self._history.append(record)
        info = self._info()
        info.update({"report_date": report_date, "rating": rating, "target_position": target, "days": days,
                     "fee": fee_paid, "equity_at_decision": days[0]["equity_at_decision"] if days else start_equity,
                     "next_report_date": None if done and not waiting else info["report_date"]})
        info["report_number"] = number + 1
        if problem is not None:
            info["invalid_action"] = problem
        if card is not None:
            info["quality"] = card.to_dict()
        if done:
            info["ratings"] = [h["rating"] for h in self._history]
            summary = self.quality_summary()
            if summary is not None:
                info["quality_summary"] = summary
        obs = self._observe() if not done or waiting else self._final_observation()
        return obs, reward, terminated, truncated, info

    def _final_observation(self) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        obs[: len(METRIC_NAMES)] = metrics_vector(self.metrics_at(self._symbol, self._state[0]), OBS_BOUND)
        return obs

    # ------------------------------------------------------------------ reports
    def quality_summary(self) -> dict[str, Any] | None:
        """Mean quality score and dimensions over the episode's reports so far (None if none was written)."""
        scored = [h for h in self._history if "quality" in h]
        if not scored:
            return None
        return {
            "reports": len(scored),
            "score": float(np.mean([h["quality"] for h in scored])),
            "dimensions": {d: float(np.mean([h["dimensions"][d] for h in scored])) for d in DIMENSIONS},
            "invalid_ratings": sum(1 for h in self._history if h["invalid"]),
        }

    @property
    def history(self) -> list[dict[str, Any]]:
        """One record per report so far: date, rating, position, reward; for a report also its
        quality score, dimensions, text and every check (``card``)."""
        return [dict(h) for h in self._history]

    def facts(self) -> ReportFacts:
        """What is visible at the current report close, for scoring a report (read through the as-of view)."""
        if not self._state or self._done:
            raise gym.error.ResetNeeded("no report is due: call reset()")
        view = self.as_of_view()
        return report_facts(view, self._symbol, self.listed_peers(self._symbol, view.as_of),
                            self.metrics_at(self._symbol, int(self._days[self._k])), self._doc_numbers)

    def report_template(self) -> str:
        """The eight-section template with this report's symbol and date filled in."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before report_template()")
        info = self._info()
        return REPORT_TEMPLATE.format(symbol=self._symbol, date=info["report_date"] or info["date"])

    @staticmethod
    def report_sections() -> tuple[str, ...]:
        """The eight section titles of a report, in order (the report tools list them)."""
        return SECTIONS

    def weekly_metrics(self) -> dict[str, float]:
        """The 16 weekly metrics at the current report close."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before weekly_metrics()")
        return self.metrics_at(self._symbol, int(self._days[min(self._k, self._days.size - 1)]))

    def as_of_view(self) -> AsOfView:
        """Date-locked reads at the current report close (look-ahead attempts are counted)."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before as_of_view()")
        catalog = self._catalog()
        row = int(self._days[self._k]) if self._k < self._days.size else self._state[0]
        return AsOfView(
            lambda sym: self._series(sym), self._episode.market.dates[row], counter=self._lookahead,
            rate_lookup=catalog.rates, news=catalog.news(), filings=catalog.filings(),
            symbols=catalog.symbols(self.dataset),
        )

    def text_state(self) -> dict[str, str]:
        """The state at the current report close as prompt lines (used by the text interface and tools)."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before text_state()")
        info = self._info()
        n = self._n_reports
        number = int(self._numbers[self._k]) + 1 if self._k < self._days.size else n
        return {
            "Symbol": self._symbol,
            "Report date": f"{info['report_date'] or info['date']} (report {number} of {n})",
            "Close": f"{info['price']:.2f}",
            "Position": f"{info['position']:+.2f} of equity ({_POSITION_WORDS.get(int(np.sign(info['position'])))})",
            "Equity": f"{info['equity']:.4f} (started at 1.0000; fees paid {info['fees']:.4f})",
            "Peers": ", ".join(self.listed_peers(self._symbol, self.as_of_view().as_of)) or "none listed yet",
            "Ratings": ", ".join(f"{r} -> {p:+g}" for r, p in self.position_map.items()),
        }

    @property
    def market(self) -> MarketData | None:
        return self._episode.market if self._state else None

    @property
    def universe(self) -> tuple[str, ...]:
        return self._universe

    @property
    def state(self) -> tuple | None:
        return self._state or None

    @staticmethod
    def action_names() -> tuple[str, ...]:
        return RATINGS

    @staticmethod
    def metric_names() -> tuple[str, ...]:
        return METRIC_NAMES

    # ------------------------------------------------------------------ render
    def render(self) -> Any:
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before render()")
        if self.render_mode == "ansi":
            info = self._info()
            last = self._history[-1] if self._history else None
            q = f" | quality {last['quality']:.1f}/10" if last and "quality" in last else ""
            rated = f"last rating {last['rating']} ({last['report_date']})" if last else "no rating yet"
            return (f"{info['date']} {self._symbol} close {info['price']:.2f} | {rated}{q} | position "
                    f"{info['position']:+.2f} | equity {info['equity']:.4f} | fees {info['fees']:.4f} | "
                    f"report {int(self._numbers[self._k - 1]) + 1 if self._k else 0}/{self._n_reports}")
        from finenvs.tasks.rendering import equity_chart

        market = self._episode.market
        start = self._state[1]
        n = len(self._daily)
        return equity_chart(
            dates=market.dates[start : start + n], close=market.close[start : start + n],
            equity=np.asarray([d[1] for d in self._daily]), positions=np.asarray([d[2] for d in self._daily]),
            title=f"{self._symbol} weekly ratings {self._window_now.start_day}..{self._window_now.end_day}",
        )


def report_facts(
    view: AsOfView,
    symbol: str,
    peers: tuple[str, ...],
    metrics: dict[str, float],
    doc_cache: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] | None = None,
) -> ReportFacts:
    """Everything a report may cite at the view's close (see :mod:`finenvs.tasks.report.quality`).

    Reads only through ``view``, so nothing after its as-of date can enter.
    """
    doc_cache = {} if doc_cache is None else doc_cache
    bars = view.prices(symbol, lookback=EVIDENCE_DAYS)
    if len(bars) == 0:
        raise WindowError(f"no {symbol} bar on or before {view.as_of}")
    close = bars.close
    plain: list[float] = [*bars.open, *bars.high, *bars.low, *close, *bars.volume]
    percent: list[float] = []
    rets = close[1:] / close[:-1] - 1.0
    percent += (100.0 * rets[-60:]).tolist()
    for name, value in metrics.items():
        plain.append(value)
        if name in PERCENT_METRICS:
            percent.append(100.0 * value)
    levels = price_levels(bars.dates, bars.high, bars.low, close)
    dates = bars.dates.astype("datetime64[D]")
    this_week = week_number(dates[-1])
    in_week = week_number(dates) == this_week
    if (~in_week).any():
        week_close = float(close[~in_week][-1])
        levels["prev_week_close"] = week_close
        levels["week_change"] = float(close[-1] - week_close)
    levels["week_open"] = float(bars.open[in_week][0])
    levels["week_volume"] = float(bars.volume[in_week].sum())
    levels.update(indicator_levels(view.prices(symbol)))
    plain += [v for v in levels.values() if math.isfinite(v)]
    peer_returns: dict[str, dict[str, float]] = {}
    for peer in peers:
        pb = view.prices(peer, lookback=EVIDENCE_DAYS)
        plain += pb.close.tolist()
        if len(pb) > 1:
            percent += (100.0 * (pb.close[1:] / pb.close[:-1] - 1.0))[-60:].tolist()
            before = pb.close[week_number(pb.dates) < this_week]
            rets = {"close": float(pb.close[-1]), "1d": float(pb.close[-1] / pb.close[-2] - 1.0),
                    "1w": float(pb.close[-1] / before[-1] - 1.0) if before.size else math.nan}
            for key, days in (("4w", 20), ("12w", 60)):
                rets[key] = float(pb.close[-1] / pb.close[-1 - days] - 1.0) if len(pb) > days else math.nan
            peer_returns[peer] = rets
            if before.size:
                percent.append(100.0 * rets["1w"])
    for series in ("DTB3", "DGS10"):
        try:
            _, rate = view.rate(series)
        except Exception:  # no rate data in a user's view: nothing to cite
            continue
        plain.append(rate)
        percent.append(rate)
    for item in view.news(symbol, lookback_days=NEWS_EVIDENCE_DAYS):
        _add_numbers(f"{item.get('title', '')} | {item.get('source', '')}", plain, percent)
    filings = view.filings(symbol)
    for filing in _latest_by_form(filings):
        for sec in filing["sections"]:
            doc_key = (filing["id"], sec["section"])
            if doc_key not in doc_cache:
                p: list[float] = []
                q: list[float] = []
                _add_numbers(view.filing_section(filing["id"], sec["section"])["text"], p, q)
                doc_cache[doc_key] = (tuple(p), tuple(q))
            plain += doc_cache[doc_key][0]
            percent += doc_cache[doc_key][1]
    return ReportFacts(
        symbol=symbol,
        report_date=_dt.date.fromisoformat(str(dates[-1])),
        close=float(close[-1]),
        metrics=dict(metrics),
        levels=levels,
        peers=tuple(peers),
        plain_values=value_pool(plain),
        percent_values=value_pool(percent),
        filings=tuple({"form": f["form"], "filed": f["filed"]} for f in filings),
        peer_returns=peer_returns,
        week_closes=tuple(float(c) for c in close[in_week]),
    )


def indicator_levels(bars: Any) -> dict[str, float]:
    """Moving averages, MACD line and signal, Bollinger bands (20, 2) and ATR(14) at the last bar of ``bars``,
    computed as ``get_indicators`` computes them (same functions, the same as-of history); nan when too short."""
    close = np.asarray(bars.close, dtype=np.float64)
    out: dict[str, float] = {}
    if close.size == 0:
        return out

    def last(values: np.ndarray) -> float:
        v = float(values[-1])
        return v if math.isfinite(v) else math.nan

    for n in SMA_WINDOWS:
        out[f"sma_{n}"] = last(ind.sma(close, n)) if close.size >= n else math.nan
    for n in EMA_WINDOWS:
        out[f"ema_{n}"] = last(ind.ema(close, n)) if close.size >= n else math.nan
    macd = ind.macd(close)
    out["macd_line"], out["macd_signal"] = last(macd["macd"]), last(macd["signal"])
    bands = ind.bollinger(close)
    out["boll_upper"], out["boll_lower"] = last(bands["upper"]), last(bands["lower"])
    out["atr_14"] = last(ind.atr(bars.high, bars.low, close))
    return out


def _latest_by_form(filings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for f in filings:  # newest first
        if f["form"] not in seen:
            seen.add(f["form"])
            out.append(f)
    return out


def _add_numbers(text: str, plain: list[float], percent: list[float]) -> None:
    for tok in numbers_in(text):
        if tok.kind != "value":
            continue
        (percent if tok.unit in ("%", "bp") else plain).append(tok.value)
        if tok.unit == "$" and tok.value != 0:
            plain.append(abs(tok.value))


__all__ = ["ACTION_MODES", "REPORT_INSTRUCTIONS", "REPORT_PROTOCOL", "FinReportEnv", "metric_display", "report_facts"]
