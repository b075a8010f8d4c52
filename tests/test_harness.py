"""``finenvs harness`` (an agent program per decision, grounded by MCP) and ``finenvs skills export``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

from finenvs.cli import main  # noqa: E402
from finenvs.evaluation.confine import probe_bwrap  # noqa: E402
from finenvs.evaluation.harness import DecisionGate, HarnessAgent, HarnessError, check_command, run_harness  # noqa: E402
from finenvs.evaluation.llm import RunConfig  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.evaluation.score import score_run  # noqa: E402
from finenvs.evaluation.session import EpisodeSession  # noqa: E402
from finenvs.tasks import Selection, task_of, tasks  # noqa: E402
from helpers import record_shape_mismatches  # noqa: E402

AGENT = Path(__file__).parent / "harness_agent.py"
#: Confined where a sandbox works here (tests/test_harness_confinement.py checks the sandbox itself); elsewhere
#: the runner's logic is still tested, unconfined.
UNCONFINED = probe_bwrap()[0] is None
FLAGS = ["--unconfined"] if UNCONFINED else []
COMMAND = f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}"


def _attempts(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "harness").glob("*/attempt.json"))]


@pytest.mark.parametrize("env_id", [t.env_id for t in tasks()])
def test_every_family_runs_through_the_agent_command_over_mcp(tmp_path, env_id):
    """The test command plays the family's scripted agent over the harness's MCP server: each decision is its
    commit, and the run folder re-scores like any run (one decision of each family)."""
    config = RunConfig(env_id=env_id, split="eval", limit=1, max_decisions=1)
    summary = run_harness(config, HarnessAgent(COMMAND, timeout=120, unconfined=UNCONFINED), out=tmp_path, name="h", progress=False)
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = [r for r in records if r.get("type") == "step"]
    assert len(steps) == 1
    assert all(r["invalid"] is None and r["via"] != "default" for r in steps), [r["invalid"] for r in steps]
    attempts = _attempts(summary.run_dir)
    assert len(attempts) == len(steps) and all(a["committed"] is not None and a["exit_code"] == 0 for a in attempts)
    score = score_run(summary.run_dir)
    assert score.status in ("reproduced", "incomplete") and score.problems == []
    if score.status == "incomplete":
        assert "finenvs harness --resume" in score.resume_hint()
    assert json.loads((summary.run_dir / "run.json").read_text())["agent"]["kind"] == "harness"


def test_the_prompt_file_and_mcp_config_are_what_an_agent_cli_reads(tmp_path):
    summary = run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), HarnessAgent(COMMAND, unconfined=UNCONFINED),
                          out=tmp_path, name="h", progress=False)
    (work,) = sorted((summary.run_dir / "harness").iterdir())
    prompt = (work / "prompt.md").read_text()
    assert prompt.startswith("You are run by the finenvs harness") and "# FinQA-v0" in prompt
    config = json.loads((work / "mcp.json").read_text())
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", config["mcpServers"]["finenvs"]["url"])
    assert config["mcpServers"]["finenvs"]["type"] == "http"
    assert score_run(summary.run_dir).run_metrics()["score"] == 100.0


def test_no_commit_is_herculeans_failure_after_five_attempts(tmp_path):
    agent = HarnessAgent(f"{sys.executable} -c pass {{prompt_file}}", timeout=30, unconfined=UNCONFINED)
    config = RunConfig(env_id="FinQA-v0", split="eval", instances=[0], failure_rule="herculean")
    summary = run_harness(config, agent, out=tmp_path, name="h", progress=False)
    assert [o.status for o in summary.outcomes] == ["failed"]
    assert len(_attempts(summary.run_dir)) == 5
    assert all(a["outcome"] == "exited" and a["committed"] is None for a in _attempts(summary.run_dir))
    (episode,) = [r for r in read_trajectories(summary.run_dir / "trajectories.jsonl")[0] if r["type"] == "episode"]
    assert "without calling commit_action" in episode["reason"] and "after 5 attempts" in episode["reason"]
    mismatches, seen = record_shape_mismatches(summary.run_dir)
    assert mismatches == [] and seen["EpisodeRecord"] == 1 and "failed_decision" in episode
    score = score_run(summary.run_dir)
    assert score.exit_code == 0 and score.episodes[0].status == "failed"


def test_a_timed_out_command_is_killed_and_default_rule_takes_the_default(tmp_path):
    agent = HarnessAgent(f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}} --sleep 30", timeout=1.5, unconfined=UNCONFINED)
    config = RunConfig(env_id="FinQA-v0", split="eval", instances=[0], failure_rule="default")
    summary = run_harness(config, agent, out=tmp_path, name="h", progress=False)
    (attempt,) = _attempts(summary.run_dir)
    assert attempt["outcome"] == "timeout" and attempt["seconds"] < 10
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    (step,) = [r for r in records if r.get("type") == "step"]
    assert step["via"] == "default" and "no commit within 1.5 s" in str(step["invalid"])


def test_the_gate_refuses_calls_between_decisions_and_after_the_commit():
    gate = DecisionGate(8_000)
    data, error = gate.call("get_observation", {})
    assert error and "no decision is open" in data["error"]
    spec = task_of("FinTrading-v0").plan(Selection(split="eval", symbols=("TSLA",)))[0]
    session = EpisodeSession(spec)
    try:
        gate.set_tools(session.tool_specs())
        assert {"get_observation", "get_prices", "commit_action"} <= {t["name"] for t in gate.tool_list()}
        gate.open(session)
        data, error = gate.call("get_prices", {"lookback": 3})
        assert not error and len(data["bars"] if "bars" in data else data["rows"]) == 3
        data, error = gate.call("commit_action", {"action": "BUY"})
        assert not error and data["accepted"] and data["action"] == "BUY"
        data, error = gate.call("get_prices", {"lookback": 3})
        assert error and "committed" in data["error"]
        assert gate.close() == {"action": "BUY"}
        assert session.step_index == 0  # the gate never steps the env: the runner commits after the command exits
        data, error = gate.call("commit_action", {"action": "SELL"})
        assert error and "no decision is open" in data["error"]
        gate.open(session)
        data, error = gate.call("get_prices", {"lookback": "x" * 100_000})
        assert error and len(json.dumps(data)) < 2_000  # refused, never echoed
    finally:
        session.close()


def test_the_gate_holds_the_tool_budget_as_the_in_process_runner_does():
    """Over MCP as in process: ``budget`` tool calls per decision (the first get_observation is the prompt and free);
    calls over it are refused unserved, and the OVER_BUDGET_CALLS-th refusal ends the attempt, once."""
    from finenvs.evaluation.harness import OVER_BUDGET_CALLS

    gate = DecisionGate(8_000, budget=2)
    spec = task_of("FinTrading-v0").plan(Selection(split="eval", symbols=("TSLA",)))[0]
    session = EpisodeSession(spec)
    ended = []
    try:
        gate.set_tools(session.tool_specs())
        gate.open(session, on_over=lambda: ended.append(1))
        assert not gate.call("get_observation", {})[1]  # free: the prompt the runner would send
        assert not gate.call("get_prices", {"lookback": 2})[1]
        assert gate.call("get_prices", {"lookback": "x" * 50})[1]  # a malformed call is served as an error: it counts
        data, error = gate.call("get_prices", {"lookback": 2})
        assert error and "budget is 2 tool calls per decision" in data["error"] and gate.used == 2
        data, error = gate.call("get_observation", {})  # a second observation counts like any call
        assert error and "budget" in data["error"]
        for _ in range(OVER_BUDGET_CALLS + 5):
            gate.call("get_prices", {})
        assert ended == [1] and gate.refused == OVER_BUDGET_CALLS + 7
        data, error = gate.call("commit_action", {"action": "SELL"})  # the commit is never refused for the budget
        assert not error and data["accepted"] and gate.close() == {"action": "SELL"}
        gate.open(session)  # the next decision has its whole budget again
        assert gate.used == 0 and not gate.call("get_prices", {"lookback": 2})[1]
        gate.close()
    finally:
        session.close()


def test_an_agent_looping_on_a_tool_is_refused_over_the_budget_and_ended(tmp_path):
    """An agent program that calls a data tool 100 times (opencode made 102 get_state calls in one decision) gets
    the family's budget served, refusals after it, and is ended at OVER_BUDGET_CALLS refusals, long before its
    timeout; the attempt's record counts both."""
    from finenvs.evaluation.harness import OVER_BUDGET, OVER_BUDGET_CALLS

    agent = HarnessAgent(f"{COMMAND} --spam 100", timeout=120, unconfined=UNCONFINED)
    config = RunConfig(env_id="FinTrading-v0", split="eval", symbols=["TSLA"], max_decisions=1, max_tool_calls=3,
                       failure_rule="default")
    summary = run_harness(config, agent, out=tmp_path, name="h", progress=False)
    (attempt,) = _attempts(summary.run_dir)
    assert attempt["outcome"] == OVER_BUDGET and attempt["committed"] is None, attempt
    assert attempt["budget"] == 3 and attempt["tool_calls"] == 3
    assert OVER_BUDGET_CALLS <= attempt["refused_over_budget"] < 100 and attempt["seconds"] < 100
    (step,) = [r for r in read_trajectories(summary.run_dir / "trajectories.jsonl")[0] if r.get("type") == "step"]
    assert step["via"] == "default" and "over its budget of 3 tool calls" in str(step["invalid"])


