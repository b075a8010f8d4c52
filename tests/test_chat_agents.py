"""The offline chat agents of FinAudit-v0, FinQA-v0 and FinReport-v0 driven through their text envs.

Each agent must reach its base baseline's answers from the prompt and the tool results alone:
ScriptedAuditAgent the OracleAuditor's, ScriptedQAChatAgent the ScriptedQAAgent's, ScriptedReportAgent
the TemplateReportWriter's reports.
"""

from __future__ import annotations

import copy
import json

import gymnasium as gym
import pytest

from finenvs.tasks.audit.baselines import (
    OracleAuditor,
    ScriptedAuditAgent,
    print_episode,
    run_audit,
    summarise,
)
from finenvs.tasks.qa.baselines import ScriptedQAAgent, ScriptedQAChatAgent, run_qa
from finenvs.tasks.qa.baselines import print_episode as print_qa_episode
from finenvs.tasks.report.baselines import ScriptedReportAgent, TemplateReportWriter
from finenvs.text.chat import ChatReply

BUDGET_ERROR = "the tool-call budget of {n} per decision is used up; call commit_action now"


def _drive(env, agent, *, seed=0, options=None, budget=None, serve=None, tools=None):
    """One episode: per decision, prompt -> reply -> tool results ... -> commit.

    ``budget``: tool calls served per decision (later ones get the runner's budget error);
    ``serve(name, arguments) -> text | None`` overrides a tool's result. Returns
    ``(infos, actions, transcript)``; the transcript holds every ``(messages, reply)`` and
    the tool calls per decision. ``tools``: the schemas offered (default: the env's).
    """
    prompt, _ = env.reset(seed=seed, options=options)
    tools = env.tool_specs() if tools is None else tools
    infos, actions, turns, calls = [], [], [], []
    while True:
        messages = [{"role": "system", "content": "You are a finance agent."}, {"role": "user", "content": prompt}]
        used = 0
        while True:
            reply = agent.reply(messages, tools)
            turns.append((copy.deepcopy(messages), reply))
            messages.append(reply.message())
            commit = next((c for c in reply.tool_calls if c.name == "commit_action"), None)
            if commit is not None or not reply.tool_calls:
                action = reply.content if commit is None else {"name": "commit_action", "arguments": commit.arguments}
                break
            for call in reply.tool_calls:
                text = serve(call.name, json.loads(call.arguments)) if serve else None
                if text is None and budget is not None and used >= budget:
                    text = json.dumps({"error": BUDGET_ERROR.format(n=budget)})
                elif text is None:
                    used += 1
                    text = env.call_tool(call.name, call.arguments).text()
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        calls.append(used)
        actions.append(action)
        prompt, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            return infos, actions, {"turns": turns, "calls": calls}


def _committed(action):
    arguments = json.loads(action["arguments"])
    arguments.pop("reasoning", None)
    return arguments


def _assert_pure_and_stateless(agent, turns, tools):
    """Same messages -> same reply, messages untouched; a fresh agent mid-conversation replies the same."""
    for messages, reply in turns:
        before = copy.deepcopy(messages)
        assert agent.reply(messages, tools) == reply
        assert type(agent)().reply(copy.deepcopy(messages), tools) == reply
        assert messages == before


# ====================================================================== FinAudit-v0
@pytest.fixture(scope="module")
def audit_env():
    return gym.make("FinAudit-text-v0")


@pytest.fixture(scope="module")
def oracle():
    env = gym.make("FinAudit-v0", split="eval")
    policy = OracleAuditor.from_env(env)
    answers = []
    for i in range(len(env.unwrapped.instances)):
        obs, info = env.reset(seed=0, options={"index": i})
        answers.append(json.loads(policy(obs, info)))
    return {"rows": run_audit(env, OracleAuditor.from_env(env)), "answers": answers}


def test_audit_agent_equals_the_oracle_on_every_eval_instance(audit_env, oracle):
    agent, rows, calls = ScriptedAuditAgent(), [], []
    for i, want in enumerate(oracle["answers"]):
        infos, actions, log = _drive(audit_env, agent, options={"index": i})
        assert _committed(actions[-1]) == want, i
        rows.append({"label": infos[-1]["audit"]["label"], "kind": infos[-1]["kind"]})
        calls += log["calls"]
        if i % 10 == 0:
            _assert_pure_and_stateless(agent, log["turns"], audit_env.tool_specs())
    ours, theirs = summarise(rows), summarise(oracle["rows"])
    assert {k: ours[k] for k in ("ACC", "SER", "EER", "CER")} == {k: theirs[k] for k in ("ACC", "SER", "EER", "CER")}
    # the fact and the calculation, then the children's facts in one call (or the concept's metadata)
    assert ours["ACC"] == 1.0 and set(calls) == {3}


