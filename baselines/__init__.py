"""Baseline policies and evaluation (installed as ``finenvs.baselines``).

Rule policies for every task (``finenvs.baselines.trading``), the registry that
says which apply to which env, the episode runner and ``finenvs bench``.
"""

from finenvs.baselines.registry import applicable_policies, make_policy
from finenvs.baselines.trading import (
    AlwaysFlat,
    BuyAndHold,
    Momentum,
    RandomPolicy,
    RSIMeanReversion,
    SMACrossover,
    TradingPolicy,
)
from finenvs.evaluation.episodes import EpisodeResult, run_episode

__all__ = [
    "AlwaysFlat",
    "BuyAndHold",
    "EpisodeResult",
    "Momentum",
    "RSIMeanReversion",
    "RandomPolicy",
    "SMACrossover",
    "TradingPolicy",
    "applicable_policies",
    "make_policy",
    "run_episode",
]
