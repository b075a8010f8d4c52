"""Hand-written numpy reference envs for the step-throughput benchmark.

Both have FinTrading-v0's observation and action spaces and read the same
precomputed feature matrix. They are the yardstick for what finenvs' design
(pure core + Gymnasium shell, action validation, ``gym.make`` wrappers) costs:

* ``ReferenceTradingEnv`` does the same work as FinTrading-v0 (fixed-share
  book, 5 bp entry/exit fees, close fill, close-out at the window end, log-return
  reward, the same ``info`` keys) written as one flat class with no validation.
* ``BareReferenceEnv`` is the least an env of this shape can do: position x
  return reward, no fees, ``info = {}``.

Neither is part of finenvs; they exist only to be measured beside it.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.tasks.trading.features import N_FEATURES


def window_observation(flat: np.ndarray, t: int, n: int, position: int, time_left: float, pr: float) -> np.ndarray:
    """A fresh observation: the ``n`` features ending at day ``t``, then the three scalars."""
    obs = np.empty(n + 3, dtype=np.float32)
    obs[:n] = flat[(t + 1) * N_FEATURES - n : (t + 1) * N_FEATURES]
    obs[n] = position
    obs[n + 1] = time_left
    obs[n + 2] = pr
    return obs


class ReferenceTradingEnv(gym.Env):
    """FinTrading-v0's task, flat: same spaces, accounting, reward and info keys."""

    def __init__(self, flat_features: np.ndarray, close: np.ndarray, dates: list[str], first: int, last: int,
                 window: int = 30, fee: float = 0.0005) -> None:
        self.flat = flat_features
        self.close = close.tolist()
        self.dates = dates
        self.first, self.last, self.window, self.fee = first, last, window, fee
        self.n = window * N_FEATURES
        self.observation_space = spaces.Box(-10.0, 10.0, (self.n + 3,), np.float32)
        self.action_space = spaces.Discrete(3)

    def _obs(self) -> np.ndarray:
        pr = math.log(self.equity / self.entry) if self.position else 0.0
        time_left = (self.last - self.t) / (self.last - self.first)
        return window_observation(self.flat, self.t, self.n, self.position, time_left, pr)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = self.first
        self.position, self.shares, self.cash, self.equity, self.entry, self.fees = 0, 0.0, 1.0, 1.0, 1.0, 0.0
        return self._obs(), {}

    def step(self, action):
        t = self.t
        target = int(action) - 1
        old = self.equity
        price = self.close[t]
        fee = 0.0
        if target != self.position:
            eq = self.equity
            if self.position:
                f = self.fee * abs(self.shares) * price
                eq -= f
                fee += f
            if target:
                f = self.fee * eq
                eq -= f
                fee += f
            self.shares = target * eq / price
            self.cash = eq - self.shares * price
            self.position, self.equity, self.entry = target, eq, eq
        at_decision = self.equity
        self.t = t = t + 1
        price = self.close[t]
        self.equity = self.cash + self.shares * price
        truncated = t >= self.last
        if truncated and self.position:
            f = self.fee * abs(self.shares) * price
            self.equity -= f
            fee += f
        self.fees += fee
        info = {"date": self.dates[t], "price": price, "position": self.position,
                "equity": self.equity, "equity_at_decision": at_decision, "fee": fee, "fees": self.fees,
                "look_ahead_attempts": 0}
        return self._obs(), math.log(self.equity / old), False, truncated, info


class BareReferenceEnv(gym.Env):
    """The least an env of FinTrading-v0's shape can do: reward = position x return, no fees, empty info."""

    def __init__(self, flat_features: np.ndarray, close: np.ndarray, first: int, last: int, window: int = 30) -> None:
        self.flat = flat_features
        close = np.asarray(close, dtype=np.float64)
        self.returns = np.concatenate(([0.0], np.log(close[1:] / close[:-1]))).tolist()
        self.first, self.last = first, last
        self.n = window * N_FEATURES
        self.observation_space = spaces.Box(-10.0, 10.0, (self.n + 3,), np.float32)
        self.action_space = spaces.Discrete(3)

    def _obs(self) -> np.ndarray:
        time_left = (self.last - self.t) / (self.last - self.first)
        return window_observation(self.flat, self.t, self.n, self.position, time_left, 0.0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.position = self.first, 0
        return self._obs(), {}

    def step(self, action):
        self.position = int(action) - 1
        self.t += 1
        return self._obs(), self.position * self.returns[self.t], False, self.t >= self.last, {}