def test_an_agent_that_goes_on_after_its_commit_is_ended_after_the_grace(tmp_path, capsys):
    """An agent CLI that keeps calling commit_action and never exits: its decision is the first commit, and the
    attempt ends --commit-grace seconds later instead of at --timeout; what it printed before is kept."""
    assert main(["harness", "--env", "FinTrading-v0", "--symbols", "TSLA", "--max-decisions", "1", "--agent-cmd",
                 f"{COMMAND} --linger", "--timeout", "120", "--commit-grace", "0.5", "--out", str(tmp_path),
                 "--name", "h", "--quiet", *FLAGS]) == 3  # stopped at --max-decisions as asked: exit 3, not 1
    out = capsys.readouterr().out
    assert "run stopped at --max-decisions as asked" in out and f"--resume {tmp_path / 'h'}" in out
    (attempt,) = _attempts(tmp_path / "h")
    assert attempt["outcome"] == "ended after its commit" and attempt["committed"] is not None
    assert attempt["seconds"] < 60 and '"accepted": true' in attempt["stdout_tail"]
    meta = json.loads((tmp_path / "h" / "run.json").read_text())
    assert meta["agent"]["commit_grace"] == 0.5
    assert main(["harness", "--env", "FinQA-v0", "--agent-cmd", COMMAND, "--timeout", "10", "--commit-grace", "11",
                 "--out", str(tmp_path), "--quiet", *FLAGS]) == 2
    assert "--commit-grace 11 must be between 0 and --timeout" in capsys.readouterr().err


