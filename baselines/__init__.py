"""Baseline policies (installed as ``finenvs.baselines``).

Rule policies for every task (``finenvs.baselines.trading``, ...), each family's
offline scripted chat agent, the RL baselines (``finenvs.baselines.rl``) and the
registry that says which policies apply to which env. Running them is the
evaluation layer's job (:mod:`finenvs.evaluation`).
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

__all__ = [
    "AlwaysFlat",
    "BuyAndHold",
    "Momentum",
    "RSIMeanReversion",
    "RandomPolicy",
    "SMACrossover",
    "TradingPolicy",
    "applicable_policies",
    "make_policy",
]
