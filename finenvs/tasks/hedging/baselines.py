"""Pairs baselines for FinHedging-v0.

| name | pair selection | trading |
|---|---|---|
| ``zscore_coint`` | the ordered pair with the smallest Engle-Granger p-value (``statsmodels.tsa.stattools.coint`` of log closes, both orderings) over the ``history`` days before the window | z-score rule |
| ``zscore_corr`` | the pair with the highest correlation of daily log returns over the same days | z-score rule |
| ``random`` | uniform over pairs | uniform over LONG_SHORT/SHORT_LONG/HOLD/CLOSE, from its own seeded generator |
| ``oracle_best_pair`` | **oracle, not a live baseline**: the pair whose z-score rule ends the window with the highest equity, found by replaying every pair over the episode's future prices | z-score rule |

The z-score rule reads the observation's spread z-score ``z`` (log price ratio
``log P_i - log P_j``, lookback ``lookback``): flat, it enters SHORT_LONG when
``entry < z < stop`` (the ratio is rich: short i, long j) and LONG_SHORT when
``-stop < z < -entry``; holding LONG_SHORT it exits (CLOSE) once ``z > -exit``
(reverted) or stops out once ``z < -stop``, and symmetrically for SHORT_LONG.
After a stop it does not enter again until ``|z| < exit``. Defaults: entry 2,
exit 0.5, stop 4, lookback 20.

Every live baseline reads only the observation and, for selection, the
env's date-locked :meth:`~finenvs.tasks.hedging.env.FinHedgingEnv.as_of_view`.
The oracle reads the episode's whole price path; it is an upper bound on
pair choice for this trading rule, reported as such, never a strategy a user
could run live.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.tasks.hedging.core import (
    CLOSE,
    HOLD,
    LONG_SHORT,
    N_TRADE_ACTIONS,
    SHORT_LONG,
    make_book,
    observe,
    pair_list,
    select,
    transition,
)

#: Minimum common history (days) a selection statistic is computed from.
MIN_SELECTION_HISTORY = 30


def _hedging_env(env: Any) -> Any:
    base = getattr(env, "unwrapped", env)
    if base is None or getattr(base, "task_family", None) != "hedging":
        raise ValueError("pairs baselines need the FinHedging-v0 env they act in (pass env=)")
    return base


@dataclass
class ZScoreRule:
    """The z-score entry/exit/stop rule on one spread z-score of the observation (see module doc)."""

    z_index: int
    position_index: int
    entry: float = 2.0
    exit: float = 0.5
    stop: float = 4.0
    stopped: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.exit < self.entry < self.stop:
            raise ValueError(f"z-score thresholds need 0 <= exit < entry < stop; got exit={self.exit}, "
                             f"entry={self.entry}, stop={self.stop}")

    def reset(self) -> None:
        self.stopped = False

    def __call__(self, obs: np.ndarray) -> int:
        z = float(obs[self.z_index])
        position = int(round(float(obs[self.position_index])))
        if position == 1:
            if z < -self.stop:
                self.stopped = True
                return CLOSE
            return CLOSE if z > -self.exit else HOLD
        if position == -1:
            if z > self.stop:
                self.stopped = True
                return CLOSE
            return CLOSE if z < self.exit else HOLD
        if self.stopped:
            if abs(z) < self.exit:
                self.stopped = False
            return HOLD
        if self.entry < z < self.stop:
            return SHORT_LONG
        if -self.stop < z < -self.entry:
            return LONG_SHORT
        return HOLD


def _rule_for(base: Any, lookback: int, entry: float, exit: float, stop: float) -> ZScoreRule:
    lookbacks = base.params.lookbacks
    if lookback not in lookbacks:
        raise ValueError(f"z-score lookback {lookback} is not one the env observes; env lookbacks: {list(lookbacks)}")
    layout = base.layout
    return ZScoreRule(
        z_index=layout.spread_z.start + lookbacks.index(lookback),
        position_index=layout.scalars.start,
        entry=entry,
        exit=exit,
        stop=stop,
    )


def selection_history(base: Any, days: int) -> np.ndarray:
    """``(n, T)`` log closes of the universe over the last ``days`` common days up to now (date-locked).

    Reads through the env's as-of view, so nothing after the current close is visible.
    """
    view = base.as_of_view()
    series = [view.prices(sym, lookback=days + MIN_SELECTION_HISTORY) for sym in base.universe]
    common = series[0].dates
    for s in series[1:]:
        common = np.intersect1d(common, s.dates, assume_unique=True)
    common = common[-days:]
    if common.size < MIN_SELECTION_HISTORY:
        raise ValueError(
            f"pair selection needs >= {MIN_SELECTION_HISTORY} common days of history; {common.size} are visible"
        )
    return np.vstack([np.log(s.close[np.searchsorted(s.dates, common)]) for s in series])


def coint_pvalues(logs: np.ndarray) -> np.ndarray:
    """Engle-Granger p-value of every ordered pair ``(i, j)``: ``coint(log P_i, log P_j)`` (pair_list order).

    Needs statsmodels, the ``stats`` extra (in ``all``); ``zscore_corr`` ranks pairs without it.
    """
    try:
        from statsmodels.tsa.stattools import coint
    except ImportError as exc:
        raise ImportError(
            "the zscore_coint baseline (Engle-Granger pair selection) needs statsmodels: "
            "pip install 'finenvs[stats]' (or finenvs[all]); zscore_corr needs nothing more"
        ) from exc

    out = np.ones(logs.shape[0] * (logs.shape[0] - 1))
    for k, (i, j) in enumerate(pair_list(logs.shape[0])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # collinearity warnings on near-identical series
            try:
                p = float(coint(logs[i], logs[j])[1])
            except (ValueError, np.linalg.LinAlgError):
                p = 1.0
        out[k] = p if math.isfinite(p) else 1.0
    return out


def return_correlations(logs: np.ndarray) -> np.ndarray:
    """Correlation of daily log returns of every ordered pair (pair_list order)."""
    rets = np.diff(logs, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.corrcoef(rets)
    return np.array([corr[i, j] if math.isfinite(corr[i, j]) else -1.0 for i, j in pair_list(logs.shape[0])])


@dataclass
class PairsPolicy:
    """Base class of FinHedging-v0 baselines: ``policy(obs, info) -> action``."""

    name: str = "pairs"
    min_window: int = 1
    #: True for policies that read the future (reported as upper bounds, never as baselines).
    oracle: bool = False

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode."""

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:  # pragma: no cover
        raise NotImplementedError


