"""FinAudit-v0 baselines: a tool-using oracle, an extract-only agent and a random/format-error agent.

Each is ``policy(obs, info) -> answer`` built with ``from_env(env, seed)`` and
reads the filing only through the env's tools (:class:`finenvs.tools.ToolBox`),
the way an LLM agent does. The oracle re-derives the calculated value from the
tool outputs alone — it never calls the ground-truth code — so its accuracy of 1
on the generated instances is a check of the ground truth, not a tautology.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from finenvs.scoring.audit import audit_rates
from finenvs.tools import ToolBox


def _task(info: dict[str, Any]) -> tuple[str, str]:
    return str(info["concept"]), str(info["period"])


def _most_precise_first(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repeated facts of one period differ only in precision: the most precise one is the value."""
    return sorted(facts, key=lambda f: -(99 if f["decimals"] == "INF" else int(f["decimals"] or 0)))


class _ToolAgent:
    def __init__(self, env: Any) -> None:
        self.tools = ToolBox(env, max_chars=200_000)
        self.calls = 0

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.calls += 1
        result = self.tools.call(name, arguments)
        if not result.ok:
            raise ValueError(f"{name}{arguments}: {result.error}")
        return result.data

    def reported(self, concept: str, period: str) -> tuple[float, str] | None:
        """(value, unit) of the concept's non-dimensional fact for the period, or None."""
        facts = _most_precise_first(
            [f for f in self.call("get_facts", concept=concept, period=period)["facts"] if f["value"] is not None])
        if not facts:
            return None
        return float(facts[0]["value"]), str(facts[0]["unit"])


class OracleAuditor(_ToolAgent):
    """Reads the reported fact, then sums the concept's children role by role (first complete role,
    children without a fact computed from their own children), else applies the sign rule the
    ``get_concept`` tool states. Uses only tool outputs."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> OracleAuditor:
        return cls(env)

    def _value(self, concept: str, period: str, unit: str, path: tuple[str, ...]) -> float | None:
        facts = _most_precise_first([f for f in self.call("get_facts", concept=concept, period=period)["facts"]
                                     if f["value"] is not None and f["unit"] == unit])
        if facts:
            return float(facts[0]["value"])
        return self._sum(concept, period, unit, path)

    def _sum(self, concept: str, period: str, unit: str, path: tuple[str, ...]) -> float | None:
        roles = self.call("get_calculation", concept=concept)["children"]
        for kids in roles.values():
            total, complete = 0.0, True
            for kid in kids:
                if kid["child"] in path:
                    return None
                value = self._value(kid["child"], period, unit, (*path, kid["child"]))
                if value is None:
                    complete = False
                    break
                total += float(kid["weight"]) * value
            if complete and kids:
                return total
        return None

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        concept, period = _task(info)
        got = self.reported(concept, period)
        if got is None:
            return json.dumps({"reported_value": None, "calculated_value": None})
        reported, unit = got
        calculated = self._sum(concept, period, unit, (concept,))
        if calculated is None:
            meta = self.call("get_concept", concept=concept)
            calculated = abs(reported) if meta["non_negative"] else reported
        return json.dumps({"reported_value": reported, "calculated_value": calculated})


class ExtractOnly(_ToolAgent):
    """Finds the reported fact and answers it as the calculated value too (never detects an error)."""

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> ExtractOnly:
        return cls(env)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        got = self.reported(*_task(info))
        value = got[0] if got else None
        return json.dumps({"reported_value": value, "calculated_value": value})


#: Replies the random agent sends half the time (structural errors of several kinds).
MALFORMED = (
    "The reported value looks right to me.",
    '{"reported_value": 100}',
    '{"reported_value": "about a billion", "calculated_value": 5}',
    "reported_value: 1,000; calculated_value: 1,000",
    '{"reported_value": 1, "calculated_value": 2} {"reported_value": 3, "calculated_value": 4}',
    '["reported_value", 1, "calculated_value", 1]',
)


class RandomAuditor:
    """Half the time a malformed reply (structural error), else two log-uniform random amounts."""

    def __init__(self, seed: int | None = 0) -> None:
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_env(cls, env: Any, seed: int | None = 0) -> RandomAuditor:
        return cls(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        if self.rng.random() < 0.5:
            return MALFORMED[int(self.rng.integers(len(MALFORMED)))]
        a, b = (float(round(10 ** self.rng.uniform(3, 11))) for _ in range(2))
        return json.dumps({"reported_value": a, "calculated_value": b})


AUDIT_POLICIES: dict[str, tuple[type, str]] = {
    "oracle": (OracleAuditor, "uses the tools to read the fact and recompute the calculation network (ACC 1 check)"),
    "extract_only": (ExtractOnly, "reads the reported fact; calculated = reported"),
    "random": (RandomAuditor, "malformed half the time, random amounts otherwise"),
}


def run_audit(env: Any, policy: Any, indices: list[int] | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Every instance of a fixed-list FinAudit-v0 env (or ``indices``) with ``policy``; one row each."""
    base = env.unwrapped
    rows = []
    for i in indices if indices is not None else range(len(base.instances)):
        obs, info = env.reset(seed=seed, options={"index": i})
        if hasattr(policy, "reset"):
            policy.reset(seed + i)
        _, reward, _, _, final = env.step(policy(obs, info))
        rows.append({"task_id": info["task_id"], "bundle": info["bundle"], "kind": final["kind"],
                     "label": final["audit"]["label"], "reason": final["audit"]["reason"], "reward": reward,
                     "look_ahead_attempts": final["look_ahead_attempts"]})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """ACC/SER/EER/CER overall and per injected kind."""
    return audit_rates([r["label"] for r in rows], [r["kind"] for r in rows])


