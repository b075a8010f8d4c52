"""FAB++'s debate through every agent path: the text interface (``debate=True``), ``finenvs llm`` against the test
chat server, ``--resume`` between the two turns, ``finenvs score``'s replay, the MCP server and the bench's agent
runs."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import finenvs  # noqa: F401
from finenvs.evaluation.agents import ScriptedRouter
from finenvs.evaluation.endpoints import OpenAIChatAgent
from finenvs.evaluation.llm import RunConfig, run_llm
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.score import score_run, terminal_report
from finenvs.tasks import Selection, task_of
from finenvs.text.chat import ChatReply, ToolCall
from finenvs.text.protocol import MAX_PROMPT_CHARS

sys.path.insert(0, str(Path(__file__).parent))
from chat_server import ChatServer  # noqa: E402

CHALLENGE = "A reviewer disagrees with your answer"


def _challenged(messages) -> bool:
    return any(m.get("role") == "user" and CHALLENGE in str(m.get("content")) for m in messages)


def _commit(answer) -> ChatReply:
    return ChatReply(None, [ToolCall("call_final", "commit_action", json.dumps({"answer": answer}))])


class Corrector:
    """Answers 0 first (wrong), then, challenged, answers as the scripted agent does (right): 1.0."""

    def __init__(self) -> None:
        self.router = ScriptedRouter()

    def reply(self, messages, tools):
        return self.router.reply(messages, tools) if _challenged(messages) else _commit(0)


class Yielder:
    """Answers as the scripted agent does (right), then, challenged, withdraws its answer: 0.8."""

    def __init__(self) -> None:
        self.router = ScriptedRouter()

    def reply(self, messages, tools):
        return _commit(None) if _challenged(messages) else self.router.reply(messages, tools)


# ------------------------------------------------------------------------------------------- the text interface
def test_text_env_shows_the_counter_argument_and_the_first_answer_then_scores_the_final_one():
    env = gym.make("FinQA-text-v0", split="eval", debate=True)
    prompt, info = env.reset(options={"index": 80})
    assert CHALLENGE not in prompt and info["debate"] == {"turn": 1, "turns": 2} and info["n_decisions"] == 2
    from finenvs.tasks.qa.methods import reference_structured_answer

    right = reference_structured_answer(env.unwrapped.item)  # method, intermediates and answer, as JSON text
    prompt2, reward, terminated, truncated, info = env.step(right)
    assert (reward, terminated, truncated) == (0.0, False, False)
    counter = info["debate"]["counter_argument"]
    assert CHALLENGE in prompt2 and counter in prompt2 and "Your first answer:" in prompt2
    assert env.observation_space.contains(prompt2) and len(prompt2) <= MAX_PROMPT_CHARS
    _, reward, terminated, _, info = env.step(right)
    assert terminated and reward == 1.0
    assert info["debate"]["multiplier"] == 1.2 and info["debate"]["outcome"] == "correct answer held"
    prompt, _ = env.reset(options={"index": 80})
    assert CHALLENGE not in prompt  # a new episode starts without the last one's challenge


def test_a_family_without_a_debate_round_is_refused_with_the_families_that_have_one():
    with pytest.raises(ValueError, match="no debate round"):
        gym.make("FinTrading-text-v0", split="eval", debate=True)
    with pytest.raises(ValueError, match="FinQA-v0, FinOptions-v0"):
        RunConfig(env_id="FinTrading-v0", env_kwargs={"debate": True})
    with pytest.raises(ValueError, match="true or false"):
        RunConfig(env_id="FinQA-v0", env_kwargs={"debate": "yes"})


def test_a_huge_first_answer_is_shown_cut_and_the_prompt_stays_in_its_space():
    env = gym.make("FinQA-text-v0", split="eval", debate=True)
    env.reset(options={"index": 3})
    prompt, *_ = env.step("Answer: " + "9" * 16_000)
    assert "(cut)" in prompt and env.observation_space.contains(prompt)


# ------------------------------------------------------------------------------------------- finenvs llm
def _run(tmp_path, agent, env_id="FinQA-v0", instances=(0, 1, 2, 80), name="run", **kwargs):
    config = RunConfig(env_id=env_id, split="eval", instances=list(instances), env_kwargs={"debate": True},
                       concurrency=2, **kwargs)
    return run_llm(config, agent, out=tmp_path, name=name, progress=False)


@pytest.mark.parametrize(("agent", "outcome", "multiplier"), [
    (ScriptedRouter, "correct answer held", 1.2),
    (Corrector, "wrong answer corrected", 1.0),
    (Yielder, "correct answer abandoned", 0.8),
])
def test_llm_runs_the_debate_through_the_chat_server_and_score_reproduces_it(tmp_path, agent, outcome, multiplier):
    with ChatServer(agent()) as server:
        summary = _run(tmp_path, OpenAIChatAgent("scripted", server.base_url, timeout=10.0))
        prompts = [m["content"] for body in server.requests for m in body["messages"] if m["role"] == "user"]
    assert summary.status == "complete"
    assert sum(CHALLENGE in p for p in prompts) >= 4  # each question's second turn showed its challenge
    score = score_run(summary.run_dir)
    assert score.status == "reproduced", terminal_report(score)
    metrics = score.run_metrics()
    assert metrics["debated"] == 4 and metrics["debate_outcomes"] == {outcome: 4}
    assert metrics["debate_multiplier"] == pytest.approx(multiplier)
    plain = 0.0 if agent is Yielder else 100.0  # the final answer's plain score
    first = 0.0 if agent is Corrector else 100.0
    assert metrics["score"] == pytest.approx(plain)
    # one rule on every path: the first answer's score times the multiplier (a right answer given up: 80, not 0)
    assert metrics["debated_score"] == pytest.approx(min(100.0, first * multiplier))
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = [r for r in records if r.get("type") == "step"]
    assert len(steps) == 8 and all("debate" in r for r in steps)
    first = [r for r in steps if r["step"] == 0]
    assert all(r["reward"] == 0.0 and r["debate"]["turn"] == 2 for r in first)
    assert f"| {outcome} | {multiplier:.1f}" in re.sub(" +", " ", terminal_report(score))


def test_a_run_stopped_between_the_turns_resumes_to_the_same_result(tmp_path):
    agent = task_of("FinOptions-v0").make_scripted_agent()
    whole = _run(tmp_path, agent, "FinOptions-v0", instances=(0, 25), name="whole")
    part = _run(tmp_path, agent, "FinOptions-v0", instances=(0, 25), name="part", max_decisions=1)
    assert part.status == "incomplete"
    assert score_run(part.run_dir).status == "incomplete"
    recorded = {**json.loads((part.run_dir / "run.json").read_text())["config"], "max_decisions": None}
    resumed = run_llm(RunConfig(**recorded), agent, resume=part.run_dir, progress=False)
    assert resumed.status == "complete"
    a, b = score_run(whole.run_dir), score_run(resumed.run_dir)
    assert a.status == b.status == "reproduced"
    assert [e.metrics["debate"] for e in a.episodes] == [e.metrics["debate"] for e in b.episodes]
    assert a.run_metrics()["debate_multiplier"] == pytest.approx(1.2)


def test_a_changed_debate_record_is_not_reproduced(tmp_path):
    summary = _run(tmp_path, ScriptedRouter(), instances=(0,))
    path = summary.run_dir / "trajectories.jsonl"
    lines = path.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if '"type": "episode"' in line or '"type":"episode"' in line)
    lines[k] = lines[k].replace('"multiplier": 1.2', '"multiplier": 0.8').replace('"multiplier":1.2', '"multiplier":0.8')
    assert "0.8" in lines[k]
    path.write_text("\n".join(lines) + "\n")
    assert score_run(summary.run_dir).exit_code == 1


# ------------------------------------------------------------------------------------------- MCP
def test_mcp_serves_the_challenge_as_the_next_observation_and_scores_the_final_commit(tmp_path):
    from finenvs.evaluation.mcp_server import McpEpisode
    from finenvs.tasks.qa.methods import reference_structured_answer

    spec = task_of("FinQA-v0").plan(Selection(split="eval", instances=(80,)))[0]
    spec = dataclasses.replace(spec, env_kwargs={**spec.env_kwargs, "debate": True})
    episode = McpEpisode(spec, out=tmp_path, name="mcp")
    try:
        answer = json.loads(reference_structured_answer(episode.session.env.unwrapped.item))
        first, error = episode.call("commit_action", answer)
        assert not error and not first["done"] and first["reward"] == 0.0
        assert CHALLENGE in first["observation"]
        observed, _ = episode.call("get_observation", {})
        assert observed["observation"] == first["observation"]
        final, _ = episode.call("commit_action", answer)
        assert final["done"] and final["reproduced_offline"]
        assert final["metrics"]["debate_multiplier"] == 1.2 and final["metrics"]["score"] == 100.0
    finally:
        episode.close()


def test_mcp_print_config_carries_the_debate_and_tool_mode(capsys, tmp_path):
    from finenvs.cli import main

    assert main(["mcp", "--env", "FinOptions-v0", "--debate", "--tools", "none", "--out", str(tmp_path),
                 "--print-config"]) == 0
    args = json.loads(capsys.readouterr().out)["mcpServers"]["finenvs-options"]["args"]
    assert "--debate" in args and args[args.index("--tools") + 1] == "none"


def test_cli_llm_debate_refuses_a_family_without_a_round(capsys, tmp_path):
    from finenvs.cli import main

    assert main(["llm", "--env", "FinTrading-v0", "--debate", "--out", str(tmp_path), "--quiet"]) == 2
    assert "no debate round" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- the bench
def test_bench_applies_an_agents_debated_runs_to_its_profile_and_its_alpha():
    from finenvs.evaluation.agent_runs import debate_record
    from finenvs.evaluation.bench import section_aggregate

    options = task_of("FinOptions-v0")
    plain = {"agent": "m", "family": "options", "env": "FinOptions-v0", "debate_of": None, "sections": ["options"],
             "efficiency": {"cost_usd": 0.5, "decisions": 4, "look_ahead_attempts": 0},
             "episodes": [{"label": f"t{i}", "status": "complete",
                           "episode": {"section": "options", "task_score": 50.0}} for i in range(4)]}
    debated = {**plain, "agent": "m (debate)", "debate_of": "m", "episodes": [
        {"label": f"t{i}", "status": "complete", "episode": {"section": "options", "task_score": 50.0, "debate": {
            "outcome": "correct answer held", "multiplier": 1.2, "first_score": 60, "final_score": 60,
            "debated_score": 72, "max_score": 100.0}}} for i in range(3)]
        + [{"label": "t3", "status": "aborted", "episode": None}]}
    record = debate_record(debated)
    assert record["multiplier"] == pytest.approx((3 * 1.2 + 0.8) / 4)  # an unfinished task counts as kept wrong
    sections = {"options": {"tasks": {p: [] for p in set(options.bench.profiles.values())}}}
    out = section_aggregate([options], sections, [plain, debated], "fabpp", [],
                            debates={"FinOptions-v0": {"policies": {}, "agents": {"m": record}}})
    profile = out["profiles"]["m"]
    assert "m (debate)" not in out["profiles"]  # the debated run is not a profile of its own
    assert profile["overall"] == pytest.approx(50.0)
    assert profile["overall_debate"] == pytest.approx((3 * 72.0 + 0.0) / 4)  # the tasks' debated scores
    assert [r["task_score"] for r in record["rows"]] == [72.0, 72.0, 72.0, 0.0]
    assert profile["alpha"]["D"] == pytest.approx(record["multiplier"])
