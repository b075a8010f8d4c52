"""Every path that runs offline, one task at a time (tests/test_one_score.py and benchmarks/one_score_paths.py).

Each ``path_*`` plays one task with one fixed agent (tests/one_score_agent.py) and returns the task's 0-100 score
as that path reports it (a debated task: its debated score; the bench: the model's overall, or its overall with
debate). :func:`measure` runs every row of :data:`ROWS` through every path. Only interfaces that exist on both
sides of the change are used, so the same code measures any commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from one_score_agent import CHALLENGE, FixedAgent, commit_for  # noqa: E402

#: The FinQA-v0 eval question of the table (an analytical one: analysis/bond_replication/2).
QA_INDEX = 80
#: (row, env id, plan index, agent kind, debated).
ROWS = (
    ("FinQA #80 analytical, bare right answer", "FinQA-v0", QA_INDEX, "bare", False),
    ("FinQA #80 analytical, right answer + method + intermediates", "FinQA-v0", QA_INDEX, "structured", False),
    ("FinQA #80 debated, right answer given up after the challenge", "FinQA-v0", QA_INDEX, "yield", True),
    ("FinOptions #0, scripted agent", "FinOptions-v0", 0, "scripted", False),
    ("FinOptions #0 debated, scripted agent (holds its answer)", "FinOptions-v0", 0, "scripted", True),
)
PATHS = ("env", "llm", "score", "llm --env-kwargs", "mcp", "harness", "a2a", "bench")


# ------------------------------------------------------------------------------------------------ the paths
def _qa_score(env_id: str, value: float) -> float:
    return 100.0 * value if env_id == "FinQA-v0" else value


def _episode_score(metrics: dict[str, Any], debated: bool) -> float:
    """A path's 0-100 score of one episode: the task score, or the debated score on the 0-100 scale."""
    if debated:
        d = metrics["debate"]
        return 100.0 * float(d["debated_score"]) / float(d["max_score"])
    return float(metrics["task_score"])


def path_env(env_id: str, index: int, kind: str, debated: bool) -> float:
    """The env directly: the base env (under the Debate wrapper when debated), the reply as JSON text."""
    import gymnasium as gym

    import finenvs  # noqa: F401
    from finenvs.tasks import Selection, task_of
    from finenvs.wrappers.debate import Debate

    spec = task_of(env_id).plan(Selection(split="eval", instances=(index,)))[0]
    env = gym.make(env_id, **{**task_of(env_id).text_kwargs, **spec.env_kwargs})
    env = Debate(env) if debated else env
    obs, info = env.reset(seed=spec.seed, options=spec.options)
    if kind == "scripted":
        from finenvs.baselines.registry import make_policy

        policy = make_policy("engine_reference", env_id, env, seed=0)
        reply: Any = policy(obs, info)
        if not isinstance(reply, str):
            reply = json.dumps(reply)
    else:
        prompt = "\n".join(f"{k}: {v}" for k, v in env.unwrapped.text_state().items())
        reply = json.dumps(commit_for(kind, prompt, False))
    obs, reward, terminated, _, info = env.step(reply)
    if debated:
        if kind != "scripted":
            reply = json.dumps(commit_for(kind, prompt, True))
        obs, reward, terminated, _, info = env.step(reply)
        d = info["debate"]
        return 100.0 * float(d["debated_score"]) / float(d["max_score"])
    return _qa_score(env_id, float(reward))


def _config(env_id: str, index: int, debated: bool, extra: dict[str, Any] | None = None) -> Any:
    from finenvs.evaluation.llm import RunConfig

    kwargs = {**({"debate": True} if debated else {}), **(extra or {})}
    return RunConfig(env_id=env_id, split="eval", instances=[index], env_kwargs=kwargs, concurrency=1)


def path_llm(env_id: str, index: int, kind: str, debated: bool, out: Path, name: str,
             extra: dict[str, Any] | None = None) -> tuple[float, float]:
    """``finenvs llm`` against the local endpoint: (its recorded score, ``finenvs score``'s re-scored one)."""
    from chat_server import ChatServer

    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.llm import run_llm
    from finenvs.evaluation.score import score_run

    with ChatServer(FixedAgent(kind)) as server:
        summary = run_llm(_config(env_id, index, debated, extra), OpenAIChatAgent("m", server.base_url, timeout=30.0),
                          out=out, name=name, progress=False)
    recorded = _episode_score(dict(summary.episode_records()[0]["metrics"]), debated)
    score = score_run(summary.run_dir)
    assert score.status == "reproduced", score.status
    return recorded, _episode_score(score.episodes[0].metrics, debated)