def test_audit_agent_reads_the_children_in_one_call_and_one_by_one_alike(audit_env, oracle):
    """Offered a get_facts without ``concepts`` (another surface's schema), it asks child by child: the same
    answers, more calls."""
    tools = copy.deepcopy(audit_env.tool_specs())
    facts = next(t["function"] for t in tools if t["function"]["name"] == "get_facts")
    del facts["parameters"]["properties"]["concepts"]
    agent, calls = ScriptedAuditAgent(), []
    for i, want in enumerate(oracle["answers"][:20]):
        _, actions, log = _drive(audit_env, agent, options={"index": i}, tools=tools)
        assert _committed(actions[-1]) == want, i
        calls += log["calls"]
    assert max(calls) > 3


def test_audit_agent_under_a_budget_falls_back_to_the_reported_value(audit_env, oracle):
    """Within the runner's default budget of 8 every eval decision gets the oracle's answer; with 2 the third call
    (the children's facts or the concept's metadata) fails, and the reported value is committed as both values."""
    agent = ScriptedAuditAgent()
    for i, want in enumerate(oracle["answers"]):
        _, actions, _ = _drive(audit_env, agent, options={"index": i}, budget=8)
        assert _committed(actions[-1]) == want, i
        _, actions, _ = _drive(audit_env, agent, options={"index": i}, budget=2)
        got = json.loads(actions[-1]["arguments"])
        assert "budget" in got["reasoning"], i
        assert got["reported_value"] == got["calculated_value"] == want["reported_value"], i


def test_audit_agent_tool_error_commits_the_reported_value(audit_env):
    def serve(name, arguments):
        if name == "get_calculation":
            return json.dumps({"error": "calculation linkbase unavailable"})
        return None

    infos, actions, _ = _drive(audit_env, ScriptedAuditAgent(), options={"index": 3}, serve=serve)
    got = json.loads(actions[-1]["arguments"])
    assert "calculation linkbase unavailable" in got["reasoning"]
    assert got["reported_value"] == got["calculated_value"] == infos[-1]["audit"]["truth"]["reported_value"]

    infos, actions, _ = _drive(audit_env, ScriptedAuditAgent(), options={"index": 3},
                               serve=lambda name, _: json.dumps({"error": "down"}))
    got = json.loads(actions[-1]["arguments"])
    assert got["reported_value"] is None and "down" in got["reasoning"]
    assert infos[-1]["audit"]["label"] == "structural"


def test_audit_agent_without_tools_answers_in_text(audit_env):
    prompt, _ = audit_env.reset(seed=0, options={"index": 0})
    reply = ScriptedAuditAgent().reply([{"role": "user", "content": prompt}], [])
    assert isinstance(reply, ChatReply) and not reply.tool_calls and "null" in reply.content


def test_audit_print_episode_is_the_run_text():
    env = gym.make("FinAudit-v0", split="eval")
    obs, info = env.reset(seed=0, options={"index": 7})
    action = OracleAuditor.from_env(env)(obs, info)
    _, reward, _, _, final = env.step(action)
    result = {"env": "FinAudit-v0", "policy": "oracle", "obs": obs, "info": info, "action": action, "reward": reward,
              "final": final}
    audit, t = final["audit"], final["audit"]["truth"]
    assert "\n".join(print_episode(env, result)) == "\n".join([
        obs, "", f"FinAudit-v0 {info['task_id']} policy=oracle: {audit['label']} ({audit['reason']})",
        f"  answer: {action}",
        f"  truth:  reported {t['reported_value']:,.0f}, calculated {t['calculated_value']:,.0f} "
        f"(tolerance {t['reported_tolerance']:,.0f}); injected: {final['injection']}"])


# ====================================================================== FinQA-v0
@pytest.fixture(scope="module")
def qa_env():
    return gym.make("FinQA-text-v0")


def test_qa_agent_equals_the_scripted_agent_on_every_eval_question(qa_env):
    base = gym.make("FinQA-v0", split="eval")
    reference = ScriptedQAAgent.from_env(base)
    rows = run_qa(base, ScriptedQAAgent.from_env(base))
    agent, scores, calls = ScriptedQAChatAgent(), [], []
    for i, row in enumerate(rows):
        obs, info = base.reset(options={"index": i})
        infos, actions, log = _drive(qa_env, agent, options={"index": i}, budget=8)
        # the same answer (the offline agent also states FAB++'s method and intermediates; the chat agent's commit
        # carries the answer only)
        assert _committed(actions[-1])["answer"] == json.loads(reference(obs, info))["answer"], i
        assert infos[-1]["qa"]["score"] == row["score"] == 1.0
        scores.append(infos[-1]["qa"]["score"])
        calls += log["calls"]
        if i % 15 == 0:
            _assert_pure_and_stateless(agent, log["turns"], qa_env.tool_specs())
    assert sum(scores) == len(rows) == 150 and max(calls) == 4


