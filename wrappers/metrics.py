"""Episode metrics for market envs: CR/SR/MDD (standard and herculean) at episode end.

The finenvs analogue of gymnasium's ``RecordEpisodeStatistics``: it reads only
the per-step ``info`` every market env reports (``date``, ``equity``,
``equity_at_decision``, ``position``), so the env's step stays lean and the same
wrapper serves every market task. An env whose step spans several trading days
(FinReport-v0 holds a weekly rating) lists them in ``info["days"]``, one dict
with those four keys per day, and the curves stay daily. When an episode ends, the final ``info`` gets
``info["episode_metrics"]``::

    {"standard": {...every finenvs.scoring metric...},
     "herculean": {"cumulative_return", "sharpe", "max_drawdown", "n_periods"},
     "dates": [...], "wealth": [...], "herculean_equity": [...], "positions": [...]}

Curves (see :mod:`finenvs.scoring.presets`): ``wealth`` starts at the reset
equity (1.0) and has one value per close after it; ``herculean_equity`` has one
value per trading day of the window, after that day's trades.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from finenvs.scoring import TRADING_DAYS_PER_YEAR
from finenvs.tasks.common import REQUIRED_INFO, curve_metrics


class EpisodeMetrics(gym.Wrapper):
    """Add ``info["episode_metrics"]`` at the end of every episode.

    Args:
        env: A finenvs market env (its step ``info`` must carry ``date``,
            ``equity``, ``equity_at_decision`` and ``position``).
        periods: Periods per year for annualisation (252 for daily envs).
        risk_free: Per-period risk-free rate for the standard Sharpe ratio.
    """

    def __init__(self, env: gym.Env, periods: int = TRADING_DAYS_PER_YEAR, risk_free: float = 0.0) -> None:
        super().__init__(env)
        self.periods = periods
        self.risk_free = risk_free
        self._dates: list[str] = []
        self._wealth: list[float] = []
        self._decision_equity: list[float] = []
        self._positions: list[float] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._dates = [info["date"]]
        self._wealth = [float(info["equity"])]
        self._decision_equity = []
        self._positions = []
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        missing = [k for k in REQUIRED_INFO if k not in info]
        if missing:
            raise KeyError(f"EpisodeMetrics needs info keys {list(REQUIRED_INFO)}; the env did not report {missing}")
        for day in info.get("days") or (info,):  # an env whose step spans several days lists them
            self._dates.append(day["date"])
            self._wealth.append(float(day["equity"]))
            self._decision_equity.append(float(day["equity_at_decision"]))
            self._positions.append(float(day["position"]))
        if terminated or truncated:
            info = dict(info)
            info["episode_metrics"] = self.summary()
        return obs, reward, terminated, truncated, info

    def summary(self) -> dict[str, Any]:
        """Metrics and curves of the episode so far (:func:`finenvs.tasks.common.curve_metrics`)."""
        curves: dict[str, list[Any]] = {"dates": self._dates, "wealth": self._wealth,
                                        "decision_equity": self._decision_equity, "positions": self._positions}
        return curve_metrics(curves, periods=self.periods, risk_free=self.risk_free)