def path_mcp(env_id: str, index: int, kind: str, debated: bool, out: Path, name: str) -> float:
    """The MCP server's episode: ``commit_action`` with the agent's answer (each decision's observation)."""
    import dataclasses

    from finenvs.evaluation.mcp_server import McpEpisode
    from finenvs.tasks import Selection, task_of

    spec = task_of(env_id).plan(Selection(split="eval", instances=(index,)))[0]
    if debated:
        spec = dataclasses.replace(spec, env_kwargs={**spec.env_kwargs, "debate": True})
    episode = McpEpisode(spec, out=out, name=name)
    try:
        agent = FixedAgent(kind)
        for _ in range(2 if debated else 1):
            observed, _ = episode.call("get_observation", {})
            prompt = observed["observation"]
            if kind == "scripted":  # the scripted agent's tool calls, then its commit, through the episode
                messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
                tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                           "parameters": t["input_schema"]}}
                         for t in episode.tool_list() if t["name"] != "get_observation"]
                for _ in range(20):
                    reply = agent.reply(messages, tools)
                    messages.append(reply.message())
                    calls = reply.tool_calls
                    commit = next((c for c in calls if c.name == "commit_action"), None)
                    if commit is not None:
                        result, _ = episode.call("commit_action", json.loads(commit.arguments))
                        break
                    for call in calls:
                        data, _ = episode.call(call.name, json.loads(call.arguments or "{}"))
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(data)})
            else:
                result, _ = episode.call("commit_action", commit_for(kind, prompt, CHALLENGE in prompt))
            if result.get("done"):
                break
        metrics = result["metrics"]
    finally:
        episode.close()
    if debated:
        return float(metrics["debated_score"])
    return float(metrics["score"])


def path_harness(env_id: str, index: int, kind: str, debated: bool, out: Path, name: str) -> float:
    """``finenvs harness``: this file as the agent program, one run per decision, over the episode's MCP server."""
    from finenvs.evaluation.confine import probe_bwrap
    from finenvs.evaluation.harness import HarnessAgent, run_harness

    program = ROOT / "tests" / ("harness_agent.py" if kind == "scripted" else "one_score_agent.py")
    args = "" if kind == "scripted" else f"{kind} "
    command = f"{sys.executable} {program} {args}{{prompt_file}} {{mcp_config}}"
    agent = HarnessAgent(command, timeout=120, unconfined=probe_bwrap()[0] is None)
    summary = run_harness(_config(env_id, index, debated), agent, out=out, name=name, progress=False)
    return _episode_score(dict(summary.episode_records()[0]["metrics"]), debated)


def path_a2a(env_id: str, index: int, kind: str, debated: bool, out: Path, name: str) -> float:
    """A2A: the agent served over Agent-to-Agent, driven by ``finenvs llm``'s runner."""
    from finenvs.evaluation.a2a import A2AChatAgent, serve_a2a
    from finenvs.evaluation.llm import run_llm

    with serve_a2a(FixedAgent(kind)) as url:
        summary = run_llm(_config(env_id, index, debated), A2AChatAgent(url), out=out, name=name, progress=False)
    return _episode_score(dict(summary.episode_records()[0]["metrics"]), debated)


def path_bench(env_id: str, index: int, kind: str, debated: bool, out: Path, name: str) -> float:
    """``finenvs bench`` with the endpoint as its model, playing the one task (the model's profile)."""
    from chat_server import ChatServer

    from finenvs.evaluation.bench import BenchConfig, run_bench
    from finenvs.evaluation.bench.config import instances_key
    from finenvs.tasks import task_of

    task = task_of(env_id)
    # the one task, and none of the splits the family's bench section adds (FinQA-v0's public questions)
    instances = {task.family: (index,), **{instances_key(task, split): () for split in task.bench.extra_splits}}
    with ChatServer(FixedAgent(kind)) as server:
        card = run_bench(BenchConfig(envs=[env_id], base_url=server.base_url, model="m", out=out, run_name=name,
                                     plots=False, html=False, progress=False, agents=False, debate=debated,
                                     instances=instances, endpoint={"timeout": 30.0}))
    profile = card.aggregate["profiles"]["m"]
    if debated:
        return float(profile["overall_debate"])
    return float(profile["overall"])


def _cell(fn: Any, *args: Any) -> Any:
    """A path's score, or its error as the cell's text (a path that fails is a cell of the table)."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001
        return f"error: {type(exc).__name__}: {str(exc)[:80]}"


def measure(out: Path, *, bench: bool = True, harness: bool = True) -> list[dict[str, Any]]:
    """Every row through every path: ``[{"row", path: score, ...}]`` (a path that raised: its error)."""
    table = []
    for k, (row, env_id, index, kind, debated) in enumerate(ROWS):
        task = (env_id, index, kind, debated)
        llm = _cell(path_llm, *task, out, f"llm-{k}")
        cells: dict[str, Any] = {"row": row, "env": _cell(path_env, *task),
                                 "llm": llm[0] if isinstance(llm, tuple) else llm,
                                 "score": llm[1] if isinstance(llm, tuple) else llm}
        if env_id == "FinQA-v0":
            kw = _cell(path_llm, *task, out, f"llmkw-{k}", {"analysis_score": "fabpp"})
            cells["llm --env-kwargs"] = kw[0] if isinstance(kw, tuple) else kw
        cells["mcp"] = _cell(path_mcp, *task, out, f"mcp-{k}")
        if harness:
            cells["harness"] = _cell(path_harness, *task, out, f"harness-{k}")
        cells["a2a"] = _cell(path_a2a, *task, out, f"a2a-{k}")
        if bench:
            cells["bench"] = _cell(path_bench, *task, out, f"bench-{k}")
        table.append(cells)
    return table


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| task (agent) | " + " | ".join(PATHS) + " |", "|---|" + "---:|" * len(PATHS)]
    for cells in table:
        row = []
        for p in PATHS:
            v = cells.get(p, "—")
            row.append(f"{v:.1f}" if isinstance(v, float) else str(v))
        lines.append(f"| {cells['row']} | " + " | ".join(row) + " |")
    return "\n".join(lines)
