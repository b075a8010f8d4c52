"""Which baseline policies apply to which env (installed as ``finenvs.baselines``), and the RL baselines.

Each family's rule policies and offline scripted chat agent live in its folder
(``finenvs.tasks.trading.baselines``, ...) and its task spec lists them; the
registry here finds them through the spec. The stable-baselines3 baselines are
``finenvs.baselines.rl``. Running them is the evaluation layer's job
(:mod:`finenvs.evaluation`).
"""

from finenvs.baselines.registry import applicable_policies, make_policy

__all__ = ["applicable_policies", "make_policy"]
