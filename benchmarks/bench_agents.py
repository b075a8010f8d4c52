"""Latency of one scripted-agent decision in every task family (the offline agents of ``finenvs llm``).

Usage (from the repository root)::

    python benchmarks/bench_agents.py              # full run (~10 s); writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_agents.py --quick      # smoke run (seconds), prints only unless --out is given
    python benchmarks/bench_agents.py --families trading qa --reps 50 --out /tmp/agents.md

For every registered family (``finenvs.tasks.tasks()``; nothing here names a
family), its offline agent (``task.make_scripted_agent()``) plays the episodes of
``task.plan(Selection(split="eval"))`` from the first one on, each through an
in-memory ``EpisodeSession`` (``finenvs.evaluation.session``) whose text env
comes from an ``EnvPool``, as in the runner, until ``--reps`` decisions are timed
(when the plan runs out it starts again from its first episode). Three things are timed per decision (``time.perf_counter``, GC on):

(a) the agent's own thinking: ``agent.reply(messages, tools)`` for each assistant
    turn of the decision, summed; the turns are replayed from the decision's
    recorded conversation (each reply is checked to equal the recorded one), so
    no tool or env runs inside this timer;
(b) the whole decision through the runner's loop,
    ``finenvs.evaluation.llm.decide(agent, SessionPort(session), session.prompt,
    RunConfig(env_id=...))``: the agent's turns and its tool calls, up to the
    committed answer; the env step is **not** in it;
(c) the commit, ``session.commit(...)`` with the arguments the runner passes: the
    env step, the next prompt, the step record (and, on an episode's last step,
    the episode's metrics).

Session construction and reset are outside every timer, and one decision per
family is played untimed first (lazy imports, data loading). The report gives
the median and 90th percentile (nearest rank) per family, the decisions timed,
and tool calls and assistant turns per decision, against the target of a median
scripted-agent decision under 2 ms in every family.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gymnasium as gym  # noqa: E402
from results_file import RESULTS, cpu_name, update_section  # noqa: E402

import finenvs  # noqa: E402
from finenvs.evaluation.envpool import EnvPool  # noqa: E402
from finenvs.evaluation.llm import RunConfig, SessionPort, decide  # noqa: E402
from finenvs.evaluation.session import EpisodeSession  # noqa: E402
from finenvs.tasks import Selection, TaskSpec, tasks  # noqa: E402
from finenvs.tools.registry import COMMIT_TOOL  # noqa: E402

TARGET_MS = 2.0
perf_counter = time.perf_counter


@dataclass
class FamilyTimes:
    """Per-decision samples of one family (seconds), and what the decisions did."""

    family: str
    env_id: str
    agent: str
    reply: list[float] = field(default_factory=list)
    decide: list[float] = field(default_factory=list)
    tools: list[float] = field(default_factory=list)  # decide's own tool_seconds
    commit: list[float] = field(default_factory=list)
    tool_calls: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    episodes: int = 0
    distinct_episodes: int = 0
    plan_size: int = 0
    invalid: int = 0
    replay_mismatches: int = 0
    error: str | None = None


def quantiles(samples: list[float]) -> tuple[float, float]:
    """Median and 90th percentile (nearest rank), as in bench_tools.py."""
    xs = sorted(samples)
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.9 * len(xs)))]


def _tool_calls(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(tool calls other than the commit, assistant turns) in a decision's conversation."""
    calls = turns = 0
    for m in messages:
        if m.get("role") == "assistant":
            turns += 1
            for c in m.get("tool_calls") or []:
                name = (c.get("function") or {}).get("name") if isinstance(c, dict) else getattr(c, "name", None)
                calls += name != COMMIT_TOOL
    return calls, turns