@dataclass
class ZScorePairs(PairsPolicy):
    """Rank pairs on pre-window history, then trade the z-score rule (see module doc).

    Args:
        env: The FinHedging-v0 env it acts in (for the observation layout and the as-of view).
        select: ``"coint"``, ``"correlation"`` or a fixed ``(long_leg, short_leg)`` symbol pair.
        history: Days of common history before the window the ranking reads.
        lookback, entry, exit, stop: The z-score rule.
    """

    env: Any = None
    select: Any = "coint"
    history: int = 250
    lookback: int = 20
    entry: float = 2.0
    exit: float = 0.5
    stop: float = 4.0
    name: str = "zscore_coint"
    rule: ZScoreRule = field(init=False, repr=False)  # built by __post_init__ from the fields above
    chosen: int | None = None

    def __post_init__(self) -> None:
        base = _hedging_env(self.env)
        self.env = base
        if isinstance(self.select, str):
            if self.select not in ("coint", "correlation"):
                raise ValueError(f"select={self.select!r}; valid: 'coint', 'correlation' or a (long, short) pair")
        else:
            self._fixed = base.pair_index(*self.select)
        self.rule = _rule_for(base, self.lookback, self.entry, self.exit, self.stop)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> ZScorePairs:
        return cls(env=env)

    def reset(self, seed: int | None = None) -> None:
        self.rule.reset()
        self.chosen = None

    def choose_pair(self) -> int:
        """Action index of the pair this policy selects now (reads only data up to the current close)."""
        if not isinstance(self.select, str):
            return self._fixed
        logs = selection_history(self.env, self.history)
        scores = -coint_pvalues(logs) if self.select == "coint" else return_correlations(logs)
        return int(np.argmax(scores))

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        if obs[0] >= 0.5:  # selection stage
            self.chosen = self.choose_pair()
            return self.chosen
        return self.rule(obs)


@dataclass
class CorrelationPairs(ZScorePairs):
    """``zscore_corr``: highest return correlation, then the z-score rule."""

    select: Any = "correlation"
    name: str = "zscore_corr"


@dataclass
class RandomPairs(PairsPolicy):
    """``random``: a uniform pair, then uniform trading actions (own seeded generator)."""

    env: Any = None
    seed: int | None = 0
    name: str = "random"

    def __post_init__(self) -> None:
        self.env = _hedging_env(self.env)
        self._rng = np.random.default_rng(self.seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomPairs:
        return cls(env=env, seed=seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray, info: dict[str, Any] | None = None) -> int:
        if obs[0] >= 0.5:
            return int(self._rng.integers(self.env.n_pairs))
        return int(self._rng.integers(N_TRADE_ACTIONS))


def replay_rule(episode: Any, pair: int, rule: ZScoreRule) -> float:
    """Final equity of the z-score rule on ``pair`` over the whole ``episode`` (reads its future)."""
    from finenvs.tasks.hedging.core import initial_state

    rule.reset()
    book = make_book(episode, pair)
    state, _ = select(episode, initial_state(episode.start, episode.end), pair)
    while not (state[13] or state[0] >= state[2]):
        state, _ = transition(book, state, rule(observe(episode, book, state)))
    rule.reset()
    return float(state[8])


@dataclass
class OracleBestPair(ZScorePairs):
    """``oracle_best_pair``: the pair whose z-score rule ends highest, chosen in hindsight (an oracle).

    At the selection step it replays the rule on every ordered pair over the
    episode's full price path, which a live agent cannot see. ``equities``
    keeps each pair's final equity.
    """

    name: str = "oracle_best_pair"
    oracle: bool = True
    equities: np.ndarray | None = None

    def choose_pair(self) -> int:
        episode = self.env.episode
        self.equities = np.array([replay_rule(episode, k, self.rule) for k in range(self.env.n_pairs)])
        return int(np.argmax(self.equities))


#: name -> (class, one-line description)
HEDGING_POLICIES: dict[str, tuple[type[PairsPolicy], str]] = {
    "zscore_coint": (ZScorePairs, "Engle-Granger-ranked pair, z-score entry 2 / exit 0.5 / stop 4"),
    "zscore_corr": (CorrelationPairs, "return-correlation-ranked pair, z-score entry 2 / exit 0.5 / stop 4"),
    "random": (RandomPairs, "random pair, random LONG_SHORT/SHORT_LONG/HOLD/CLOSE"),
    "oracle_best_pair": (OracleBestPair, "ORACLE (hindsight): best pair for the z-score rule; an upper bound"),
}

__all__ = [
    "HEDGING_POLICIES",
    "CorrelationPairs",
    "OracleBestPair",
    "PairsPolicy",
    "RandomPairs",
    "ZScorePairs",
    "ZScoreRule",
    "coint_pvalues",
    "replay_rule",
    "return_correlations",
    "selection_history",
]
