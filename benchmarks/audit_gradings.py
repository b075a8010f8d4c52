"""FinAudit-v0's baselines under finenvs' grading and HERCULEAN's, on the 100 eval instances.

Rows: each baseline answering with the keys its env's grading asks for (what ``finenvs bench`` runs, with and
without ``--env-kwargs '{"grading": "herculean"}'``); the same baselines answering with finenvs' canonical keys
(``reported_value``) but graded by HERCULEAN's rules (what HERCULEAN's grader makes of a finenvs answer); and the
oracle's answers moved by a fraction of the fact's half-unit tolerance (near misses that finenvs accepts and
HERCULEAN's exact comparison does not)::

    python benchmarks/audit_gradings.py
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

import finenvs  # noqa: F401  (registers FinAudit-v0)
from finenvs.tasks.audit.baselines import AUDIT_POLICIES, OracleAuditor, run_audit, summarise
from finenvs.tools import ToolBox


def rates(rows: list[dict[str, Any]]) -> str:
    s = summarise(rows)
    return " | ".join(f"{100 * s[k]:.1f}" for k in ("ACC", "SER", "EER", "CER"))


class NearMiss:
    """The oracle's answer with the calculated value moved by ``fraction`` of the truth's half-unit tolerance."""

    def __init__(self, env: Any, fraction: float) -> None:
        self.oracle, self.env, self.fraction = OracleAuditor.from_env(env), env, fraction

    def __call__(self, obs: str, info: dict[str, Any]) -> str:
        answer = json.loads(self.oracle(obs, info))
        first, second = list(answer)
        truth = self.env.unwrapped.truth.truth
        return json.dumps({first: answer[first], second: answer[second] + self.fraction * truth.calculated_tolerance})


def main() -> None:
    envs = {g: gym.make("FinAudit-v0", grading=g) for g in ("finenvs", "herculean")}
    print("| answers | graded by | ACC % | SER % | EER % | CER % |\n|---|---|---:|---:|---:|---:|")
    for grading, env in envs.items():
        for name, (cls, _) in AUDIT_POLICIES.items():
            print(f"| {name} (keys of its grading) | {grading} | {rates(run_audit(env, cls.from_env(env, 0)))} |")
    for name, (cls, _) in AUDIT_POLICIES.items():  # finenvs' keys, HERCULEAN's grader
        policy = cls.from_env(envs["finenvs"], 0)
        if hasattr(policy, "tools"):
            policy.tools = ToolBox(envs["herculean"], max_chars=200_000)
        print(f"| {name} (finenvs' keys: reported_value) | herculean | {rates(run_audit(envs['herculean'], policy))} |")
    for fraction in (0.5, 0.99):
        for grading, env in envs.items():
            print(f"| oracle, calculated value + {fraction} x half unit | {grading} | "
                  f"{rates(run_audit(env, NearMiss(env, fraction)))} |")


if __name__ == "__main__":
    main()
