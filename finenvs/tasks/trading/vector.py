"""FinTradingVectorEnv: N FinTrading-v0 episodes stepped in one batched numpy call.

The book, the rewards and the observation are those of
:mod:`finenvs.tasks.trading.core`, written once more over arrays of N episodes
(the core's :func:`~finenvs.tasks.trading.core.transition_to` is the scalar
definition; this module is its vectorised twin, and the tests step both side
by side). Episodes are drawn by :meth:`FinTradingEnv._draw_episode
<finenvs.tasks.trading.env.FinTradingEnv._draw_episode>` from each sub-env's own
generator, so sub-env ``i`` of ``FinTradingVectorEnv(n, seed=s)`` plays the
very episodes of ``FinTradingEnv`` reset with seed ``s + i`` (gymnasium's
``SyncVectorEnv`` convention).

Data
    ``source="real"``: the price and feature arrays of every symbol of the
    universe are concatenated once into one read-only pool that all N
    episodes index (an episode is a row range of it). The observation of every
    row is precomputed once per pool (a table of ``window`` feature rows + 3
    scalars per trading day, like :func:`~finenvs.tasks.trading.core.make_episode`'s
    per-episode table), so an observation batch is one row gather plus three
    column writes. ``source="synthetic"``: each sub-env owns a slot of the pool
    that its reset overwrites with a fresh path and its observation table
    (``num_envs x (window + 18 + episode_length + 1) x obs_size`` float32: 225 MB
    for 1,024 sub-envs of 252 decisions with the default window). Past
    ``OBS_TABLE_BYTES`` (1 GiB) the slots keep only features and each step
    gathers the windows (less memory, slower steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from numpy.lib.stride_tricks import sliding_window_view

from finenvs.data.calendar import session_positions, window_sessions
from finenvs.tasks.trading.core import DSR_MIN_VARIANCE, RUIN_LOG_RETURN, MarketData
from finenvs.tasks.trading.env import RESET_OPTIONS, FinTradingEnv
from finenvs.tasks.trading.features import FEATURE_BOUND, N_FEATURES, compute_features

try:  # gymnasium >= 1.1
    from gymnasium.vector import AutoresetMode

    _MODES: dict[str, Any] = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
except ImportError:  # gymnasium 1.0: next-step autoreset only, no enum
    _MODES = {"next_step": "NextStep"}

#: Largest observation table (bytes) a synthetic vector env precomputes; past it, steps gather the windows.
OBS_TABLE_BYTES = 1 << 30

#: Info keys of every step, one float per sub-env (see the class docstring).
STEP_INFO_KEYS = ("equity", "position", "fee", "fees")



def _short_equity(shares: np.ndarray, price: np.ndarray, entry: np.ndarray) -> np.ndarray:
    """A full short's equity at ``price`` (:func:`~finenvs.tasks.trading.core.short_equity` at position -1):
    ``2 x entry equity - |shares| x price``, never below 0."""
    return np.maximum(2.0 * entry - np.abs(shares) * price, 0.0)

class FinTradingVectorEnv(gym.vector.VectorEnv):
    """N independent FinTrading-v0 episodes stepped together in numpy.

    ## Description
    ``FinTradingVectorEnv(num_envs, **kwargs)`` behaves like gymnasium's
    ``SyncVectorEnv`` over ``num_envs`` copies of ``FinTradingEnv(**kwargs)``:
    the same observations, actions, book, rewards, terminations, truncations
    and autoreset, but one batched numpy computation per step instead of
    ``num_envs`` Python steps. Each sub-env draws its own episodes (symbol,
    window, synthetic path) from its own generator.

    ## Spaces
    ``single_observation_space`` / ``single_action_space`` are FinTrading-v0's
    (``Box(-10, 10, (window*6+3,), float32)`` and ``Discrete(3)``);
    ``observation_space`` is their batch and ``action_space`` is
    ``MultiDiscrete([3] * num_envs)``.

    ## Actions
    An integer array of shape ``(num_envs,)`` with values in {0: SELL, 1: HOLD,
    2: BUY} (a list of ints is accepted). A wrong shape, a float or bool array
    (NaN included) or a value outside 0..2 raises ``ValueError`` naming the
    problem and the offending sub-envs.

    ## Autoreset
    ``autoreset_mode="next_step"`` (default; gymnasium 1.x's default): the step
    that ends an episode returns its terminal observation; the next step
    resets that sub-env, ignores its action and returns the first observation
    of the new episode with reward 0 and terminated = truncated = False.
    ``"same_step"`` (gymnasium >= 1.1): the ending step resets at once, returns
    the new episode's first observation and puts the terminal one in
    ``info["final_obs"]`` (its step info in ``info["final_info"]``), the
    convention SB3's VecEnv follows (see :func:`finenvs.tasks.trading.sb3.to_sb3`).

    ## Info
    Every step: ``equity``, ``position`` (held over the day that just ended),
    ``fee`` (paid this step) and ``fees`` (cumulative), float arrays with
    all-True ``_key`` masks. Reset (and a sub-env reset by autoreset) adds its
    sub-env's reset info (``symbol``, ``date``, ``window_start``,
    ``window_end``, ``n_decisions``) under gymnasium's masked-array convention.

    ## Look-ahead Guarantee
    Row ``t`` of the pool's observation table reads feature rows ``<= t`` only,
    and a step reads prices of rows ``t`` and ``t + 1`` exactly as the core's
    transition does; the equality tests against FinTrading-v0 inherit its
    counterfactual-future tests.

    ## Arguments
    * ``num_envs``: number of sub-envs (>= 1).
    * ``autoreset_mode``: ``"next_step"`` or ``"same_step"``.
    * every keyword of :class:`~finenvs.tasks.trading.env.FinTradingEnv` except
      ``render_mode`` (a vector of 1,000 charts is not a rendering).

    ## Equality with FinTrading-v0
    Equity, cash, shares, positions, fees, observations, terminations and
    truncations are bit-identical to ``num_envs`` single envs stepped with the
    same actions. Rewards agree to within a few units in the last place:
    numpy's vectorised ``log`` (and ``power`` for the ``dsr`` reward) may round
    differently from the C library's scalar ones the single env calls.
    """

    metadata = {"render_modes": [], "autoreset_mode": _MODES["next_step"]}

    def __init__(self, num_envs: int, *, autoreset_mode: str = "next_step", **env_kwargs: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r} must be an integer >= 1")
        # the AutoresetMode enum is accepted too
        autoreset_mode = next((name for name, mode in _MODES.items() if mode == autoreset_mode), autoreset_mode)
        if not isinstance(autoreset_mode, str) or autoreset_mode not in _MODES:
            raise ValueError(f"autoreset_mode={autoreset_mode!r}; valid modes: {sorted(_MODES)}"
                             + ("" if "same_step" in _MODES else " (same_step needs gymnasium >= 1.1)"))
        if env_kwargs.get("render_mode") is not None:
            raise ValueError("FinTradingVectorEnv does not render; build a FinTradingEnv to render one episode")
        env_kwargs.pop("render_mode", None)
        self.num_envs = int(num_envs)
        self.env_kwargs = dict(env_kwargs)
        self._single = FinTradingEnv(**env_kwargs)  # validates the arguments; draws the episodes
        self.params = self._single.params
        self.source = self._single.source
        self.autoreset_mode = _MODES[autoreset_mode]
        self._same_step = autoreset_mode == "same_step"
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = None

        self.single_observation_space = self._single.observation_space
        self.single_action_space = self._single.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, 3, dtype=np.int64))

        n, window = self.params.window * N_FEATURES, self.params.window
        self._n_feat = n
        self._obs_size = n + 3
        self._fee = self.params.fee
        self._short_exit_on_equity = self.params.short_exit_fee == "equity"
        self._fill_at_close = self.params.fill == "close"
        self._log_reward = self.params.reward == "log_return"
        self._eta = self.params.dsr_eta
        # action -> target position: SELL short (or flat), HOLD flat, BUY long
        self._targets = np.array([-1.0 if self.params.allow_short else 0.0, 0.0, 1.0])

        # the pool: prices (float64) and the observation source, shared by every sub-env
        self._bases: dict[str, int] = {}  # symbol -> first pool row of its market (real source)
        if self.source == "real":
            self._close = np.empty(0)
            self._open = np.empty(0)
            # per pool row: its session's index on the exchange calendar, counted from its market's first bar
            # (time remaining = sessions from a row to its window's last session / the window's sessions)
            self._ordinal = np.empty(0, dtype=np.int64)
            self._table = np.empty((0, self._obs_size), dtype=np.float32)
            self._pool(*(self._single._market(sym) for sym in self._single.universe))
        else:
            length = self._single.episode_length
            assert length is not None  # a synthetic FinTradingEnv always has one
            self._slot = self._single._history_needed + length + 1
            rows = self.num_envs * self._slot
            self._close = np.ones(rows)
            self._open = np.ones(rows)
            self._ordinal = np.arange(rows, dtype=np.int64)  # every simulated day a session
            self._use_table = rows * self._obs_size * 4 <= OBS_TABLE_BYTES
            if self._use_table:
                self._table = np.zeros((rows, self._obs_size), dtype=np.float32)
            else:  # gather the windows at every step instead (slower, window x less memory)
                self._features = np.zeros(rows * N_FEATURES, dtype=np.float32)
                self._windows = sliding_window_view(self._features, n)[::N_FEATURES]  # [r] = rows r..r+window-1
        self._window = window

        size = self.num_envs
        self._rngs: list[np.random.Generator | None] = [None] * size
        self._t = np.zeros(size, dtype=np.int64)  # pool row of the current decision day
        self._start = np.zeros(size, dtype=np.int64)
        self._end = np.zeros(size, dtype=np.int64)
        self._span = np.ones(size, dtype=np.int64)
        self._end_ordinal = np.zeros(size, dtype=np.int64)  # calendar ordinal of the window's last session
        self._complete = np.ones(size, dtype=bool)  # the window's last session has its bar (else the data ends)
        self._stopping = False  # some sub-env's data ends before its window (then steps check for no next bar)
        self._position = np.zeros(size)
        self._shares = np.zeros(size)
        self._cash = np.ones(size)
        self._equity = np.ones(size)
        self._entry = np.ones(size)
        self._fees = np.zeros(size)
        self._dsr_a = np.zeros(size)
        self._dsr_b = np.zeros(size)
        self._symbols: list[str] = [""] * size
        self._autoreset = np.zeros(size, dtype=bool)
        self._every = np.ones(size, dtype=bool)
        self._every.setflags(write=False)
        self._ready = False

    # ------------------------------------------------------------------ pool
    def _pool(self, *markets: MarketData) -> None:
        """Append markets to the real-data pool (once each): prices and their observation table."""
        new = [m for m in markets if m.symbol not in self._bases]
        if not new:
            return
        n, window = self._n_feat, self.params.window
        closes, opens, tables, ordinals = [self._close], [self._open], [self._table], [self._ordinal]
        base = self._close.shape[0]
        for market in new:
            rows = len(market)
            table = np.zeros((rows, self._obs_size), dtype=np.float32)
            if rows >= window:  # row r: the feature window ending at r (rows r-window+1 .. r)
                table[window - 1:, :n] = sliding_window_view(market.flat_features, n)[::N_FEATURES]
            self._bases[market.symbol] = base
            base += rows
            closes.append(np.asarray(market.close, dtype=np.float64))
            opens.append(np.asarray(market.open, dtype=np.float64))
            tables.append(table)
            calendar = self._single.calendar
            if rows and calendar is None:  # the bars are the sessions
                ordinals.append(np.arange(rows, dtype=np.int64))
            elif rows and calendar is not None:
                sessions = window_sessions(calendar, market.dates[0], market.dates[-1])
                ordinals.append(session_positions(sessions, market.dates))
        self._close = np.concatenate(closes)
        self._open = np.concatenate(opens)
        self._table = np.concatenate(tables)
        self._ordinal = np.concatenate(ordinals)
        for array in (self._close, self._open, self._table, self._ordinal):
            array.setflags(write=False)

    def _place(self, i: int, options: dict[str, Any]) -> dict[str, Any]:
        """Draw sub-env ``i``'s next episode from its generator and start it flat; its reset info."""
        rng = self._rngs[i]
        if rng is None:
            rng = self._rngs[i] = seeding.np_random(None)[0]
        market, series, window = self._single._draw_episode(rng, options, build=False)
        first, last = window.first, window.last
        if market is not None:
            self._pool(market)
            base = self._bases[market.symbol]
        else:  # a fresh synthetic path into this sub-env's slot
            base = i * self._slot
            rows = len(series)
            self._close[base:base + rows] = series.close
            self._open[base:base + rows] = series.open
            features = compute_features(series).reshape(-1)
            if self._use_table:
                self._table[base + self._window - 1:base + rows, :self._n_feat] = sliding_window_view(
                    features, self._n_feat)[::N_FEATURES]
            else:
                self._features[base * N_FEATURES:(base + rows) * N_FEATURES] = features
        self._t[i] = base + first
        self._start[i] = base + first
        self._end[i] = base + last
        self._span[i] = max(window.n_decisions, 1)
        self._end_ordinal[i] = self._ordinal[base + first] + window.n_decisions
        self._complete[i] = window.complete
        self._stopping = not self._complete.all()
        self._position[i] = 0.0
        self._shares[i] = 0.0
        self._cash[i] = 1.0
        self._equity[i] = 1.0
        self._entry[i] = 1.0
        self._fees[i] = 0.0
        self._dsr_a[i] = 0.0
        self._dsr_b[i] = 0.0
        self._symbols[i] = series.symbol
        self._autoreset[i] = False
        return {
            "date": window.start_day,
            "symbol": series.symbol,
            "price": float(series.close[first]),
            "position": 0.0,
            "equity": 1.0,
            "fees": 0.0,
            "window_start": window.start_day,
            "window_end": window.end_day,
            "n_decisions": window.n_decisions,
        }

    def _observe(self) -> np.ndarray:
        """The observation batch at every sub-env's current close (a fresh array)."""
        t, n = self._t, self._n_feat
        if self.source == "real" or self._use_table:
            obs = self._table[t]
        else:
            obs = np.empty((self.num_envs, self._obs_size), dtype=np.float32)
            obs[:, :n] = self._windows[t - (self._window - 1)]
        position = self._position
        obs[:, n] = position
        obs[:, n + 1] = (self._end_ordinal - self._ordinal.take(t)) / self._span  # span >= 1: a decision
        open_ = (position != 0.0) & (self._equity > 0.0)
        if open_.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                pr = np.log(self._equity / self._entry)
            np.minimum(pr, FEATURE_BOUND, out=pr)
            np.maximum(pr, -FEATURE_BOUND, out=pr)
            obs[:, n + 2] = np.where(open_, pr, 0.0)
        else:
            obs[:, n + 2] = 0.0
        return obs

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env (or those of ``options["reset_mask"]``).

        Args:
            seed: None, an int (sub-env ``i`` gets ``seed + i``) or one seed per sub-env.
            options: FinTrading-v0's reset options (``symbol``, ``start``, ``end``),
                applied to every sub-env reset, and ``reset_mask`` (a bool array of
                shape ``(num_envs,)``) to reset only those sub-envs.
        """
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid options: {[*RESET_OPTIONS, 'reset_mask']}")
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, bool):
            raise TypeError(f"seed={seed!r}; pass None, an int or one seed per sub-env")
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for num_envs={self.num_envs}; pass one per sub-env, an int or None")
        indices: Sequence[int]
        if mask is None:
            indices = range(self.num_envs)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},); "
                                 f"got dtype {mask.dtype}, shape {mask.shape}")
            if not mask.any():
                raise ValueError("options['reset_mask'] resets no sub-env; set at least one True")
            indices = np.flatnonzero(mask).tolist()
        if not self._ready and mask is not None and not mask.all():
            raise gym.error.ResetNeeded("the first reset() must reset every sub-env (no reset_mask)")
        infos: dict[str, Any] = {}
        for i in indices:
            if seeds[i] is not None:
                self._rngs[i] = seeding.np_random(seeds[i])[0]
            infos = self._add_info(infos, self._place(i, options), i)
        self._ready = True
        return self._observe(), infos

    def _actions(self, actions: Any) -> np.ndarray:
        a = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"actions have shape {a.shape}; FinTradingVectorEnv({self.num_envs}) takes one integer "
                             f"per sub-env, shape ({self.num_envs},)")
        if a.dtype.kind not in "iu":
            bad = np.flatnonzero(~np.isfinite(a)) if a.dtype.kind in "fc" else np.array([], dtype=int)
            detail = f" (NaN/inf at sub-env(s) {bad[:10].tolist()})" if bad.size else ""
            raise ValueError(f"actions have dtype {a.dtype}{detail}; FinTradingVectorEnv takes integers in "
                             "{0: SELL, 1: HOLD, 2: BUY}")
        if (a.view(np.uint64) > 2).any() if a.dtype == np.int64 else (a.min() < 0 or a.max() > 2):
            bad = np.flatnonzero((a < 0) | (a > 2))
            raise ValueError(f"invalid action(s) {a[bad[:10]].tolist()} at sub-env(s) {bad[:10].tolist()}; "
                             "FinTradingVectorEnv takes integers in {0: SELL, 1: HOLD, 2: BUY}")
        return a

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply one action per sub-env at its current close and advance each to its next close."""
        if not self._ready:
            raise gym.error.ResetNeeded("call reset() before step()")
        a = self._actions(actions)
        fee = self._fee
        reset_now = self._autoreset.any()  # next_step mode: these sub-envs reset instead of stepping
        if reset_now:
            resetting = np.flatnonzero(self._autoreset).tolist()
            reset_infos = [self._place(i, {}) for i in resetting]
            saved = [self._snapshot(i) for i in resetting]

        t, position, shares, cash, equity = self._t, self._position, self._shares, self._cash, self._equity
        target = self._targets.take(a)
        do = target != position
        # a window whose data ends before its last session: the decision at its last bar finds no next bar
        stops: bool | np.bool_ = False
        if self._stopping:
            at_last = t >= self._end
            stops = at_last.any()
        if stops:
            do &= ~at_last
            nt = np.where(at_last, t, t + 1)
        else:
            nt = t + 1
        if self._fill_at_close:
            price = self._close.take(t)
            traded = equity
            ruined = None
        else:  # next_open: the old position is held to the open and trades there
            price = self._open.take(nt)
            traded = cash + shares * price
            ruined = do & (traded <= 0.0)
            do &= ~ruined
        # Exit the old position (fee on the shares' market value), then enter the new one. Flat books hold
        # exactly 0 shares, so the exit fee of a flat book is exactly 0; |target| is 1 or 0, so the entry
        # fee is fee * traded or exactly 0: the same floats as the scalar core's branches.
        moving = np.where(do, shares, 0.0)
        goal = np.where(do, target, 0.0)
        exit_fee = fee * np.abs(moving) * price
        if self._short_exit_on_equity:  # a short's exit on its equity (the core's short_equity, position -1)
            exit_fee = np.where(moving < 0.0, fee * _short_equity(moving, price, self._entry), exit_fee)
        traded = traded - exit_fee
        entry_fee = fee * traded * np.abs(goal)
        traded = traded - entry_fee
        paid = exit_fee + entry_fee
        new_shares = goal * traded / price
        shares = np.where(do, new_shares, shares)
        cash = np.where(do, traded - new_shares * price, cash)
        position = np.where(do, target, position)
        entry = np.where(do, traded, self._entry)
        held = position.copy()  # returned in info: never the env's own array
        price_close = self._close.take(nt)
        new_equity = cash + shares * price_close
        dead = new_equity <= 0.0
        if ruined is not None:
            dead |= ruined
        any_dead = dead.any()
        if any_dead:
            new_equity = np.where(dead, 0.0, new_equity)
            position = np.where(dead, 0.0, position)
            shares = np.where(dead, 0.0, shares)
            cash = np.where(dead, 0.0, cash)
            truncated = (nt >= self._end) & ~dead
        else:
            truncated = nt >= self._end
        if self._stopping:  # the step into the last bar of a window whose data ends is an ordinary one
            truncated &= self._complete
        if stops:  # no next bar: the position closes at this close, held over no day
            truncated |= at_last
            held[at_last] = 0.0
        if truncated.any():  # the window's last close closes the position (flat books pay exactly 0)
            closing = np.where(truncated, shares, 0.0)
            exit_fee = fee * np.abs(closing) * price_close
            if self._short_exit_on_equity:
                exit_fee = np.where(closing < 0.0, fee * _short_equity(closing, price_close, entry), exit_fee)
            new_equity = new_equity - exit_fee
            paid = paid + exit_fee
            position = np.where(truncated, 0.0, position)
            shares = np.where(truncated, 0.0, shares)
            cash = np.where(truncated, new_equity, cash)
        old_equity = equity
        if self._log_reward:
            if any_dead:
                with np.errstate(divide="ignore", invalid="ignore"):
                    reward = np.where(new_equity > 0.0, np.log(new_equity / old_equity), RUIN_LOG_RETURN)
            else:
                reward = np.log(new_equity / old_equity)
        else:
            step_return = new_equity / old_equity - 1.0
            dsr_a, dsr_b = self._dsr_a, self._dsr_b
            delta_a = step_return - dsr_a
            delta_b = step_return * step_return - dsr_b
            variance = dsr_b - dsr_a * dsr_a
            with np.errstate(divide="ignore", invalid="ignore"):
                reward = np.where(variance > DSR_MIN_VARIANCE,
                                  (dsr_b * delta_a - 0.5 * dsr_a * delta_b) / variance**1.5, 0.0)
            self._dsr_a = dsr_a + self._eta * delta_a
            self._dsr_b = dsr_b + self._eta * delta_b
        self._t = nt
        self._position, self._shares, self._cash, self._equity = position, shares, cash, new_equity
        self._entry = np.where(position != 0.0, entry, 1.0)
        self._fees = self._fees + paid
        terminated = dead

        if reset_now:  # the reset sub-envs did not step: restore their fresh state
            for i, snap in zip(resetting, saved, strict=True):
                self._restore(i, snap)
            reward[resetting] = 0.0
            terminated[resetting] = False
            truncated[resetting] = False
            held[resetting] = 0.0
            paid[resetting] = 0.0
        infos = self._step_info(held, paid)
        if reset_now:
            for i, info in zip(resetting, reset_infos, strict=True):
                infos = self._add_info(infos, info, i)
        done = terminated | truncated
        if self._same_step:
            if done.any():
                final_obs = self._observe()
                ended = np.flatnonzero(done).tolist()
                objects = np.full(self.num_envs, None, dtype=object)
                for i in ended:
                    objects[i] = final_obs[i]
                infos["final_obs"], infos["_final_obs"] = objects, done.copy()
                infos["final_info"] = {k: infos[k].copy() for k in STEP_INFO_KEYS}
                infos["final_info"].update({f"_{k}": done.copy() for k in STEP_INFO_KEYS})
                infos["_final_info"] = done.copy()
                for i in ended:
                    infos = self._add_info(infos, self._place(i, {}), i)
        else:
            self._autoreset = done
        return self._observe(), reward, terminated, truncated, infos

    def _step_info(self, held: np.ndarray, paid: np.ndarray) -> dict[str, Any]:
        every = self._every
        return {"equity": self._equity.copy(), "_equity": every.copy(), "position": held, "_position": every.copy(),
                "fee": paid, "_fee": every.copy(), "fees": self._fees.copy(), "_fees": every.copy()}

    _STATE = ("_t", "_start", "_end", "_span", "_end_ordinal", "_complete", "_position", "_shares", "_cash", "_equity", "_entry", "_fees",
              "_dsr_a", "_dsr_b")

    def _snapshot(self, i: int) -> tuple:
        return tuple(getattr(self, name)[i] for name in self._STATE)

    def _restore(self, i: int, snap: tuple) -> None:
        for name, value in zip(self._STATE, snap, strict=True):
            getattr(self, name)[i] = value
        self._stopping = not self._complete.all()

    # ------------------------------------------------------------------ extras
    @property
    def symbols(self) -> list[str]:
        """Symbol of every sub-env's current episode."""
        return list(self._symbols)

    def state(self, i: int) -> dict[str, float]:
        """Sub-env ``i``'s book (the fields of :class:`~finenvs.tasks.trading.core.TradingState`, rows pool-relative)."""
        if not self._ready:
            raise gym.error.ResetNeeded("call reset() before state()")
        return {"t": int(self._t[i] - self._start[i]), "position": float(self._position[i]),
                "shares": float(self._shares[i]), "cash": float(self._cash[i]), "equity": float(self._equity[i]),
                "entry_equity": float(self._entry[i]), "fees_paid": float(self._fees[i])}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_windows", None)  # a view of _features: rebuilt on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.source == "synthetic" and not self._use_table:
            self._windows = sliding_window_view(self._features, self._n_feat)[::N_FEATURES]

    def close(self, **kwargs: Any) -> None:
        single = getattr(self, "_single", None)  # absent when __init__ rejected its arguments
        if single is not None:
            single.close()
        self.closed = True


__all__ = ["FinTradingVectorEnv", "STEP_INFO_KEYS"]
