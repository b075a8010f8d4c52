"""What an evaluation will cost before it runs: tokens per decision by family, and the dollars of a protocol.

:func:`measure_tokens` plays a family's first episodes with its offline scripted agent through the runner's own
decision loop (:func:`finenvs.evaluation.llm.decide`, in memory, no run folder) and keeps each decision's prompt,
completion and cached-prefix tokens (``o200k_base`` estimates: :mod:`finenvs.evaluation.tokens`). The scripted
agent reads what a careful model reads (every tool it needs, then a commit), so its prompt tokens are a floor for a
model's; a model's completions (reasoning, reports) are usually longer than the scripted agent's.

:func:`protocol_decisions` counts the decisions of HERCULEAN's full protocol (its four workflows over their plans,
backtest and live window) and of FAB++'s aggregate (every family with a FAB++ section, over its plan and further
splits), and :func:`projection` prices them: ``finenvs cost`` prints both.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from finenvs.tasks import EpisodeSpec, Selection, TaskSpec, tasks

#: The protocols :func:`protocol_decisions` counts.
PROTOCOLS = ("herculean", "fabpp")


@dataclass
class FamilyTokens:
    """Tokens per decision of one family's scripted agent (one entry per decision measured)."""

    env_id: str
    prompt: list[int] = field(default_factory=list)
    completion: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    #: Cached-prefix tokens of each decision against the previous request of the run (the episodes played in
    #: order), not only of its episode: what a provider's cache also keeps from the episode before.
    run_cached: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    tool_calls: list[int] = field(default_factory=list)
    episodes: int = 0
    #: Why the counts are unknown (no tokenizer, a failure), else None.
    problem: str | None = None

    @property
    def decisions(self) -> int:
        return len(self.prompt)

    def median(self, name: str) -> float | None:
        values = getattr(self, name)
        return float(statistics.median(values)) if values and self.problem is None else None

    def mean(self, name: str) -> float | None:
        values = getattr(self, name)
        return float(statistics.fmean(values)) if values and self.problem is None else None

    @property
    def cached_share(self) -> float | None:
        """Share of all prompt tokens that repeat the prefix of the previous request of their episode."""
        total = sum(self.prompt)
        return sum(self.cached) / total if total and self.problem is None else None

    @property
    def run_cached_share(self) -> float | None:
        """Share of all prompt tokens that repeat the prefix of the previous request of the run (for an episode's
        first request, the previous episode's last: its tool schemas, system prompt and instructions)."""
        total = sum(self.prompt)
        return sum(self.run_cached) / total if total and self.problem is None and self.run_cached else None

    def record(self) -> dict[str, Any]:
        return {"env": self.env_id, "episodes": self.episodes, "decisions": self.decisions,
                "median_prompt": self.median("prompt"), "median_completion": self.median("completion"),
                "mean_prompt": self.mean("prompt"), "mean_completion": self.mean("completion"),
                "mean_cached": self.mean("cached"), "cached_share": self.cached_share,
                "run_cached_share": self.run_cached_share,
                "requests_per_decision": self.mean("requests"), "tool_calls_per_decision": self.mean("tool_calls"),
                "counted": "n/a" if self.problem else "o200k_base estimate", "problem": self.problem}