def _time_replies(agent: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[float, bool]:
    """Seconds of ``agent.reply`` summed over the decision's assistant turns, replayed from its conversation;
    and whether every replayed reply equals the recorded turn."""
    total, same = 0.0, True
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        history = messages[:i]
        t0 = perf_counter()
        reply = agent.reply(history, tools)
        total += perf_counter() - t0
        same = same and reply.message() == m
    return total, same


def _commit(session: EpisodeSession, decision: Any) -> None:
    """``session.commit`` with the arguments ``run_episode`` passes (cost: unknown prices, as the default)."""
    session.commit(
        decision.parsed,
        raw_text=decision.raw_text,
        messages=decision.messages,
        usage=decision.usage,
        cost_usd=None,
        requests=decision.requests,
        retries=decision.retries,
        endpoint_errors=decision.endpoint_errors,
        errors=decision.errors,
        timing={"seconds": decision.seconds, "llm_seconds": decision.llm_seconds,
                "tool_seconds": decision.tool_seconds},
        extra={"commit_arguments": decision.commit_arguments},
    )


async def _play(task: TaskSpec, reps: int, out: FamilyTimes) -> None:
    plan = task.plan(Selection(split="eval"))
    out.plan_size = len(plan)
    if not plan:
        raise RuntimeError("the eval plan is empty")
    agent = task.make_scripted_agent()
    out.agent = type(agent).__name__
    config = RunConfig(env_id=task.env_id)

    # text envs reused across episodes as the runner does (``run_episode`` with an ``EnvPool``)
    pool = EnvPool(history=config.history, tool_max_chars=config.tool_max_chars)

    def open_session(spec: Any) -> EpisodeSession:
        return EpisodeSession(spec, history=config.history, tool_max_chars=config.tool_max_chars, env=pool.take(spec))

    # warm-up: one untimed decision (imports, data, caches)
    session = open_session(plan[0])
    decision = await decide(agent, SessionPort(session), session.prompt, config)
    _commit(session, decision)
    pool.give(plan[0], session.env)

    seen: set[int] = set()
    k = 0
    while len(out.decide) < reps:
        spec = plan[k % len(plan)]
        seen.add(k % len(plan))
        k += 1
        session = open_session(spec)
        port = SessionPort(session)
        out.episodes += 1
        while not session.done and len(out.decide) < reps:
            t0 = perf_counter()
            decision = await decide(agent, port, session.prompt, config)
            t1 = perf_counter()
            _commit(session, decision)
            t2 = perf_counter()
            tools = port.tool_specs()
            reply_s, same = _time_replies(agent, decision.messages, tools)
            calls, turns = _tool_calls(decision.messages)
            out.decide.append(t1 - t0)
            out.commit.append(t2 - t1)
            out.reply.append(reply_s)
            out.tools.append(decision.tool_seconds)
            out.tool_calls.append(calls)
            out.turns.append(turns)
            out.invalid += not decision.parsed.valid
            out.replay_mismatches += not same
        pool.give(spec, session.env)
    pool.close()
    out.distinct_episodes = len(seen)


def bench_family(task: TaskSpec, reps: int) -> FamilyTimes:
    out = FamilyTimes(task.family, task.env_id, task.scripted_agent.__name__)
    try:
        asyncio.run(_play(task, reps, out))
    except Exception as exc:  # a family's failure is reported, the others still run
        out.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    return out


def _ms(x: float) -> str:
    return f"{x * 1e3:.3f}" if x < 0.1 else f"{x * 1e3:,.1f}"


def report(results: list[FamilyTimes], *, command: str, reps: int, began: _dt.datetime, wall: float,
           load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    L = [
        "# Scripted-agent decision latency, every task family",
        "",
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {began:%Y-%m-%d %H:%M:%S %Z}; script wall time {wall:.0f} s",
        f"- Machine: {cpu_name()}; {os.cpu_count()} logical CPUs; {platform.system()} {platform.release()}",
        f"- Load average (1/5/15 min) before: {' / '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' / '.join(f'{x:.2f}' for x in load_after)} (shared machine: expect noise)",
        f"- Python {platform.python_version()}; finenvs {finenvs.__version__}; gymnasium {gym.__version__}",
        f"- Protocol: per family, the scripted agent (`task.make_scripted_agent()`) plays the eval plan "
        f"(`task.plan(Selection(split=\"eval\"))`) from its first episode until {reps} decisions are timed (the plan "
        "restarts from its first episode if it runs out), each episode in an in-memory `EpisodeSession` on a text env "
        "from an `EnvPool` (reused across episodes, as the runner does); one "
        "untimed warm-up decision first; session construction and reset outside every timer; GC on; "
        "`time.perf_counter`. Median and p90 (nearest rank) per decision.",
        "- (a) **agent reply**: `agent.reply(messages, tools)` summed over the decision's assistant turns, "
        "replayed from its recorded conversation (no tools, no env). (b) **decide**: "
        "`decide(agent, SessionPort(session), session.prompt, RunConfig(env_id=...))`, the runner's loop: "
        "agent turns + tool calls, up to the committed answer, env step excluded; its tool part (`tool_seconds`) "
        "is shown beside it. (c) **commit**: `session.commit(...)` as the runner calls it (env step, next prompt, "
        "step record; the episode's metrics on its last step).",
        "",
        "| family | env | agent | episodes (distinct / plan) | decisions timed | tool calls / decision | "
        "turns / decision | (a) reply median ms | (a) p90 | (b) decide median ms | (b) p90 | of which tools "
        "(median) | (c) commit median ms | (c) p90 |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.error is not None or not r.decide:
            L.append(f"| {r.family} | {r.env_id} | {r.agent} | failed: {r.error or 'no decisions'} |"
                     + " |" * 10)
            continue
        a, b, t, c = (quantiles(x) for x in (r.reply, r.decide, r.tools, r.commit))
        L.append(
            f"| {r.family} | {r.env_id} | `{r.agent}` | {r.episodes} ({r.distinct_episodes} / {r.plan_size}) | "
            f"{len(r.decide)} | {statistics.mean(r.tool_calls):.2f} | {statistics.mean(r.turns):.2f} | "
            f"{_ms(a[0])} | {_ms(a[1])} | {_ms(b[0])} | {_ms(b[1])} | {_ms(t[0])} | {_ms(c[0])} | {_ms(c[1])} |"
        )
    L += ["", "## Reading", ""]
    meets_a, meets_b = [], []
    for r in results:
        if r.error is not None or not r.decide:
            L.append(f"- {r.family}: not measured ({r.error or 'no decisions'}).")
            continue
        a, b = statistics.median(r.reply), statistics.median(r.decide)
        ok_a, ok_b = a < TARGET_MS / 1e3, b < TARGET_MS / 1e3
        (meets_a if ok_a else []).append(r.family)
        (meets_b if ok_b else []).append(r.family)
        notes = []
        if r.replay_mismatches:
            notes.append(f"{r.replay_mismatches} replayed replies differed from the recorded turn")
        if r.invalid:
            notes.append(f"{r.invalid} decisions without a valid action")
        L.append(f"- {r.family}: (a) agent reply {_ms(a)} ms median, **{'meets' if ok_a else 'misses'}** the "
                 f"{TARGET_MS:g} ms target; (b) decide {_ms(b)} ms median, **{'meets' if ok_b else 'misses'}** it"
                 + (f" ({'; '.join(notes)})" if notes else "") + ".")
    measured = [r.family for r in results if r.error is None and r.decide]
    L.append("")
    L.append(f"Median under {TARGET_MS:g} ms in every measured family: (a) agent reply "
             f"{'yes' if len(meets_a) == len(measured) else 'no'} ({len(meets_a)}/{len(measured)}); (b) whole decision "
             f"through `decide` {'yes' if len(meets_b) == len(measured) else 'no'} ({len(meets_b)}/{len(measured)}).")
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few decisions per family; prints only unless --out is given")
    p.add_argument("--reps", type=int, default=None, help="decisions timed per family (default 200; quick 20)")
    p.add_argument("--families", nargs="+", default=None, help="only these registered families (default: all)")
    p.add_argument("--out", type=Path, default=None,
                   help="results file (default: its section of benchmarks/RESULTS.md for a full run; none for --quick)")
    args = p.parse_args(argv)
    reps = args.reps or (20 if args.quick else 200)
    out = args.out if args.out is not None else (None if args.quick or args.families else RESULTS)
    command = " ".join(["python", "benchmarks/bench_agents.py", *(sys.argv[1:] if argv is None else argv)])

    registered = list(tasks())
    if args.families:
        unknown = set(args.families) - {t.family for t in registered}
        if unknown:
            p.error(f"unknown families {sorted(unknown)}; registered: {[t.family for t in registered]}")
        registered = [t for t in registered if t.family in args.families]

    began = _dt.datetime.now().astimezone()
    load_before = os.getloadavg()
    t_start = perf_counter()
    results = []
    for task in registered:
        print(f"[bench_agents] {task.family} ...", file=sys.stderr, flush=True)
        t0 = perf_counter()
        results.append(bench_family(task, reps))
        print(f"[bench_agents] {task.family}: {len(results[-1].decide)} decisions in {perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
    text = report(results, command=command, reps=reps, began=began, wall=perf_counter() - t_start,
                  load_before=load_before, load_after=os.getloadavg())
    print(text)
    if out is not None:
        if out.resolve() == RESULTS:  # the shared results file: replace only this script's section
            update_section("agents", text)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        print(f"[bench_agents] wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