def run_audit_section(seed: int = 0) -> dict[str, Any]:
    """FinAudit-v0's eval split with every baseline, for the scorecard."""
    import gymnasium as gym

    env = gym.make("FinAudit-v0", split="eval")
    section: dict[str, Any] = {"n": len(env.unwrapped.instances), "policies": {}}
    for name, (cls, _) in AUDIT_POLICIES.items():
        rows = run_audit(env, cls.from_env(env, seed), seed=seed)
        section["policies"][name] = {**summarise(rows), "rows": rows}
    env.close()
    return section


def audit_markdown(section: dict[str, Any]) -> list[str]:
    """The scorecard's Audit section."""
    def pct(x: float) -> str:
        return "—" if isinstance(x, float) and math.isnan(x) else f"{100 * x:.1f}"

    kinds = list(next(iter(section["policies"].values()))["by"])
    lines = ["## Audit", "", "### FinAudit-v0", "",
             f"{section['n']} eval instances generated from the shipped SEC filings (seeds 0..{section['n'] - 1}; "
             "20 per kind). Each answer lands in exactly one class: ACC (pass) + SER (structural) + EER "
             "(extraction) + CER (calculation) = 100%.", "",
             "| policy | ACC % | SER % | EER % | CER % |", "|---|---:|---:|---:|---:|"]
    for name, s in section["policies"].items():
        lines.append(f"| {name} | {pct(s['ACC'])} | {pct(s['SER'])} | {pct(s['EER'])} | {pct(s['CER'])} |")
    lines += ["", "ACC % by injected error:", "", "| policy | " + " | ".join(kinds) + " |",
              "|---|" + "---:|" * len(kinds)]
    for name, s in section["policies"].items():
        lines.append(f"| {name} | " + " | ".join(pct(s["by"][k]["ACC"]) for k in kinds) + " |")
    return lines + [""]


__all__ = ["AUDIT_POLICIES", "ExtractOnly", "OracleAuditor", "RandomAuditor", "audit_markdown", "run_audit",
           "run_audit_section", "summarise"]