def test_a_timed_out_agent_keeps_what_it_printed(tmp_path):
    """Output collected up to a timeout is kept (the attempt's log and tail), not thrown away."""
    code = ("import sys, time; print('thinking about the task', flush=True); "
            "print('still thinking', file=sys.stderr, flush=True); time.sleep(60)")
    agent = HarnessAgent(f"{sys.executable} -c \"{code}\" {{prompt_file}}", timeout=3, unconfined=UNCONFINED)
    config = RunConfig(env_id="FinQA-v0", split="eval", instances=[0], failure_rule="default")
    summary = run_harness(config, agent, out=tmp_path, name="h", progress=False)
    (attempt,) = _attempts(summary.run_dir)
    assert attempt["outcome"] == "timeout"
    assert "thinking about the task" in attempt["stdout_tail"] and "still thinking" in attempt["stderr_tail"]
    (log,) = (summary.run_dir / "harness").glob("*/stdout.log")
    assert "thinking about the task" in log.read_text()


@pytest.mark.parametrize("template", ["", "agent --no-placeholders", "agent 'unbalanced"])
def test_bad_command_templates_are_refused(template):
    with pytest.raises(HarnessError):
        check_command(template)


def test_cli_harness_resumes_a_smoke_run_to_the_end(tmp_path, capsys):
    base = ["harness", "--env", "FinQA-v0", "--instances", "0", "1", "--agent-cmd", COMMAND, "--out", str(tmp_path),
            "--quiet", *FLAGS]
    assert main([*base, "--name", "h", "--max-decisions", "1"]) == 0  # single-decision episodes: complete
    assert "run complete" in capsys.readouterr().out
    assert main(["harness", "--resume", str(tmp_path / "h"), "--quiet", *FLAGS]) == 0
    assert main(["harness", "--env", "FinQA-v0", "--out", str(tmp_path), "--quiet"]) == 2  # no --agent-cmd
    assert "--agent-cmd is required" in capsys.readouterr().err



def test_a_relative_out_and_a_relative_wrapper_script_work_as_typed(tmp_path, monkeypatch, capsys):
    """The docs' recipe as a newcomer types it: ``./agent.sh`` and the default (relative) ``--out``. Placeholder
    paths used to be relative to the attempt folder the command ran in, so every attempt failed."""
    import os
    import shlex

    monkeypatch.chdir(tmp_path)
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(AGENT))} \"$1\" \"$2\"\n")
    os.chmod(script, 0o755)
    assert main(["harness", "--env", "FinQA-v0", "--instances", "0", "--agent-cmd",
                 "./agent.sh {prompt_file} {mcp_config}", "--name", "h", "--quiet", *FLAGS]) == 0
    capsys.readouterr()
    run = tmp_path / "finenvs-runs" / "h"
    (attempt,) = _attempts(run)
    assert attempt["exit_code"] == 0 and attempt["committed"] is not None, attempt
    assert all(Path(a).is_absolute() for a in attempt["argv"][1:])
    assert score_run(run).run_metrics()["score"] == 100.0


# ------------------------------------------------------------------------------------------- skills
def test_skills_export_writes_one_skill_per_family_from_its_spec(tmp_path, capsys):
    assert main(["skills", "export", str(tmp_path)]) == 0
    paths = capsys.readouterr().out.split()
    assert len(paths) == len(tasks())
    for task in tasks():
        text = (tmp_path / f"finenvs-{task.family}" / "SKILL.md").read_text()
        front = re.match(r"---\nname: (\S+)\ndescription: (.+)\n---\n", text)
        assert front and front.group(1) == f"finenvs-{task.family}" and json.loads(front.group(2))
        from finenvs.tools import COMMIT_TOOL

        for tool in [t.name for t in (task.tools or ())] + [COMMIT_TOOL]:
            assert f"`{tool}`" in text, (task.family, tool)
        assert f"finenvs harness --env {task.env_id}" in text and f"# {task.env_id}" in text
    assert main(["skills", "export", str(tmp_path), "--families", "nope"]) == 2