def test_qa_agent_tool_error_commits_no_answer(qa_env):
    serve = lambda name, _: json.dumps({"error": "calculator offline"}) if name == "calculate" else None  # noqa: E731
    infos, actions, _ = _drive(qa_env, ScriptedQAChatAgent(), options={"index": 70}, serve=serve)
    got = json.loads(actions[-1]["arguments"])
    assert got["answer"] is None and "calculator offline" in got["reasoning"]
    assert infos[-1]["qa"]["score"] == 0.0


def test_qa_agent_without_task_lines_commits_no_answer(qa_env):
    prompt, _ = qa_env.reset(options={"index": 0})
    prompt = "\n".join(line for line in prompt.split("\n") if not line.startswith("Inputs: "))
    reply = ScriptedQAChatAgent().reply([{"role": "user", "content": prompt}], qa_env.tool_specs())
    assert [c.name for c in reply.tool_calls] == ["commit_action"]
    assert json.loads(reply.tool_calls[0].arguments)["answer"] is None


def test_qa_print_episode_is_the_run_text():
    env = gym.make("FinQA-v0", split="eval")
    obs, info = env.reset(seed=0, options={"index": 100})
    action = "Answer: 12"
    _, reward, _, _, final = env.step(action)
    result = {"env": "FinQA-v0", "policy": "p", "obs": obs, "info": info, "action": action, "reward": reward,
              "final": final}
    qa = final["qa"]
    assert "\n".join(print_qa_episode(env, result)) == "\n".join([
        obs, "", f"FinQA-v0 {info['task_id']} policy=p: score {reward:.3f}" + (f" ({qa['reason']})" if qa["reason"] else ""),
        f"  answer: {action}",
        *(f"  {p['name']}: {'ok' if p['correct'] else 'wrong'}, expected {p['expected']}, read {p['read']}"
          + (f" ({p['reason']})" if p["reason"] else "") for p in qa["parts"]),
        "  solution: " + "; ".join(qa["solution"])])


# ====================================================================== FinReport-v0
def test_report_agent_writes_the_template_writers_reports():
    base = gym.make("FinReport-v0", symbol="AAPL", split="eval", action_mode="report")
    writer = TemplateReportWriter(base)
    obs, info = base.reset(seed=0)
    reports, reference = [], []
    while True:
        reports.append(writer(obs, info))
        obs, _, terminated, truncated, info = base.step(reports[-1])
        reference.append(info)
        if terminated or truncated:
            break
    env = gym.make("FinReport-text-v0", symbol="AAPL", split="eval")
    agent = ScriptedReportAgent()
    infos, actions, log = _drive(env, agent, budget=8)
    assert len(actions) == 13 and actions == reports
    assert [i["quality"]["score"] for i in infos] == [i["quality"]["score"] for i in reference]
    assert [i["rating"] for i in infos] == [i["rating"] for i in reference]
    assert infos[-1]["quality_summary"] == reference[-1]["quality_summary"]
    assert log["calls"] == [5] * 13  # the five calls of REPORT_CALLS, in one turn
    _assert_pure_and_stateless(agent, log["turns"][:4], env.tool_specs())


def test_report_agent_states_every_level_under_a_small_cap_and_budget():
    """Under a 3,000-character cap and a budget of five tool calls the week's and the 52-week levels and the 50-day
    SMA still come whole (the metrics tool's ``levels``), and every report scores 10."""
    env = gym.make("FinReport-text-v0", symbol="AAPL", split="eval", tool_max_chars=3_000)
    infos, actions, log = _drive(env, ScriptedReportAgent(), budget=5)
    assert len(actions) == 13 and log["calls"] == [5] * 13
    for report, info in zip(actions, infos, strict=True):
        assert all(part in report for part in ("(high ", "(low ", "(SMA ", "week high ", "week low "))
        failed = [c["check"] for c in info["quality"]["checks"] if not c["passed"]]
        assert info["quality"]["score"] == 10.0, failed


def test_report_agent_tool_error_reports_hold():
    env = gym.make("FinReport-text-v0", symbol="AAPL", split="eval")
    serve = lambda name, _: json.dumps({"error": "no metrics"}) if name == "get_weekly_metrics" else None  # noqa: E731
    infos, actions, _ = _drive(env, ScriptedReportAgent(), serve=serve)
    assert "get_weekly_metrics failed: no metrics" in actions[0] and "Rating: HOLD" in actions[0]
    assert {i["rating"] for i in infos} == {"HOLD"} and all(i["invalid_action"] is None for i in infos)
