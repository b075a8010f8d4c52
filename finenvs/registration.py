"""Every finenvs environment registers here, when ``import finenvs`` runs.

Registry kwargs are JSON-serialisable (symbols, dates, fee levels), so
``gymnasium.spec(id).to_json()`` round-trips.

The envs enforce reset-before-step themselves (``gymnasium.error.ResetNeeded``)
and validate every action, and CI runs gymnasium's full ``check_env`` on each
one, so they register with ``order_enforce=False`` and
``disable_env_checker=True``: ``gym.make`` returns the env itself, without two
wrapper layers on every step. ``gym.make(id, disable_env_checker=False)``
brings gymnasium's passive checker back.
"""

from __future__ import annotations

import gymnasium as gym

#: id -> (one-line description, task family)
ENVIRONMENTS: dict[str, tuple[str, str]] = {
    "FinTrading-v0": (
        "One asset, daily SELL/HOLD/BUY target position; 5 bp fees; CR/SR/MDD (standard and herculean).",
        "trading",
    ),
    "FinHedging-v0": (
        "Choose an ordered pair of 8 stocks on day 1, then trade it dollar-neutral daily; 5 bp per leg; CR/SR/MDD.",
        "hedging",
    ),
    "FinOptions-v0": (
        "One options task per episode (pricing, Greeks, strategy, P&L attribution, sizing) scored 0-100 by the engine.",
        "options",
    ),
    "FinReport-v0": (
        "One research report (or rating) per week on one stock; ratings traded daily (CR/SR/MDD); report quality 0-10.",
        "report",
    ),
    "FinDeltaHedge-v0": (
        "Short one option, choose the hedge ratio each step until expiry; reward -(hedging P&L error)^2; costs.",
        "deltahedge",
    ),
    "FinAudit-v0": (
        "One XBRL audit instance of a real SEC filing; JSON {reported_value, calculated_value}; ACC/SER/EER/CER.",
        "audit",
    ),
    "FinQA-v0": (
        "One finance question (knowledge at a date, or analytical reasoning); text answer scored per part by code.",
        "qa",
    ),
}

_KWARGS = {
    "FinTrading-v0": {
        "symbol": None,
        "split": "train",
        "window": 30,
        "fee_bps": 5.0,
        "allow_short": True,
        "fill": "close",
        "reward": "log_return",
        "source": "real",
        "dataset": "core",
    },
    "FinHedging-v0": {
        "symbols": None,
        "split": "train",
        "fee_bps": 5.0,
        "invalid_action": "hold",
        "source": "real",
        "dataset": "core",
    },
    "FinOptions-v0": {
        "kinds": None,
        "source": "real",
        "chain": "generated",
        "split": "train",
        "bank": None,
        "hold_to_expiry": False,
    },
    "FinReport-v0": {
        "symbol": None,
        "split": "train",
        "action_mode": "rating",
        "position_map": "herculean",
        "fee_bps": 5.0,
        "dataset": "core",
    },
    "FinDeltaHedge-v0": {
        "option": "call",
        "moneyness": 1.0,
        "maturity_days": 30,
        "steps_per_day": 1,
        "source": "gbm",
        "sigma": 0.2,
        "cost_bps": 0.0,
        "action_type": "box",
    },
    "FinAudit-v0": {
        "split": "eval",
        "corpus": None,
        "tasks_file": None,
    },
    "FinQA-v0": {
        "section": "all",
        "split": "eval",
        "as_of": "2026-03-31",
    },
}

_ENTRY_POINTS = {
    "FinTrading-v0": "finenvs.envs.trading:FinTradingEnv",
    "FinHedging-v0": "finenvs.envs.hedging:FinHedgingEnv",
    "FinOptions-v0": "finenvs.envs.options:FinOptionsEnv",
    "FinDeltaHedge-v0": "finenvs.envs.deltahedge:FinDeltaHedgeEnv",
    "FinReport-v0": "finenvs.envs.report:FinReportEnv",
    "FinAudit-v0": "finenvs.envs.audit:FinAuditEnv",
    "FinQA-v0": "finenvs.envs.qa:FinQAEnv",
}

#: text variant id -> base env id. ``gym.make("FinTrading-text-v0", **base_kwargs)`` is the base env
#: wrapped in :class:`finenvs.wrappers.text.TextInterface` (prompt observations, text actions, tools).
#: Batched implementations: ``gym.make_vec(env_id, num_envs)`` builds these (``vectorization_mode="sync"``
#: still gives gymnasium's SyncVectorEnv of single envs).
_VECTOR_ENTRY_POINTS: dict[str, str] = {
    "FinTrading-v0": "finenvs.envs.trading_vector:FinTradingVectorEnv",
}

TEXT_VARIANTS: dict[str, str] = {
    "FinTrading-text-v0": "FinTrading-v0",
    "FinHedging-text-v0": "FinHedging-v0",
    "FinAudit-text-v0": "FinAudit-v0",
    "FinQA-text-v0": "FinQA-v0",
}


def text_variant(env_id: str) -> str | None:
    """The registered text variant of a base env id (None if it has none)."""
    for text_id, base in TEXT_VARIANTS.items():
        if base == env_id:
            return text_id
    return None


def register_envs() -> None:
    """Register every finenvs env with gymnasium (idempotent)."""
    for env_id, entry_point in _ENTRY_POINTS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=entry_point,
            vector_entry_point=_VECTOR_ENTRY_POINTS.get(env_id),
            kwargs=dict(_KWARGS[env_id]),
            order_enforce=False,
            disable_env_checker=True,
        )
    for text_id, base_id in TEXT_VARIANTS.items():
        if text_id in gym.registry:
            continue
        gym.register(
            id=text_id,
            entry_point="finenvs.wrappers.text:make_text_env",
            kwargs={"base_id": base_id},
            order_enforce=False,
            disable_env_checker=True,
        )


def env_ids() -> list[str]:
    """Ids of the registered finenvs envs."""
    return list(ENVIRONMENTS)
