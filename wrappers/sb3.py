"""Moved to :mod:`finenvs.tasks.trading.sb3` (FinTradingVectorEnv's Stable-Baselines3 adapter); kept importable."""

from finenvs.tasks.trading.sb3 import to_sb3

__all__ = ["to_sb3"]
