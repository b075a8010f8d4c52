"""FinDeltaHedge-v0: hedge a short European option by trading its underlying (the "Deep Hedging" setting).

The Gymnasium shell around :mod:`finenvs.tasks.deltahedge.core` (the path, the option
priced along it, the book's accounting and its time convention): it validates the
arguments and actions, draws a synthetic path or picks a real window at reset, calls
the core's ``transition`` and ``observe`` each step and builds ``info``. Text agents
speak :mod:`finenvs.tasks.deltahedge.protocol`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.data.asof import LookAheadCounter, to_day
from finenvs.data.chains import realised_vol
from finenvs.data.schema import date_span
from finenvs.data.splits import DEFAULT_SPLIT, resolve_split, split_bounds
from finenvs.data.synthetic import (
    TRADING_DAYS_PER_YEAR,
    GBMParams,
    HestonParams,
    MertonParams,
    SyntheticSpec,
)
from finenvs.errors import UnknownSymbolError, WindowError, shown
from finenvs.tasks.deltahedge.core import (
    LOG_MONEYNESS_BOUND,
    MAX_HEDGE,
    OBS_NAMES,
    OPTION_VALUE_BOUND,
    OPTIONS,
    VOL_SQRT_TAU_BOUND,
    HedgeEpisode,
    HedgeState,
    hedge_ratio,
    hedging_error,
    initial_state,
    make_episode,
    observe,
    simulate_path,
    transition,
)
from finenvs.tasks.deltahedge.protocol import hedge_protocol
from finenvs.tasks.validation import check_choice, check_render_mode
from finenvs.text.protocol import ParsedAction

SOURCES = ("gbm", "heston", "merton", "real")
ACTION_TYPES = ("box", "discrete")
RESET_OPTIONS = ("symbol", "start")
#: Daily log returns before a real window that its pricing vol is estimated from.
VOL_WINDOW = 60
#: model_params keys each synthetic model accepts (mu and sigma come from their own arguments).
MODEL_PARAM_KEYS: dict[str, tuple[str, ...]] = {
    "gbm": (),
    "heston": ("v0", "kappa", "theta", "xi", "rho"),
    "merton": ("jump_intensity", "jump_mean", "jump_std"),
    "real": (),
}


@dataclass
class HedgeView:
    """What a hedging decision may read: the book at grid point ``step`` (``date`` on real paths)."""

    step: int
    date: str | None
    counter: LookAheadCounter


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    numeric = isinstance(value, (int, float, np.integer, np.floating))
    return numeric and not isinstance(value, (bool, np.bool_))


def _is_scalar_array(value: Any, kinds: str) -> bool:
    """A numpy array of one element (shape () or (1,)) whose dtype kind is in ``kinds``."""
    return isinstance(value, np.ndarray) and value.dtype.kind in kinds and value.size == 1 and value.ndim <= 1


def _finite(name: str, value: Any, rule: str = "a finite number", ok: Any = None) -> float:
    if not _is_real(value) or not math.isfinite(float(value)) or (ok is not None and not ok(float(value))):
        raise ValueError(f"{name}={value!r} must be {rule}")
    return float(value)


class FinDeltaHedgeEnv(gym.Env):
    """Delta-hedge a short European option until expiry: each step, choose the hedge ratio.

    ## Description
    The "Deep Hedging" benchmark setting (Buehler et al., 2019). The agent has
    sold one European call or put, strike ``K = moneyness * S_0``, expiring in
    ``maturity_days`` trading days, at its Black-Scholes price. At each of
    ``maturity_days * steps_per_day`` rebalancing times it sets how many shares
    of the underlying to hold per option; the aim is a book whose value at expiry
    (premium, hedge gains, costs and interest minus the payoff) is as close to 0
    as possible. Black-Scholes delta hedging is the classical answer; it is exact
    only in continuous time, without costs, under GBM at the pricing vol, so
    rebalancing frequency, costs, stochastic volatility (Heston), jumps (Merton)
    and real paths all leave an error for an agent to reduce.

    Time is in trading days / 252 for the paths and the pricing alike (not the
    calendar days / 365 of :mod:`finenvs.pricing`; see :mod:`finenvs.tasks.deltahedge.core`).

    ## Data
    ``source="gbm"`` (default), ``"heston"``, ``"merton"``: a fresh path on the
    rebalancing grid from ``self.np_random`` every reset, starting at ``spot``,
    with drift ``mu`` and:

    | source | dynamics | pricing vol (the model's nominal vol) |
    |---|---|---|
    | ``gbm`` | GBM, volatility ``sigma`` | ``sigma`` |
    | ``heston`` | Heston, ``v0 = theta = sigma^2`` unless ``model_params`` sets them; kappa 2, xi 0.5, rho -0.7 | ``sqrt(theta)`` |
    | ``merton`` | GBM with diffusive vol ``sigma`` plus compensated log-normal jumps (1 a year, mean -0.05, sd 0.08) | ``sqrt(sigma^2 + lambda (m^2 + s^2))`` |

    ``model_params`` overrides the Heston fields ``v0 kappa theta xi rho`` or
    the Merton fields ``jump_intensity jump_mean jump_std`` (see
    :mod:`finenvs.data.synthetic`).

    ``source="real"``: ``maturity_days + 1`` consecutive daily closes of
    ``symbol`` (default: one drawn each reset from the dataset's symbols) from
    the shipped catalog (``dataset="core"``) or from ``data=`` (a CSV/Parquet
    path or DataFrame in the finenvs schema). The window lies inside ``split``
    (``"train"`` 2024-01-02..2025-12-31, ``"eval"`` 2026-01-02..2026-03-31,
    ``"live"`` 2026-04-01..2026-05-01, or None for all the data), its first day
    drawn uniformly from ``self.np_random``; ``reset(options={"start": date})``
    starts it at the first trading day on or after ``date`` (any date with the
    history and the days after it in the data, split or not), ``{"symbol": ...}``
    chooses the symbol. ``S_0`` is the first day's close; the pricing vol is the
    annualised realised volatility (``ddof=1``, x sqrt(252)) of the ``60`` daily
    log returns of the 61 closes *before* the first day, so it never reads the
    window. Closes are split- and dividend-adjusted, so keep ``q = 0``;
    ``steps_per_day`` must be 1.

    ## Action Space
    ``action_type="box"`` (default): ``Box(-1, 1, (1,), float32)``, the hedge
    ratio normalised: action ``a`` sets ``h = 1.5 * a`` shares per option (a
    linear map of [-1, 1] onto the hedge range [-1.5, 1.5], rounded to float32;
    a short call is hedged with h > 0, a short put with h < 0).
    :func:`~finenvs.tasks.deltahedge.core.hedge_ratio` is the map and
    :func:`~finenvs.tasks.deltahedge.core.hedge_action` its inverse
    (``[h / 1.5]`` as float32); ``info["hedge"]`` and observation index 3
    report ``h``, not ``a``.
    ``action_type="discrete"``: ``Discrete(n_bins)``, action ``k`` is the hedge
    ratio ``np.linspace(-1.5, 1.5, n_bins)[k]`` (``env.hedge_bins``).
    Anything outside the space (a value beyond the range, NaN, an array of the
    wrong shape, a bool, a string) raises ``ValueError`` naming the valid range.
    Text agents use ``FinDeltaHedge-text-v0``: a reply ``Hedge: 0.53``,
    ``{"hedge": 0.53}`` or ``commit_action {"hedge": 0.53}`` is read by
    ``env.text_protocol`` (:class:`~finenvs.tasks.deltahedge.protocol.HedgeProtocol`) into this space; an
    unreadable or out-of-range reply keeps the hedge held (:meth:`text_action`).

    ## Observation Space
    ``Box(low, high, (6,), float32)``; ``env.obs_names()`` names the entries:

    | index | content | bounds |
    |---|---|---|
    | 0 | ``log(S_t / K)`` | [-10, 10] (clipped) |
    | 1 | time to expiry ``tau`` in years (trading days / 252) | [0, T] |
    | 2 | pricing vol x sqrt(tau): the option's remaining total volatility | [0, 10] (clipped) |
    | 3 | hedge ratio currently held (set by the previous action; 0 at the start) | [-1.5, 1.5] |
    | 4 | option value ``V_t / S_0`` (Black-Scholes at the pricing vol; the payoff at expiry) | [0, 10] (clipped) |
    | 5 | Black-Scholes delta of the option at the pricing vol (the payoff's delta at expiry): the hedge ratio of classical delta hedging | [-1, 1] |

    Every entry is computed from ``S_t``, the strike, the time and the pricing
    vol, i.e. from data visible at ``t``.

    ## Rewards
    Per step: ``-(step_pnl / S_0 * 100)^2 * reward_scale``, the squared hedging
    P&L of the step in percent of the initial spot (gains and losses are both
    penalised; the episode's rewards sum to minus the realised quadratic
    variation of the book, in percent^2 of ``S_0``). The step P&L is
    ``h (S_{t+1} - S_t) + dividends + interest - (V_{t+1} - V_t) - costs``
    (:mod:`finenvs.tasks.deltahedge.core`); the step P&Ls sum to the final ``info["hedging_error"]``.

    ## Costs
    ``cost_bps`` (default 0) basis points of traded notional, ``|Δh| S_t``,
    at every rebalancing (the first one, from 0 shares, included). The hedge is
    marked, not liquidated, at expiry. Cash earns ``r`` and shares pay the yield
    ``q`` (both continuously compounded, per year).

    ## Starting State
    Short one option, premium ``V_0`` in cash, no shares, at grid point 0.

    ## Episode End
    ``terminated`` at expiry, after ``maturity_days * steps_per_day`` steps;
    ``truncated`` is never set (the path always reaches expiry). The last info
    adds ``hedging_error`` (currency units), ``hedging_error_pct`` (x 100 / S_0)
    and ``payoff``.

    ## Look-ahead Guarantee
    The observation at step t depends only on spots up to t (and, for real
    paths, the pricing vol from the 60 returns before the window); the reward
    and info of step t -> t+1 on spots up to t+1. The text variant's prompt
    (:meth:`text_state`) and tools (:mod:`finenvs.tools.options`) read grid
    point t only. Tests replace every close after
    a date and check everything up to it is unchanged, and change pre-window
    closes to check the pricing vol reads them and nothing else.

    ## Info
    Every step: ``step``, ``spot``, ``hedge`` (held over the step just ended; 0
    at reset), ``option_value``, ``pnl`` (cumulative), ``step_pnl``, ``cost``
    (this step's), ``costs`` (cumulative); ``date`` on real paths. Reset adds
    ``strike``, ``premium``, ``pricing_vol``, ``source``, ``n_steps``, ``maturity``
    (years), and on real paths ``symbol``, ``start`` and ``expiry`` (dates).

    ## Arguments
    * ``option``: ``"call"`` (default) or ``"put"``.
    * ``moneyness``: ``K / S_0`` (default 1.0, at the money; > 0).
    * ``maturity_days``: trading days to expiry (default 30; >= 1).
    * ``steps_per_day``: rebalancing steps per trading day (default 1; >= 1; 1 for real paths).
    * ``source``: ``"gbm"`` (default), ``"heston"``, ``"merton"`` or ``"real"``.
    * ``sigma``: annual volatility of the synthetic models (default 0.2; > 0), see Data.
    * ``mu``: annual drift of the synthetic paths (default 0.0).
    * ``r``, ``q``: risk-free rate and dividend yield (default 0.0 each).
    * ``spot``: ``S_0`` of synthetic paths (default 100.0).
    * ``model_params``: Heston/Merton overrides (see Data).
    * ``cost_bps``: transaction cost in basis points of traded notional (default 0.0; >= 0).
    * ``reward_scale``: multiplies the reward (default 1.0; > 0).
    * ``action_type``: ``"box"`` (default) or ``"discrete"``; ``n_bins``: bins of the discrete
      space (default 31; >= 2).
    * ``symbol``, ``split`` (default: ``"train"`` on the shipped data, the whole series with ``data=``),
      ``dataset`` (default ``"core"``), ``data``: real paths, see Data.
    * ``render_mode``: None, ``"ansi"`` (a text line) or ``"rgb_array"`` (spot path
      and hedge ratio against the BS delta; needs ``finenvs[plot]``).

    ## Version History
    * v0: initial release; the box action is the normalised ``[-1, 1]`` (hedge ratio ``1.5 * a``), as
      Gymnasium's ``check_env`` asks, instead of the hedge ratio itself.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: Which baselines apply (see :mod:`finenvs.tasks.deltahedge.baselines`).
    task_family = "deltahedge"

    def __init__(
        self,
        option: str = "call",
        *,
        moneyness: float = 1.0,
        maturity_days: int = 30,
        steps_per_day: int = 1,
        source: str = "gbm",
        sigma: float = 0.2,
        mu: float = 0.0,
        r: float = 0.0,
        q: float = 0.0,
        spot: float = 100.0,
        model_params: dict[str, float] | None = None,
        cost_bps: float = 0.0,
        reward_scale: float = 1.0,
        action_type: str = "box",
        n_bins: int = 31,
        symbol: str | None = None,
        split: str | None = DEFAULT_SPLIT,
        dataset: str = "core",
        data: Any = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        check_choice("option", option, OPTIONS)
        check_choice("source", source, SOURCES)
        check_choice("action_type", action_type, ACTION_TYPES)
        self.moneyness = _finite("moneyness", moneyness, "a finite number > 0", lambda v: v > 0)
        for name, value in (("maturity_days", maturity_days), ("steps_per_day", steps_per_day)):
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")
        if not _is_int(n_bins) or n_bins < 2:
            raise ValueError(f"n_bins={n_bins!r} must be an integer >= 2")
        self.sigma = _finite("sigma", sigma, "a finite number > 0", lambda v: v > 0)
        self.mu = _finite("mu", mu)
        self.r = _finite("r", r)
        self.q = _finite("q", q)
        self.spot = _finite("spot", spot, "a finite number > 0", lambda v: v > 0)
        self.cost_bps = _finite("cost_bps", cost_bps, "a finite number >= 0 (basis points)", lambda v: v >= 0)
        self.reward_scale = _finite("reward_scale", reward_scale, "a finite number > 0", lambda v: v > 0)
        if source == "real":
            if steps_per_day != 1:
                raise ValueError(
                    f"steps_per_day={steps_per_day!r}: real paths are daily closes, "
                    "so steps_per_day must be 1"
                )
            if model_params:
                raise ValueError("model_params= is for the synthetic sources (heston, merton); source='real'")
        elif data is not None:
            raise ValueError(f"data= is for source='real'; source={source!r} paths are simulated")
        elif symbol is not None:
            raise ValueError(f"symbol= is for source='real'; source={source!r} paths are simulated")

        self.option = option
        self.source = source
        self.maturity_days = int(maturity_days)
        self.steps_per_day = int(steps_per_day)
        self.n_steps = self.maturity_days * self.steps_per_day
        self.dt = 1.0 / (TRADING_DAYS_PER_YEAR * self.steps_per_day)
        self.maturity = self.n_steps * self.dt
        self.action_type = action_type
        self.n_bins = int(n_bins)
        self.split = resolve_split(split, user_data=data is not None)
        self.dataset = dataset
        self.render_mode = render_mode
        self._fee = self.cost_bps / 10_000.0
        self._model_params, self._pricing_vol = self._synthetic_model(source, model_params or {})

        bins = np.linspace(-MAX_HEDGE, MAX_HEDGE, self.n_bins)
        bins.setflags(write=False)
        self.hedge_bins = bins
        self._bin_values = tuple(bins.tolist())
        self._discrete = action_type == "discrete"
        if self._discrete:
            self.action_space: spaces.Space = spaces.Discrete(self.n_bins)
        else:  # normalised: action a sets the hedge ratio MAX_HEDGE * a (hedge_ratio)
            self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        #: How text agents state the hedge (``FinDeltaHedge-text-v0``; see :class:`~finenvs.tasks.deltahedge.protocol.HedgeProtocol`).
        self.text_protocol = hedge_protocol(option, self.cost_bps, self._bin_values if self._discrete else None)
        low = np.array([-LOG_MONEYNESS_BOUND, 0.0, 0.0, -MAX_HEDGE, 0.0, -1.0], dtype=np.float32)
        high = np.array(
            [LOG_MONEYNESS_BOUND, self.maturity, VOL_SQRT_TAU_BOUND, MAX_HEDGE, OPTION_VALUE_BOUND, 1.0],
            dtype=np.float32,
        )
        self.observation_space = spaces.Box(low, high, dtype=np.float32)

        # real paths: closes and date strings per symbol (plain arrays: the env pickles without a catalog)
        self._closes: dict[str, np.ndarray] = {}
        self._dates: dict[str, np.ndarray] = {}
        self._starts: dict[str, tuple[int, int]] = {}  # symbol -> (first, last) valid start rows in the split
        self._universe: tuple[str, ...] = ()
        if source == "real":
            self._load_real(symbol, data)

        self._state: tuple = ()  # a HedgeState-ordered tuple (see the core); empty until reset()
        self._symbol: str | None = None
        self._hedge_hist: list[float] = []
        self._record = render_mode is not None
        self._done = True
        self._counter = LookAheadCounter()

    #: The current episode's constants, set by reset() with the state: step() reads it only once reset() has made
    #: _done False, so the step loop needs no None check; the rest go through _current().
    _episode: HedgeEpisode

    # ------------------------------------------------------------------ setup
    def _synthetic_model(self, source: str, overrides: dict[str, Any]) -> tuple[Any, float | None]:
        """The model's parameter dataclass and its nominal (pricing) vol; (None, None) for real paths."""
        if not isinstance(overrides, dict):
            raise ValueError(f"model_params={overrides!r} must be a dict of parameter values")
        valid = MODEL_PARAM_KEYS[source]
        unknown = sorted(set(overrides) - set(valid))
        if unknown:
            hint = " (pass mu= and sigma= as arguments)" if {"mu", "sigma"} & set(unknown) else ""
            raise ValueError(
                f"unknown model_params {unknown} for source={source!r}; valid keys: {list(valid)}{hint}"
            )
        for key, value in overrides.items():
            _finite(f"model_params[{key!r}]", value)
        if source == "real":
            return None, None
        if source == "gbm":
            params: Any = GBMParams(mu=self.mu, sigma=self.sigma)
        elif source == "heston":
            params = HestonParams(mu=self.mu, v0=self.sigma**2, theta=self.sigma**2)
        else:
            params = MertonParams(mu=self.mu, sigma=self.sigma)
        params = dataclasses.replace(params, **{k: float(v) for k, v in overrides.items()})
        spec = SyntheticSpec(model=source, params=params)
        spec.validate()  # DataError (a ValueError) naming the parameter out of range
        vol = spec.nominal_daily_vol() * math.sqrt(TRADING_DAYS_PER_YEAR)
        if not vol > 0.0:
            raise ValueError(f"source={source!r} has nominal vol {vol!r}; it must be > 0 to price the option")
        return params, vol

    def _load_real(self, symbol: str | None, data: Any) -> None:
        if data is not None:
            from finenvs.data.catalog import load_prices

            loaded = load_prices(data, symbol=symbol)
            if symbol is not None and symbol not in loaded:
                raise UnknownSymbolError(
                    f"unknown symbol {symbol!r} in the data passed with data=; "
                    f"valid symbols: {sorted(loaded)}"
                )
            universe = [symbol] if symbol is not None else sorted(loaded)
            series = {s: loaded[s] for s in universe}
        else:
            from finenvs.data.catalog import default_catalog

            catalog = default_catalog()
            universe = [symbol] if symbol is not None else catalog.symbols(self.dataset)
            series = {s: catalog.series(s, self.dataset) for s in universe}
        lo, hi = split_bounds(self.split)
        for sym in universe:
            s = series[sym]
            self._closes[sym] = s.close
            self._dates[sym] = s.dates
            self._starts[sym] = self._split_starts(sym, lo, hi)
        self._universe = tuple(universe)

    def _split_starts(self, sym: str, lo: Any, hi: Any) -> tuple[int, int]:
        """First and last start rows of windows inside ``[lo, hi]`` with the pricing vol's history."""
        dates = self._dates[sym]
        m = self.maturity_days
        first = 0 if lo is None else int(np.searchsorted(dates, lo, side="left"))
        last = len(dates) - 1 if hi is None else int(np.searchsorted(dates, hi, side="right")) - 1
        first_start, last_start = max(first, VOL_WINDOW + 1), last - m
        if first_start > last_start:
            raise WindowError(
                f"{sym}: split {self.split!r} ({lo}..{hi}) holds no window of {m + 1} closes "
                f"(maturity_days={m}) with {VOL_WINDOW + 1} closes of history before it (the pricing vol's "
                f"{VOL_WINDOW} returns); the data covers {date_span(dates)}. Use a longer split, split=None or a "
                "shorter maturity_days"
            )
        return first_start, last_start

    def _explicit_start(self, sym: str, start: Any) -> int:
        dates = self._dates[sym]
        day = to_day(start, name="start")
        row = int(np.searchsorted(dates, day, side="left"))
        earliest, latest = VOL_WINDOW + 1, len(dates) - 1 - self.maturity_days
        if not earliest <= row <= latest:
            valid = f"{dates[earliest]}..{dates[latest]}" if earliest <= latest else "none (series too short)"
            raise WindowError(
                f"{sym}: start {day} has {min(row, len(dates))} closes before it and "
                f"{max(len(dates) - 1 - row, 0)} after; an episode needs {VOL_WINDOW + 1} before "
                f"(the pricing vol's {VOL_WINDOW} returns) and maturity_days={self.maturity_days} after. "
                f"Valid starts: {valid}"
            )
        return row

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {list(RESET_OPTIONS)}")
        rng = self.np_random
        if self.source == "real":
            ep, extra = self._real_episode(options, rng)
        else:
            if options:
                raise ValueError(f"reset options {sorted(options)} apply to source='real' only")
            path = simulate_path(self.source, self._model_params, self.spot, self.n_steps, self.dt, rng)
            assert self._pricing_vol is not None  # a synthetic source's nominal vol (_synthetic_model)
            ep = make_episode(
                path, option=self.option, strike=self.moneyness * self.spot, dt=self.dt, r=self.r, q=self.q,
                pricing_vol=self._pricing_vol, fee=self._fee, reward_scale=self.reward_scale,
            )
            extra = {}
        self._episode = ep
        self._state = initial_state(ep)
        self._done = False
        self._hedge_hist = [0.0]
        self._counter = LookAheadCounter()
        info = {
            "step": 0,
            "spot": ep.spots[0],
            "hedge": 0.0,
            "option_value": ep.values[0],
            "pnl": 0.0,
            "step_pnl": 0.0,
            "cost": 0.0,
            "costs": 0.0,
            "strike": ep.strike,
            "premium": ep.premium,
            "pricing_vol": ep.pricing_vol,
            "source": self.source,
            "n_steps": ep.n_steps,
            "maturity": ep.maturity,
            **extra,
        }
        return observe(ep, self._state), info

    def _real_episode(self, options: dict[str, Any], rng: np.random.Generator) -> tuple[HedgeEpisode, dict]:
        sym = options.get("symbol")
        if sym is None:
            universe = self._universe
            sym = universe[0] if len(universe) == 1 else universe[int(rng.integers(len(universe)))]
        elif sym not in self._closes:
            raise UnknownSymbolError(f"unknown symbol {sym!r}; this env's symbols: {list(self._universe)}")
        if options.get("start") is not None:
            row = self._explicit_start(sym, options["start"])
        else:
            first, last = self._starts[sym]
            row = first + int(rng.integers(last - first + 1))
        closes = self._closes[sym]
        vol = realised_vol(closes[row - VOL_WINDOW - 1 : row], days=VOL_WINDOW)
        dates = self._dates[sym]
        if not (math.isfinite(vol) and vol > 0.0):
            raise ValueError(
                f"{sym}: the realised vol of the {VOL_WINDOW} returns before {dates[row]} is {vol!r}; "
                "the option cannot be priced (flat or broken prices?)"
            )
        stop = row + self.maturity_days + 1
        date_strings = tuple(np.datetime_as_string(dates[row:stop], unit="D").tolist())
        window = closes[row:stop]
        ep = make_episode(
            window, option=self.option, strike=self.moneyness * float(window[0]), dt=self.dt, r=self.r,
            q=self.q, pricing_vol=vol, fee=self._fee, reward_scale=self.reward_scale, dates=date_strings,
        )
        self._symbol = sym
        first, last = date_strings[0], date_strings[-1]
        return ep, {"symbol": sym, "start": first, "expiry": last, "date": first}

    def hedge_of(self, action: Any) -> float:
        """The hedge ratio an action sets: bin ``k``'s ratio, or ``1.5 * a`` for a box action ``a`` in [-1, 1].

        Raises:
            ValueError: the action is outside the space (the message names the valid range).
        """
        if self._discrete:
            if _is_int(action):
                k = int(action)
            elif _is_scalar_array(action, "iu"):
                k = int(action.reshape(-1)[0])
            else:
                k = None
            if k is None or not 0 <= k < self.n_bins:
                raise ValueError(
                    f"invalid action {shown(action)}: FinDeltaHedge-v0 (action_type='discrete') takes an integer "
                    f"in [0, {self.n_bins - 1}], bin k meaning hedge ratio "
                    f"np.linspace(-1.5, 1.5, {self.n_bins})[k]"
                )
            return self._bin_values[k]
        if _is_real(action):
            try:
                value = float(action)
            except OverflowError:  # an integer beyond any float: out of range like any other
                value = math.nan
        elif _is_scalar_array(action, "fiu"):
            value = float(action.reshape(-1)[0])
        else:
            value = math.nan
        if not -1.0 <= value <= 1.0:  # NaN fails too
            raise ValueError(
                f"invalid action {shown(action)}: FinDeltaHedge-v0 (action_type='box') takes a normalised action "
                f"in [-1, 1] (a float32 array of shape (1,)); action a sets the hedge ratio {MAX_HEDGE} * a "
                "shares per option"
            )
        return hedge_ratio(value)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done:
            raise gym.error.ResetNeeded(
                "call reset() before step()" if not self._state
                else "the episode has ended (the option expired); call reset() before step()"
            )
        hedge = self.hedge_of(action)
        ep = self._episode
        state, (reward, step_pnl, cost) = transition(ep, self._state, hedge)
        self._state = state
        t = state[0]
        if self._record:
            self._hedge_hist.append(hedge)
        info = {
            "step": t,
            "spot": ep.spots[t],
            "hedge": hedge,
            "option_value": ep.values[t],
            "pnl": state[3],
            "step_pnl": step_pnl,
            "cost": cost,
            "costs": state[4],
        }
        if ep.dates is not None:
            info["date"] = ep.dates[t]
        terminated = t >= ep.n_steps
        if terminated:
            self._done = True
            error = hedging_error(ep, state)
            info["hedging_error"] = error
            info["hedging_error_pct"] = error * ep.pnl_scale
            info["payoff"] = ep.payoff
        return observe(ep, state), reward, terminated, False, info

    # ------------------------------------------------------------------ text interface
    def text_action(self, parsed: ParsedAction) -> ParsedAction:
        """A parsed reply as the step's action: an invalid one keeps the hedge held (no trade, no cost)."""
        if not self._state:
            raise gym.error.ResetNeeded("call reset() before text_action()")
        if parsed.valid:
            return parsed
        held = self._state[1]
        return ParsedAction(self.text_protocol.action_of(held), f"KEEP {held:+.4f}", parsed.invalid, "default",
                            parsed.reasoning)

    def text_state(self) -> dict[str, str]:
        """The book at the current step as prompt lines (only spots up to this step)."""
        ep, st = self._current("text_state")
        t = st.t
        out = {
            # the episode's lines (the protocol's episode_labels): the same at every step
            "Option": f"short one European {self.option}, strike {ep.strike:.4f}, sold at {ep.premium:.4f}, spot then "
                      f"{ep.spot0:.4f}",
            "Pricing vol": f"{ep.pricing_vol:.4%} a year (of the Black-Scholes values below)",
            "Steps": f"{ep.n_steps}, {self.steps_per_day} per trading day; 252 trading days a year",
            "Step": f"{t + 1} of {ep.n_steps}" if t < ep.n_steps else f"expired after {ep.n_steps} steps",
        }
        if ep.dates is not None:
            out["Date"] = f"{ep.dates[t]} ({self._symbol})"
        tau = (ep.n_steps - t) * ep.dt
        out.update({
            "Spot": f"{ep.spots[t]:.4f}",
            "Time to expiry": f"{(ep.n_steps - t) / self.steps_per_day:g} trading days ({tau:.6f} years)",
            "Option value": f"{ep.values[t]:.4f}",
            "Black-Scholes delta": f"{ep.deltas[t]:+.4f}",
            "Hedge held": f"{st.hedge:+.4f} shares per option",
            "Book": f"P&L {st.pnl:+.4f}, costs so far {st.costs:.4f}",
        })
        return out

    def as_of_view(self) -> HedgeView:
        """The current step (the tools read the book at it; the counter is the episode's)."""
        ep, st = self._current("as_of_view")
        return HedgeView(st.t, ep.dates[st.t] if ep.dates is not None else None, self._counter)

    # ------------------------------------------------------------------ extras
    @property
    def state(self) -> HedgeState | None:
        """The current core state as a named tuple (None before reset)."""
        return HedgeState(*self._state) if self._state else None

    @property
    def episode(self) -> HedgeEpisode | None:
        """The current episode's constants (its whole path: for analysis and oracles, never for policies); None
        before reset."""
        return self._episode if self._state else None

    @property
    def pricing_vol(self) -> float | None:
        """The synthetic model's nominal vol, or the current real episode's realised vol."""
        return self._episode.pricing_vol if self.source == "real" and self._state else self._pricing_vol

    @property
    def universe(self) -> tuple[str, ...]:
        """Symbols real episodes draw from (empty for synthetic sources)."""
        return self._universe

    @staticmethod
    def obs_names() -> tuple[str, ...]:
        return OBS_NAMES

    def _current(self, method: str) -> tuple[HedgeEpisode, HedgeState]:
        """The current episode and state; ``ResetNeeded`` naming ``method`` before reset()."""
        if not self._state:
            raise gym.error.ResetNeeded(f"call reset() before {method}()")
        return self._episode, HedgeState(*self._state)

    def named_observation(self) -> dict[str, float]:
        """The observation at the current step, by name (what the RL agents see; see ``OBS_NAMES``)."""
        ep, st = self._current("named_observation")
        obs = observe(ep, tuple(st))
        return {name: float(obs[i]) for i, name in enumerate(OBS_NAMES)}

    def render(self) -> Any:
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        ep, state = self._current("render")
        t = state.t
        where = f"{self._symbol} {ep.dates[t]} " if ep.dates is not None else ""
        if self.render_mode == "ansi":
            return (
                f"{where}step {t}/{ep.n_steps} | spot {ep.spots[t]:.2f} (K {ep.strike:.2f}) | "
                f"hedge {state.hedge:+.3f} (BS delta {ep.deltas[t]:+.3f}) | "
                f"{self.option} value {ep.values[t]:.4f} | "
                f"P&L {state.pnl:+.4f} | costs {state.costs:.4f}"
            )
        from finenvs.tasks.rendering import _figure, _rgb, legend_outside

        fig, canvas = _figure(960, 560)
        ax_spot, ax_hedge = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
        days = np.arange(t + 1) / self.steps_per_day
        ax_spot.plot(days, ep.spots[: t + 1], color="#1f77b4", lw=1.2)
        ax_spot.axhline(ep.strike, color="grey", lw=0.8, ls="--", label="strike")
        ax_spot.set_xlim(0, self.maturity_days)
        ax_spot.set_ylabel("spot")
        legend_outside(ax_spot)
        ax_spot.set_title(
            f"short {self.option} K={ep.strike:.2f}, {where}{self.source}: "
            f"P&L {state.pnl:+.4f}, costs {state.costs:.4f}",
            fontsize=10,
        )
        held = self._hedge_hist[1 : t + 1]  # held[i]: the hedge set at grid point i, held to i + 1
        held = held + held[-1:] if held else [0.0]
        ax_hedge.step(days, held, where="post", color="#ff7f0e", lw=1.2, label="hedge held")
        ax_hedge.plot(days, ep.deltas[: t + 1], color="#2ca02c", lw=1.0, ls=":", label="BS delta")
        ax_hedge.set_ylabel("shares per option")
        ax_hedge.set_xlabel("trading days")
        legend_outside(ax_hedge)
        return _rgb(fig, canvas)


__all__ = ["MODEL_PARAM_KEYS", "SOURCES", "VOL_WINDOW", "FinDeltaHedgeEnv", "HedgeView"]
