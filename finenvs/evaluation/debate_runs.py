"""``finenvs bench --debate``: every baseline of each family with a debate round, two turns per task (the
agents play the same round through the text interface: :func:`finenvs.evaluation.agent_runs.debate_record`).

Each task of the family's bench plan (the evaluation config's selection when one
is given) is played under :class:`finenvs.wrappers.debate.Debate`: the policy
answers, faces the counter-argument (in the observation when it is text, and in
``info["debate"]``), and answers again. The record per task is what
:func:`finenvs.text.debate.debate_verdict` decides (the one rule every path
calls): the multiplier, its outcome and the debated score (0-100 in
``task_score``); per policy, the mean multiplier overall and per FAB++ section.
The aggregate's overall with debate is the aggregate of the debated scores.
Rule baselines do not read the counter-argument: they answer the same twice, so
a right answer is held (1.2) and a wrong one kept (0.8) — the multipliers
measure the answers, and a model run through the same wrapper measures
conviction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import gymnasium as gym

from finenvs.baselines.registry import make_policy
from finenvs.evaluation.episodes import play_episode
from finenvs.tasks import Selection, TaskSpec
from finenvs.tasks.common import mean
from finenvs.text.markdown import fmt_number, md_table, md_text
from finenvs.wrappers.debate import Debate


def run_debate(task: TaskSpec, split: str, seed: int, instances: tuple[int, ...] | None = None,
               env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The debate of every baseline of ``task`` over its bench plan (see the module docstring)."""
    episodes = task.plan(Selection(split=split, seeds=(seed,), instances=instances, env_kwargs=dict(env_kwargs or {})))
    out: dict[str, Any] = {"tasks": len(episodes), "policies": {}}
    for name, (cls, _) in task.load_baselines().items():
        rows = []
        envs: dict[tuple[Any, ...], Any] = {}
        for ep in episodes:
            kwargs = {**ep.env_kwargs, **(getattr(cls, "env_kwargs", None) or {})}
            key = tuple(sorted(kwargs.items()))
            if key not in envs:
                envs[key] = Debate(gym.make(ep.env_id, **kwargs))
            env = envs[key]
            policy = make_policy(name, task.env_id, env, seed=seed)
            result = play_episode(env, policy, seed=ep.seed, options=ep.options, policy_name=name)
            debate = result["final"]["debate"]
            rows.append({"task_id": result["metrics"].get("label"), "section": result["metrics"].get("section"),
                         "first_score": debate["first_score"], "final_score": debate["final_score"],
                         "multiplier": debate["multiplier"], "outcome": debate["outcome"],
                         "debated_score": debate["debated_score"],
                         "task_score": 100.0 * float(debate["debated_score"]) / float(debate["max_score"])})
        for env in envs.values():
            env.close()
        by_section: dict[str, list[float]] = {}
        for row in rows:
            by_section.setdefault(str(row["section"]), []).append(row["multiplier"])
        out["policies"][name] = {"rows": rows, "multiplier": mean([r["multiplier"] for r in rows]),
                                 "section_multipliers": {k: mean(v) for k, v in by_section.items()},
                                 "outcomes": dict(Counter(r["outcome"] for r in rows))}
    return out


def debate_markdown(debates: dict[str, dict[str, Any]]) -> list[str]:
    """The scorecard's debate block: per family and policy, the mean multiplier and the outcomes."""
    lines = ["## Adversarial debate (FAB++)", "",
             "Each task answered, then challenged by a counter-argument for a common mistake built in code, then "
             "answered again. finenvs' rule (correctness checked in code; FAB++'s reference judges the reply's "
             "text, 0.5/1.0/1.2): multiplier 1.2 a correct answer held, 1.0 a wrong answer corrected, 0.8 a "
             "correct answer abandoned or a wrong one kept; a task's debated score = min(100, first answer's "
             "score x multiplier), and the overall with debate is the aggregate of the debated scores.", "",
             md_table(["env", "policy", "tasks", "mean multiplier", "outcomes"], [
                 [env_id, md_text(name), str(len(rec["rows"])), fmt_number(rec["multiplier"], digits=3),
                  ", ".join(f"{k} {v}" for k, v in sorted(rec["outcomes"].items()))]
                 for env_id, debate in debates.items()
                 for name, rec in [*debate["policies"].items(), *((f"{name} (agent, text interface)", rec)
                                                                 for name, rec in debate.get("agents", {}).items())]]),
             ""]
    return lines


__all__ = ["debate_markdown", "run_debate"]