def measure_tokens(task: TaskSpec, *, split: str = "eval", episodes: int = 2, decisions: int = 30,
                   seed: int = 0) -> FamilyTokens:
    """Tokens per decision of ``task``'s scripted agent over its plan's first ``episodes`` episodes of ``split``
    (at most ``decisions`` decisions, shared evenly by the episodes)."""
    from finenvs.evaluation.envpool import EnvPool
    from finenvs.evaluation.llm import RunConfig, SessionPort, decide
    from finenvs.evaluation.session import EpisodeSession
    from finenvs.evaluation.tokens import EpisodeTokens, tokenizer_status

    class EpisodeAndRun(EpisodeTokens):
        """An episode's counts (as the runner keeps them) and, beside them, the same requests counted against the
        previous request of the whole run."""

        def __init__(self, run: EpisodeTokens) -> None:
            super().__init__()
            self.run = run
            self.run_cached: int | None = 0

        def count(self, messages: Any, tools: Any, usage: Any, reply_text: str) -> None:
            super().count(messages, tools, usage, reply_text)
            self.run.count(messages, tools, usage, reply_text)

        def take(self) -> Any:
            self.run_cached = self.run.take().cached
            return super().take()

    out = FamilyTokens(task.env_id)
    status = tokenizer_status()
    if status != "ok":
        out.problem = status
        return out
    plan = task.plan(Selection(split=split, seeds=(seed,)))[:episodes]
    config = RunConfig(env_id=task.env_id, split=split)
    per_episode = max(1, decisions // max(1, len(plan)))
    agent = task.make_scripted_agent()
    pool = EnvPool(history=config.history, tool_max_chars=config.tool_max_chars)
    run_tally = EpisodeTokens()

    async def play(spec: EpisodeSpec) -> None:
        env = pool.take(spec)
        session = EpisodeSession(spec, history=config.history, tool_max_chars=config.tool_max_chars, env=env)
        tally = EpisodeAndRun(run_tally)
        try:
            for _ in range(per_episode):
                if session.done or session.waiting:
                    break
                decision = await decide(agent, SessionPort(session), session.prompt, config, tally=tally)
                tokens = decision.tokens
                if tokens.prompt is None or tokens.completion is None or tokens.cached is None:
                    out.problem = "a decision's tokens could not be counted"
                    return
                out.prompt.append(tokens.prompt)
                out.completion.append(tokens.completion)
                out.cached.append(tokens.cached)
                if tally.run_cached is not None:
                    out.run_cached.append(tally.run_cached)
                out.requests.append(decision.requests)
                calls = sum(1 for m in decision.messages if m.get("role") == "tool")
                out.tool_calls.append(calls - (1 if decision.commit_arguments is not None else 0))
                session.commit(decision.parsed, raw_text=decision.raw_text, messages=decision.messages,
                               usage=decision.usage, extra=decision.step_fields())
        finally:
            session.close()
            pool.give(spec, env)

    try:
        for spec in plan:
            asyncio.run(play(spec))
            out.episodes += 1
    finally:
        pool.close()
    return out


def _expected_decisions(spec: EpisodeSpec, pool: Any) -> int:
    """Decisions of an episode as its env announces them at reset (as the runner's progress bar counts them)."""
    env = pool.take(spec)
    try:
        _, info = env.reset(seed=spec.seed, options=spec.options)
    finally:
        pool.give(spec, env)
    return int(info.get("n_decisions") or info.get("n_reports") or info.get("n_steps") or 1)


def protocol_plan(protocol: str, *, split: str = "eval", seed: int = 0,
                  families: Sequence[TaskSpec] | None = None) -> dict[str, list[EpisodeSpec]]:
    """The episodes a model plays in ``protocol`` (env id -> episodes), as ``finenvs bench`` plays them:
    ``"herculean"``: the four workflows' plans over the backtest and the live window; ``"fabpp"``: every family with
    a FAB++ section, its plan and its further splits.

    Raises:
        ValueError: An unknown protocol.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {list(PROTOCOLS)}")
    out: dict[str, list[EpisodeSpec]] = {}
    for task in families if families is not None else tasks():
        if protocol == "herculean":
            if task.bench.herculean is None:
                continue
            splits: tuple[str, ...] = (split, "live") if task.bench.live and split == "eval" else (split,)
        else:
            if not task.bench.fabpp_sections:
                continue
            splits = (split, *(s for s in task.bench.extra_splits if s != split))
        out[task.env_id] = [e for s in splits for e in task.plan(Selection(split=s, seeds=(seed,)))]
    return out


def protocol_decisions(protocol: str, **kwargs: Any) -> dict[str, tuple[int, int]]:
    """``env id -> (episodes, decisions)`` of :func:`protocol_plan` (each episode's env reset once to read its length;
    envs are reused across episodes, as the runner's pool does)."""
    from finenvs.evaluation.envpool import EnvPool

    pool = EnvPool()
    try:
        return {env: (len(plan), sum(_expected_decisions(e, pool) for e in plan))
                for env, plan in protocol_plan(protocol, **kwargs).items()}
    finally:
        pool.close()


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens: prompt, completion, and prompt tokens served from the provider's cache
    (None: no cache discount, priced as prompt tokens)."""

    input_per_million: float
    output_per_million: float
    cached_per_million: float | None = None

    def cost(self, prompt: float, completion: float, cached: float = 0.0) -> float:
        cached_price = self.input_per_million if self.cached_per_million is None else self.cached_per_million
        return ((prompt - cached) * self.input_per_million + cached * cached_price
                + completion * self.output_per_million) / 1e6


def projection(decisions: dict[str, tuple[int, int]], measured: dict[str, FamilyTokens],
               prices: Prices | None) -> dict[str, Any]:
    """Tokens and dollars of a protocol: per env its decisions times the measured mean tokens per decision; an env
    whose tokens are unknown makes the total unknown (None), never 0."""
    rows = []
    totals: dict[str, float | None] = {"prompt": 0.0, "completion": 0.0, "cached": 0.0, "cost_usd": 0.0}
    for env, (episodes, n) in decisions.items():
        m = measured.get(env)
        per = {k: (m.mean(k) if m is not None else None) for k in ("prompt", "completion", "cached")}
        row: dict[str, Any] = {"env": env, "episodes": episodes, "decisions": n}
        for k, v in per.items():
            row[k] = None if v is None else v * n
        row["cost_usd"] = (None if prices is None or None in per.values() else
                           prices.cost(row["prompt"], row["completion"], row["cached"]))
        for k in totals:
            totals[k] = None if totals[k] is None or row[k] is None else totals[k] + row[k]
        rows.append(row)
    return {"rows": rows, "decisions": sum(n for _, n in decisions.values()), **totals}


__all__ = ["PROTOCOLS", "FamilyTokens", "Prices", "measure_tokens", "projection", "protocol_decisions",
           "protocol_plan"]
