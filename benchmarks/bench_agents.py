"""Latency of one scripted-agent decision in every task family (the offline agents of ``finenvs llm``).

Usage (from the repository root)::

    python benchmarks/bench_agents.py              # full run (~10 s); writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_agents.py --quick      # smoke run (seconds), prints only unless --out is given
    python benchmarks/bench_agents.py --families trading qa --reps 50 --out /tmp/agents.md
    python benchmarks/bench_agents.py --endpoint   # the runner against an instant endpoint, concurrency 1 and 16

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

``--endpoint`` measures the runner itself against an instant endpoint instead: the
test chat server (``tests/chat_server.py``: every family's scripted agent behind
``/v1/chat/completions``) runs in a separate process, and in this process
``finenvs.evaluation.llm.run_llm_async`` plays each family's eval plan through
``OpenAIChatAgent`` (HTTP, JSON, sessions from an ``EnvPool``, tools, token counts,
the keyed trajectory file) at each ``--concurrency``. Per decision it reports the
wall time, this process's CPU time (``time.process_time``: everything the runner
and the envs did; the server's work is in the other process), and of that the base
envs' own ``reset`` and ``step`` (timed around the env class's methods); **runner cost** is the
CPU time without the env steps, against the target of 5 ms per decision at
concurrency 16.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as _dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
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
#: Runner cost per decision against an instant endpoint at concurrency 16 (issue 36).
ENDPOINT_TARGET_MS = 5.0
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


def _header(title: str, command: str, began: _dt.datetime, wall: float, load_before: tuple[float, ...],
            load_after: tuple[float, ...]) -> list[str]:
    """A report's title and the lines every run records: command, date, machine, load, versions."""
    return [
        f"# {title}",
        "",
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {began:%Y-%m-%d %H:%M:%S %Z}; script wall time {wall:.0f} s",
        f"- Machine: {cpu_name()}; {os.cpu_count()} logical CPUs; {platform.system()} {platform.release()}",
        f"- Load average (1/5/15 min) before: {' / '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' / '.join(f'{x:.2f}' for x in load_after)} (shared machine: expect noise)",
        f"- Python {platform.python_version()}; finenvs {finenvs.__version__}; gymnasium {gym.__version__}",
    ]


