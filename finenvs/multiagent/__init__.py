"""Multi-agent markets as PettingZoo parallel envs (the ``marl`` extra: ``pip install 'finenvs[marl]'``).

* :class:`MarketImpactEnv` (``finenvs_market_impact_v0``): k traders on one
  asset; their net order flow moves the price (linear temporary and permanent
  impact); each earns its own equity change.
* :class:`PairsMarketEnv` (``finenvs_pairs_market_v0``): a cooperative pairs
  book, one agent per leg, both earning the team's P&L.

::

    from finenvs.multiagent import parallel_env
    env = parallel_env(n_agents=3, exogenous="synthetic")
    obs, infos = env.reset(seed=0)
    while env.agents:
        obs, rewards, terms, truncs, infos = env.step({a: env.action_space(a).sample() for a in env.agents})

PettingZoo is imported lazily: ``import finenvs`` and ``import finenvs.multiagent``
never import it, the pure cores (:mod:`~finenvs.multiagent.market_core`,
:mod:`~finenvs.multiagent.pairs_core`) never need it, and touching an env
without it raises an ``ImportError`` naming the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pettingzoo import AECEnv

    from finenvs.multiagent.market import MarketImpactEnv
    from finenvs.multiagent.pairs import PairsMarketEnv

_LAZY = {"MarketImpactEnv": "finenvs.multiagent.market", "PairsMarketEnv": "finenvs.multiagent.pairs"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'finenvs.multiagent' has no attribute {name!r}")


def parallel_env(**kwargs: Any) -> MarketImpactEnv:
    """A :class:`MarketImpactEnv` (PettingZoo parallel API); ``kwargs`` are its arguments."""
    from finenvs.multiagent.market import MarketImpactEnv

    return MarketImpactEnv(**kwargs)


def pairs_parallel_env(**kwargs: Any) -> PairsMarketEnv:
    """A :class:`PairsMarketEnv` (PettingZoo parallel API); ``kwargs`` are its arguments."""
    from finenvs.multiagent.pairs import PairsMarketEnv

    return PairsMarketEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The market-impact env under PettingZoo's AEC (turn-based) API, via ``parallel_to_aec``."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(parallel_env(**kwargs))


def pairs_env(**kwargs: Any) -> AECEnv:
    """The pairs env under PettingZoo's AEC (turn-based) API, via ``parallel_to_aec``."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(pairs_parallel_env(**kwargs))


__all__ = ["MarketImpactEnv", "PairsMarketEnv", "env", "pairs_env", "pairs_parallel_env", "parallel_env"]