def report(results: list[FamilyTimes], *, command: str, reps: int, began: _dt.datetime, wall: float,
           load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    L = [
        *_header("Scripted-agent decision latency, every task family", command, began, wall, load_before, load_after),
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


# ---------------------------------------------------------------------------- against an instant endpoint
#: The server process: the test chat server on a free port; prints its URL, serves until stdin closes.
#: HTTP/1.1 with keep-alive, as model servers speak (the test server's default, HTTP/1.0, opens a connection per
#: request; every answer has a Content-Length), and TCP_NODELAY (headers and body are two writes: with Nagle's
#: algorithm the body would wait for the client's delayed ACK, ~40 ms).
_SERVER = (
    "import sys; sys.path.insert(0, {tests!r}); import finenvs; from chat_server import ChatServer\n"
    "server = ChatServer()\n"
    "server._httpd.RequestHandlerClass.protocol_version = 'HTTP/1.1'\n"
    "server._httpd.RequestHandlerClass.disable_nagle_algorithm = True\n"
    "with server:\n"
    "    print(server.base_url, flush=True); sys.stdin.read()\n"
)
#: Episodes per run (enough to keep 16 in flight) and decisions per episode (runs stay a few seconds); a family
#: whose episodes are shorter gets more episodes, up to :data:`ENDPOINT_MAX_EPISODES`, for at least
#: :data:`ENDPOINT_MIN_DECISIONS` decisions.
ENDPOINT_EPISODES = 32
ENDPOINT_DECISIONS = 8
ENDPOINT_MIN_DECISIONS = 128
ENDPOINT_MAX_EPISODES = 160
#: Runs of the same episodes when the plan has fewer (FinOptions-v0: 34 instances); the report sums them.
ENDPOINT_MAX_REPEATS = 4



def _publish(text: str, out: Path | None, section: str) -> int:
    """Print the report and write it to ``out``: into its own ``section`` when ``out`` is the shared results file."""
    print(text)
    if out is not None:
        if out.resolve() == RESULTS:  # the shared results file: replace only this script's section
            update_section(section, text)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        print(f"[bench_agents] wrote {out}", file=sys.stderr)
    return 0

@dataclass
class EndpointRun:
    family: str
    env_id: str
    concurrency: int
    episodes: int = 0
    decisions: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    env_seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    def per_decision_ms(self, seconds: float) -> float:
        return seconds / max(1, self.decisions) * 1e3


class _EnvTimer:
    """CPU seconds (this thread's) spent in a base env class's construction, ``reset`` and ``step`` (patched on the
    class; undone by :meth:`close`)."""

    def __init__(self, cls: type) -> None:
        self.cls, self.seconds, self.depth = cls, 0.0, 0
        self.originals = {n: cls.__dict__[n] for n in ("__init__", "reset", "step") if n in cls.__dict__}
        for name, original in self.originals.items():
            setattr(cls, name, self._timed(original))

    def _timed(self, original: Any) -> Any:
        def timed(env: Any, *args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            t0 = time.thread_time()  # CPU time, as the run's total is (wall time would count waits for the CPU)
            try:
                return original(env, *args, **kwargs)
            finally:
                self.depth -= 1
                if not self.depth:  # the outermost call only (a reset inside a constructor is counted once)
                    self.seconds += time.thread_time() - t0

        return timed

    def close(self) -> None:
        for name, original in self.originals.items():
            setattr(self.cls, name, original)


def _endpoint_config(task: TaskSpec, concurrency: int, episodes: int = ENDPOINT_EPISODES) -> Any:
    """The run: seeds added until the eval plan has ``episodes`` episodes (or 32 seeds), that many episodes, at most
    :data:`ENDPOINT_DECISIONS` decisions each."""
    seeds = [0]
    while len(seeds) < 32 and len(task.plan(Selection(split="eval", seeds=tuple(seeds)))) < episodes:
        try:  # a family whose episodes are its plan's items plays one seed
            task.plan(Selection(split="eval", seeds=(*seeds, len(seeds))))
        except ValueError:
            break
        seeds.append(len(seeds))
    return RunConfig(env_id=task.env_id, seeds=seeds, limit=episodes, concurrency=concurrency,
                     max_decisions=ENDPOINT_DECISIONS, max_consecutive_endpoint_failures=None)


def bench_endpoint(task: TaskSpec, concurrency: int, base_url: str, out_dir: Path,
                   episodes: int = ENDPOINT_EPISODES) -> EndpointRun:
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.llm import run_llm_async

    run = EndpointRun(task.family, task.env_id, concurrency)
    timer = _EnvTimer(type(gym.make(task.env_id).unwrapped))
    try:
        config = _endpoint_config(task, concurrency, episodes)
        agent = OpenAIChatAgent("scripted-router", base_url, timeout=60.0)
        for k in range(ENDPOINT_MAX_REPEATS):  # a plan too short for the decisions wanted is run again
            name = f"{task.family}-c{concurrency}-e{episodes}-{k}"
            c0, t0 = time.process_time(), perf_counter()
            summary = asyncio.run(run_llm_async(config, agent, out=out_dir, name=name, progress=False))
            run.wall += perf_counter() - t0
            run.cpu += time.process_time() - c0
            run.episodes += len(summary.outcomes)
            run.decisions += sum(o.decisions for o in summary.outcomes)
            for o in summary.outcomes:
                run.statuses[o.status] = run.statuses.get(o.status, 0) + 1
            if run.decisions >= ENDPOINT_MIN_DECISIONS or episodes < ENDPOINT_MAX_EPISODES:
                break
        run.env_seconds = timer.seconds
    except Exception as exc:  # one family's failure is reported, the others still run
        run.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    finally:
        timer.close()
    return run


def _warm_endpoint(tasks_: list[TaskSpec], base_url: str, out_dir: Path) -> None:
    """One untimed run per family first, one decision of each of the most episodes a timed run plays (imports,
    data, the server's agents)."""
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.llm import run_llm_async

    for task in tasks_:
        config = dataclasses.replace(_endpoint_config(task, 16, ENDPOINT_MAX_EPISODES), max_decisions=1)
        asyncio.run(run_llm_async(config, OpenAIChatAgent("scripted-router", base_url), out=out_dir,
                                  name=f"warm-{task.family}", progress=False))


def endpoint_report(runs: list[EndpointRun], *, command: str, began: _dt.datetime, wall: float,
                    load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    L = [
        *_header("The runner against an instant endpoint, every task family", command, began, wall, load_before,
                 load_after),
        "- Protocol: the test chat server (`tests/chat_server.py`, every family's scripted agent behind "
        "`/v1/chat/completions`, usage counted by the server; HTTP/1.1 keep-alive as model servers speak) in its own "
        "process; in this process, per family and "
        "concurrency, `run_llm_async` with `OpenAIChatAgent` plays the eval plan (seeds added until it has "
        f"enough episodes), {ENDPOINT_EPISODES} episodes of at most {ENDPOINT_DECISIONS} decisions ({ENDPOINT_MAX_EPISODES} "
        f"episodes when that gives fewer than {ENDPOINT_MIN_DECISIONS} decisions; a shorter plan is run again, up to "
        f"{ENDPOINT_MAX_REPEATS} runs, summed), "
        "writing a real run folder (keyed trajectory file). One untimed run per family first (the same episodes, one decision each). "
        "**CPU** is `time.process_time()` of this process over the run (runner and envs; the server's work is in "
        "the other process); **env** is the CPU time (`time.thread_time`) inside the base env class's construction (the run's `EnvPool` builds "
        "one env per episode in flight), `reset` and `step`; **runner cost** = CPU − env. All per decision.",
        "",
        "| family | env | concurrency | episodes | decisions | wall ms / decision | CPU ms / decision | "
        "env (build, reset, step) ms / decision | runner cost ms / decision | statuses |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        if r.error is not None:
            L.append(f"| {r.family} | {r.env_id} | {r.concurrency} | failed: {r.error} |" + " |" * 6)
            continue
        L.append(f"| {r.family} | {r.env_id} | {r.concurrency} | {r.episodes} | {r.decisions} | "
                 f"{r.per_decision_ms(r.wall):.2f} | {r.per_decision_ms(r.cpu):.2f} | "
                 f"{r.per_decision_ms(r.env_seconds):.2f} | {r.per_decision_ms(r.cpu - r.env_seconds):.2f} | "
                 + ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items())) + " |")
    L += ["", "## Reading", ""]
    top = max((r.concurrency for r in runs), default=0)
    at_top = [r for r in runs if r.concurrency == top and r.error is None]
    meets = [r.family for r in at_top if r.per_decision_ms(r.cpu - r.env_seconds) < ENDPOINT_TARGET_MS]
    for r in at_top:
        cost = r.per_decision_ms(r.cpu - r.env_seconds)
        L.append(f"- {r.family} at concurrency {top}: runner cost {cost:.2f} ms per decision "
                 f"(**{'meets' if cost < ENDPOINT_TARGET_MS else 'misses'}** the {ENDPOINT_TARGET_MS:g} ms target); "
                 f"with the env's builds, resets and steps, {r.per_decision_ms(r.cpu):.2f} ms.")
    L.append("")
    L.append(f"Runner cost under {ENDPOINT_TARGET_MS:g} ms per decision at concurrency {top} in every measured family: "
             f"{'yes' if at_top and len(meets) == len(at_top) else 'no'} ({len(meets)}/{len(at_top)}).")
    return "\n".join(L) + "\n"


def main_endpoint(registered: list[TaskSpec], concurrencies: list[int], out: Path | None, command: str) -> int:
    began = _dt.datetime.now().astimezone()
    load_before = os.getloadavg()
    t_start = perf_counter()
    tests_dir = str(HERE.parent / "tests")
    server = subprocess.Popen([sys.executable, "-c", _SERVER.format(tests=tests_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    runs: list[EndpointRun] = []
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError(f"the chat server did not start (it printed {base_url!r})")
        with tempfile.TemporaryDirectory(prefix="bench-agents-endpoint-") as tmp:
            _warm_endpoint(registered, base_url, Path(tmp))
            for task in registered:
                episodes = ENDPOINT_EPISODES
                for c in concurrencies:
                    print(f"[bench_agents] endpoint {task.family} concurrency {c} ...", file=sys.stderr, flush=True)
                    run = bench_endpoint(task, c, base_url, Path(tmp), episodes)
                    if run.error is None and run.decisions < ENDPOINT_MIN_DECISIONS and episodes < ENDPOINT_MAX_EPISODES:
                        episodes = ENDPOINT_MAX_EPISODES  # short episodes: more of them (this family's later runs too)
                        run = bench_endpoint(task, c, base_url, Path(tmp), episodes)
                    runs.append(run)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    text = endpoint_report(runs, command=command, began=began, wall=perf_counter() - t_start,
                           load_before=load_before, load_after=os.getloadavg())
    return _publish(text, out, "agents-endpoint")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few decisions per family; prints only unless --out is given")
    p.add_argument("--reps", type=int, default=None, help="decisions timed per family (default 200; quick 20)")
    p.add_argument("--families", nargs="+", default=None, help="only these registered families (default: all)")
    p.add_argument("--out", type=Path, default=None,
                   help="results file (default: its section of benchmarks/RESULTS.md for a full run; none for --quick)")
    p.add_argument("--endpoint", action="store_true",
                   help="time the runner (run_llm_async + OpenAIChatAgent) against an instant local endpoint instead")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 16],
                   help="with --endpoint: episodes in flight, one run per value (default 1 16)")
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
    if args.endpoint:
        if any(c < 1 for c in args.concurrency):
            p.error("--concurrency values must be >= 1")
        return main_endpoint(registered, args.concurrency, out, command)

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
    return _publish(text, out, "agents")


if __name__ == "__main__":
    raise SystemExit(main())
