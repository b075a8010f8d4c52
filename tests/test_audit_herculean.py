"""FinAudit-v0 under HERCULEAN's grading, and HERCULEAN's audit files (task files, answer files) on every path.

The fixture files in ``tests/fixtures/herculean/`` are written by hand in HERCULEAN/FinAuditing's formats: an audit
task file (CSV: id, query, filing_name, ticker, issue_time, usgaap_concept, period, gt_answer) and a predictions
file (JSON Lines: id, prediction). The expected classes below were worked out by hand from the filings' facts.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import finenvs  # noqa: F401  (registers FinAudit-v0)
from finenvs.cli import main
from finenvs.errors import DataError
from finenvs.scoring.audit import HERCULEAN_KEYS, AuditTruth, answer_problem, classify
from finenvs.tasks import Selection, task_of
from finenvs.tasks.audit.answers import grade_answers, read_answers, write_answers
from finenvs.tasks.audit.baselines import (
    ExtractOnly,
    OracleAuditor,
    RandomAuditor,
    ScriptedAuditAgent,
    run_audit,
    summarise,
)
from finenvs.tasks.audit.env import AUDIT_PROTOCOL, AUDIT_PROTOCOLS, FinAuditEnv, answer_format
from finenvs.tools import ToolBox
from finenvs.xbrl.tasks import ANSWER_FORMAT

FIXTURES = Path(__file__).parent / "fixtures" / "herculean"
TASKS = FIXTURES / "audit_tasks.csv"
ANSWERS = FIXTURES / "audit_answers.jsonl"
#: The answerable tasks of audit_tasks.csv, in file order (a5 has no bundle: zzzz).
ANSWERABLE = ["a1", "a2", "a3", "a4", "a6", "a7", "a8"]
#: audit_answers.jsonl graded by hand. finenvs: extracted_value is read as reported_value, an extra key is ignored,
#: 6.164 is within half a cent of 6.16 (EPS, decimals=2) and 52,977,400,000 within 500,000 of 52,977,000,000
#: (decimals=-6). HERCULEAN: reported_value (a2) and the extra reasoning key (a4) are structural, and 6.164 (a3) and
#: 52,977,400,000 (a6) are not exact. a7 answers in thousands (290,437,000 for 290,437,000,000): extraction both
#: ways. a8 has no answer line: the empty reply, structural both ways.
BY_HAND = {
    "finenvs": {"a1": "pass", "a2": "pass", "a3": "pass", "a4": "pass", "a6": "pass", "a7": "extraction",
                "a8": "structural"},
    "herculean": {"a1": "pass", "a2": "structural", "a3": "calculation", "a4": "structural", "a6": "calculation",
                  "a7": "extraction", "a8": "structural"},
}
#: The rates those labels give over the 7 answerable tasks.
RATES_BY_HAND = {"finenvs": {"ACC": 5 / 7, "SER": 1 / 7, "EER": 1 / 7, "CER": 0.0},
                 "herculean": {"ACC": 1 / 7, "SER": 3 / 7, "EER": 1 / 7, "CER": 2 / 7}}

TRUTH = AuditTruth(-1_284_000.0, 1_284_000.0, 500.0, 500.0)  # decimals=-3


@pytest.fixture(scope="module")
def herculean_env():
    return gym.make("FinAudit-v0", grading="herculean")


# ====================================================================== 1. the grading
HERCULEAN_CASES = [
    # (answer, herculean class, finenvs class)
    ('{"extracted_value": -1284000, "calculated_value": 1284000}', "pass", "pass"),
    ('{"extracted_value": "-1,284,000", "calculated_value": "1,284,000"}', "pass", "pass"),
    ('{"extracted_value": "-1.284 million", "calculated_value": "1.284 million"}', "pass", "pass"),
    ('```json\n{"extracted_value": -1284000, "calculated_value": 1284000}\n```', "pass", "pass"),
    ({"extracted_value": -1284000, "calculated_value": 1284000}, "pass", "pass"),
    # finenvs' canonical key: structural under HERCULEAN's grading
    ('{"reported_value": -1284000, "calculated_value": 1284000}', "structural", "pass"),
    # an extra key: structural under HERCULEAN's grading, ignored by finenvs'
    ('{"extracted_value": -1284000, "calculated_value": 1284000, "reasoning": "sum"}', "structural", "pass"),
    ('{"extracted_value": -1284000, "calculated_value": 1284000, "unit": "USD"}', "structural", "pass"),
    # keys as spelled: another case is another key
    ('{"Extracted_Value": -1284000, "calculated_value": 1284000}', "structural", "pass"),
    ('{"extracted_value": -1284000}', "structural", "structural"),
    ("-1284000 and 1284000", "structural", "structural"),
    # within half a unit (500) but not exact: finenvs passes, HERCULEAN does not
    ('{"extracted_value": -1284000, "calculated_value": 1284400}', "calculation", "pass"),
    ('{"extracted_value": -1284300, "calculated_value": 1284000}', "extraction", "pass"),
    ('{"extracted_value": -1284000, "calculated_value": 1285000}', "calculation", "calculation"),
    ('{"extracted_value": 1284000, "calculated_value": 1284000}', "extraction", "extraction"),
    # a value that is not a number: HERCULEAN's structure check passes (the keys are right), the value is wrong
    ('{"extracted_value": "about a million", "calculated_value": 1284000}', "extraction", "structural"),
    ('{"extracted_value": -1284000, "calculated_value": null}', "calculation", "structural"),
    ('{"extracted_value": NaN, "calculated_value": 1284000}', "extraction", "structural"),
]


@pytest.mark.parametrize(("answer", "herculean", "default"), HERCULEAN_CASES)
def test_herculean_grading_by_case(answer, herculean, default):
    assert classify(answer, TRUTH, "herculean").label == herculean
    assert classify(answer, TRUTH).label == default == classify(answer, TRUTH, "finenvs").label


def test_herculean_reasons_name_the_keys_and_stay_short():
    reason = classify('{"reported_value": 1, "calculated_value": 2}', TRUTH, "herculean").reason
    assert "'extracted_value'" in reason and "'reported_value'" in reason
    many = json.dumps({"extracted_value": 1, "calculated_value": 1, **{f"k{i}" * 40: i for i in range(1000)}})
    reason = classify(many, TRUTH, "herculean").reason
    assert len(reason) < 500 and "..." in reason
    assert answer_problem('{"extracted_value": "x", "calculated_value": 1}', "herculean") is None
    assert answer_problem('{"extracted_value": "x", "calculated_value": 1}') is not None


def test_exact_allows_only_float_noise():
    truth = AuditTruth(0.3, 0.1 + 0.2, 0.005, 0.005)  # 0.30000000000000004
    assert classify({"extracted_value": 0.3, "calculated_value": 0.3}, truth, "herculean").passed
    assert classify({"extracted_value": 0.3, "calculated_value": 0.3001}, truth, "herculean").label == "calculation"
    assert classify({"extracted_value": 0.3, "calculated_value": 0.3001}, truth).passed
    big = AuditTruth(2_183_759_000.0, -1_150_809_983_000.0, 500.0, 500.0)  # decimals=-3, over a trillion
    near = {"extracted_value": 2_183_759_000, "calculated_value": -1_150_809_982_750}  # 250 off: half the allowance
    assert classify(near, big).passed and classify(near, big, "herculean").label == "calculation"
    spelled = {"extracted_value": "2.183759 billion", "calculated_value": "-1.150809983 trillion"}
    assert classify(spelled, big, "herculean").passed


@pytest.mark.parametrize("grading", ["HERCULEAN", "strict", None, ["herculean"]])
def test_unknown_grading_is_refused(grading):
    with pytest.raises(ValueError, match="grading"):
        classify("{}", TRUTH, grading)
    with pytest.raises(ValueError, match="grading"):
        FinAuditEnv(grading=grading)


# ====================================================================== 2. what the agent is told
def test_default_prompt_and_schema_are_unchanged():
    assert answer_format() == ANSWER_FORMAT and AUDIT_PROTOCOLS["finenvs"] == AUDIT_PROTOCOL
    schema = AUDIT_PROTOCOL.commit_schema()
    assert schema["required"] == ["reported_value", "calculated_value"] and "reasoning" in schema["properties"]


def test_herculean_prompt_and_commit_schema_name_its_keys(herculean_env):
    obs, _ = herculean_env.reset(options={"index": 0})
    assert '{"extracted_value": <number>, "calculated_value": <number>}' in obs and "reported_value" not in obs
    protocol = herculean_env.unwrapped.text_protocol
    assert protocol.grading == "herculean" and protocol.answer_keys == HERCULEAN_KEYS
    schema = protocol.commit_schema()
    assert schema["required"] == list(HERCULEAN_KEYS) and set(schema["properties"]) == set(HERCULEAN_KEYS)
    assert schema["additionalProperties"] is False
    text = gym.make("FinAudit-text-v0", grading="herculean")
    text.reset(options={"index": 0})
    prompt = text.get_wrapper_attr("prompt")()
    assert "extracted_value" in prompt and "exactly" in prompt and "reported_value" not in prompt
    for text_prompt in (prompt, _text_prompt("finenvs")):  # the answer format is said once, in the answer section
        assert "Answer format:" not in text_prompt and text_prompt.count("e.g. USD, not millions") == 1
    commit = next(t for t in text.get_wrapper_attr("tool_specs")() if t["function"]["name"] == "commit_action")
    assert commit["function"]["parameters"]["required"] == list(HERCULEAN_KEYS)


def _text_prompt(grading: str) -> str:
    text = gym.make("FinAudit-text-v0", grading=grading)
    text.reset(options={"index": 0})
    return text.get_wrapper_attr("prompt")()


def test_herculean_commit_is_the_whole_answer(herculean_env):
    protocol = herculean_env.unwrapped.text_protocol
    tools = ToolBox(herculean_env)
    herculean_env.reset(options={"index": 0})
    truth = herculean_env.unwrapped.truth.truth
    answer = {"extracted_value": truth.reported_value, "calculated_value": truth.calculated_value}
    assert tools.call("commit_action", answer).ok
    parsed = protocol.parse_commit(answer)
    assert herculean_env.step(parsed.action)[4]["audit"]["label"] == "pass"
    herculean_env.reset(options={"index": 0})
    result = tools.call("commit_action", {**answer, "reasoning": "checked"})  # not in its schema: an extra key
    assert not result.ok and "unexpected key(s) ['reasoning']" in result.error
    parsed = protocol.parse_commit({**answer, "reasoning": "checked"})
    assert herculean_env.step(parsed.action)[4]["audit"]["label"] == "structural"
    default = AUDIT_PROTOCOL.parse_commit({"reported_value": 1, "calculated_value": 2, "reasoning": "checked"})
    assert default.invalid is None and default.reasoning == "checked"


# ====================================================================== 3. baselines and the scripted agent
def test_baselines_answer_with_the_grading_keys(herculean_env):
    env = herculean_env
    indices = list(range(10))  # two of each injected kind
    assert summarise(run_audit(env, OracleAuditor.from_env(env), indices))["ACC"] == 1.0
    extract = summarise(run_audit(env, ExtractOnly.from_env(env), indices))
    assert extract["SER"] == 0.0 and extract["ACC"] == pytest.approx(0.2)
    obs, info = env.reset(options={"index": 0})
    policy = RandomAuditor.from_env(env, 0)
    replies = [json.loads(r) for r in (policy(obs, info) for _ in range(40)) if r.startswith('{"extracted')]
    assert replies and all(list(r) == list(HERCULEAN_KEYS) for r in replies)
    # finenvs' canonical answers (an oracle told finenvs' keys) are all structural errors under HERCULEAN's grading
    default_oracle = OracleAuditor.from_env(gym.make("FinAudit-v0"))
    default_oracle.tools = ToolBox(env, max_chars=200_000)
    assert summarise(run_audit(env, default_oracle, indices))["SER"] == 1.0


def test_scripted_agent_reads_the_keys_from_the_commit_schema():
    agent = ScriptedAuditAgent()
    herculean = {"type": "function", "function": {"name": "commit_action", "parameters":
                                                  AUDIT_PROTOCOLS["herculean"].commit_schema()}}
    messages = [{"role": "system", "content": ""}, {"role": "user", "content": "## Now\nTask: x\n"}]
    reply = agent.reply(messages, [herculean, *({"type": "function", "function": {"name": n}} for n in
                                                ("get_facts", "get_calculation", "get_concept"))])
    arguments = json.loads(reply.tool_calls[0].arguments)
    assert list(arguments) == list(HERCULEAN_KEYS)  # no reasoning: its schema offers none
    default = {"type": "function", "function": {"name": "commit_action", "parameters": AUDIT_PROTOCOL.commit_schema()}}
    reply = agent.reply(messages, [default, *({"type": "function", "function": {"name": n}} for n in
                                              ("get_facts", "get_calculation", "get_concept"))])
    assert list(json.loads(reply.tool_calls[0].arguments)) == ["reported_value", "calculated_value", "reasoning"]


# ====================================================================== 4. answer files: the round trip
@pytest.mark.parametrize("grading", ["finenvs", "herculean"])
def test_hand_written_answers_file_graded_both_ways(grading):
    result = grade_answers(TASKS, ANSWERS, grading=grading)
    assert {r["id"]: r["label"] for r in result["rows"]} == BY_HAND[grading]
    assert result["n"] == 7
    for key, value in RATES_BY_HAND[grading].items():
        assert result[key] == pytest.approx(value), key
    assert [e["id"] for e in result["excluded"]] == ["a5"] and "zzzz" in result["excluded"][0]["reason"]
    assert result["unanswered"] == ["a8"] and result["unknown"] == ["zz"] and result["gt_answer_differs"] == []


def test_a_gt_answer_that_is_not_finenvs_truth_is_listed(tmp_path):
    rows = TASKS.read_text(encoding="utf-8").splitlines()
    header, a1 = rows[0], rows[1].replace("'calculated_value': '352,583,000,000'", "'calculated_value': '352,583,400,000'")
    (tmp_path / "tasks.csv").write_text(f"{header}\n{a1}\n", encoding="utf-8")
    result = grade_answers(tmp_path / "tasks.csv", {"a1": {"extracted_value": 352_583_000_000,
                                                          "calculated_value": 352_583_000_000}}, grading="herculean")
    assert result["gt_answer_differs"] == ["a1"] and result["ACC"] == 1.0  # graded against finenvs' truth


def test_a_run_written_as_an_answers_file_grades_as_the_run(tmp_path):
    for grading in ("finenvs", "herculean"):
        env = gym.make("FinAudit-v0", split="file", tasks_file=str(TASKS), grading=grading)
        replies, labels = {}, {}
        for i, policy in enumerate([ExtractOnly.from_env(env), OracleAuditor.from_env(env)] * 4):
            if i >= len(env.unwrapped.instances):
                break
            obs, info = env.reset(options={"index": i})
            replies[info["task_id"]] = policy(obs, info)
            labels[info["task_id"]] = env.step(replies[info["task_id"]])[4]["audit"]["label"]
        path = write_answers(replies, tmp_path / f"{grading}.jsonl")
        assert read_answers(path) == replies
        assert {r["id"]: r["label"] for r in grade_answers(TASKS, path, grading=grading)["rows"]} == labels
        assert set(labels.values()) == {"pass"}  # no injection in a task file: extract-only passes too
        other = "finenvs" if grading == "herculean" else "herculean"
        crossed = grade_answers(TASKS, path, grading=other)
        # finenvs reads HERCULEAN's keys; HERCULEAN's grading refuses finenvs' key
        assert crossed["ACC"] == (1.0 if other == "finenvs" else 0.0)
    with pytest.raises(FileExistsError):
        write_answers({}, path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"id": "a1", "prediction": "x"}\nnot json\n', ":2: not a JSON object"),
        ('["a1", "x"]\n', ":1: a JSON list"),
        ('{"id": "a1"}\n', ":1: missing key"),
        ('{"id": "a1", "prediction": "x"}\n{"id": "a1", "prediction": "y"}\n', ":2: id 'a1' is given twice"),
        ('{"id": "' + "x" * 5000 + '", "prediction": "x"}\n', ":1: id"),
        ('{"id": null, "prediction": "x"}\n', ":1: id None"),
    ],
)
def test_bad_answers_files_are_refused_naming_the_line(tmp_path, content, match):
    path = tmp_path / "answers.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=match) as info:
        read_answers(path)
    assert len(str(info.value)) < 400
    with pytest.raises(FileNotFoundError):
        read_answers(tmp_path / "none.jsonl")


# ====================================================================== 5. task files on every path
def test_plan_of_a_task_file(tmp_path):
    task = task_of("FinAudit-v0")
    episodes = task.plan(Selection(split="file", env_kwargs={"tasks_file": str(TASKS)}))
    assert [e.options for e in episodes] == [{"index": i} for i in range(7)]
    assert all(e.env_kwargs["split"] == "file" and Path(e.env_kwargs["tasks_file"]).is_absolute() for e in episodes)
    # a task file replaces the eval instances (the bench's split names dates)
    assert len(task.plan(Selection(split="eval", env_kwargs={"tasks_file": str(TASKS)}))) == 7
    assert len(task.plan(Selection(split="eval"))) == 100
    with pytest.raises(ValueError, match="tasks_file"):
        task.plan(Selection(split="file"))
    with pytest.raises(ValueError, match="train"):
        task.plan(Selection(split="train", env_kwargs={"tasks_file": str(TASKS)}))


def test_llm_runs_a_task_file_under_herculean_grading(tmp_path, capsys, monkeypatch):
    from finenvs.evaluation.score import score_run

    monkeypatch.chdir(TASKS.parent)  # a relative path is recorded absolute
    kwargs = json.dumps({"tasks_file": TASKS.name, "grading": "herculean"})
    assert main(["llm", "--env", "FinAudit-v0", "--split", "file", "--env-kwargs", kwargs, "--out", str(tmp_path),
                 "--name", "run", "--quiet"]) == 0
    run = tmp_path / "run"
    meta = json.loads((run / "run.json").read_text())
    assert {e["env_kwargs"]["grading"] for e in meta["episodes"]} == {"herculean"}
    assert {e["env_kwargs"]["tasks_file"] for e in meta["episodes"]} == {str(TASKS)}
    steps = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    steps = [s for s in steps if s.get("type") == "step"]
    assert len(steps) == 7 and all(s["reward"] == 1.0 and s["look_ahead"] == 0 for s in steps)
    assert all(list(json.loads(s["env_action"])) == list(HERCULEAN_KEYS) for s in steps)  # the agent complied
    assert {s["symbol"]: s["date"] for s in steps}["a4"] == "2024-01-26"  # the audit date: NFLX's release date
    monkeypatch.chdir(tmp_path)
    score = score_run(run, write=False)
    assert score.status == "reproduced"
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--split", "file"], "tasks_file"),
        (["--split", "train", "--env-kwargs", json.dumps({"tasks_file": str(TASKS)})], "train"),
        (["--env-kwargs", json.dumps({"grading": "strict"})], "grading"),
        (["--split", "file", "--env-kwargs", json.dumps({"tasks_file": "/nonexistent/tasks.csv"})], "not found"),
    ],
)
def test_llm_task_file_errors_exit_2_in_one_line(tmp_path, capsys, argv, match):
    assert main(["llm", "--env", "FinAudit-v0", *argv, "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("finenvs: error:")]
    assert len(errors) == 1 and match in errors[0] and "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_task_file_keeps_the_date_lock():
    env = gym.make("FinAudit-v0", split="file", tasks_file=str(TASKS), grading="herculean")
    tools = ToolBox(env)
    _, info = env.reset(options={"index": 0})  # a1: AAPL 10-K FY2023, released 2023-11-03
    assert info["as_of"] == "2023-11-03"
    listed = {f["bundle"] for f in tools.call("resolve_filing").data["filings"]}
    assert "aapl_10k_2023-09-30" in listed and "nflx_10k_2023-12-31" not in listed
    result = tools.call("get_facts", {"concept": "us-gaap:Assets", "bundle": "nflx_10k_2023-12-31"})
    assert not result.ok and result.look_ahead == 1
    assert env.step('{"extracted_value": 1, "calculated_value": 1}')[4]["look_ahead_attempts"] == 1


def test_bench_plays_a_task_file_under_herculean_grading(tmp_path, capsys):
    kwargs = json.dumps({"tasks_file": str(TASKS), "grading": "herculean"})
    assert main(["bench", "--envs", "FinAudit-v0", "--env-kwargs", kwargs, "--no-plots", "--no-html", "--quiet",
                 "--out", str(tmp_path), "--name", "b"]) == 0
    card = json.loads((tmp_path / "b" / "scorecard.json").read_text())
    section = card["sections"]["audit"]
    assert section["n"] == 7 and section["grading"] == "herculean" and section["tasks_file"] == str(TASKS)
    assert [e["id"] for e in section["excluded"]] == ["a5"]
    assert section["policies"]["oracle"]["ACC"] == 1.0 and section["policies"]["extract_only"]["ACC"] == 1.0
    assert card["config"]["env_kwargs"] == {"tasks_file": str(TASKS), "grading": "herculean"}
    agent = next(r for r in card["agents"] if r["env"] == "FinAudit-v0")
    assert len(agent["episodes"]) == 7
    md = (tmp_path / "b" / "scorecard.md").read_text()
    assert "7 answerable tasks of the HERCULEAN-format task file" in md and "Graded by HERCULEAN's rules" in md
    capsys.readouterr()


def test_bench_refuses_env_arguments_a_family_does_not_take(tmp_path, capsys):
    assert main(["bench", "--env-kwargs", json.dumps({"grading": "herculean"}), "--quiet", "--out",
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "takes no argument 'grading'" in err and "--envs" in err and not any(tmp_path.iterdir())


def test_mcp_serves_a_task_file_under_herculean_grading(tmp_path):
    """An external agent over MCP gets the file's task, HERCULEAN's commit schema, and is graded by its rules."""
    import asyncio

    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.llm import drive_mcp_episode
    from finenvs.evaluation.mcp_server import McpEpisode, build_server

    spec = task_of("FinAudit-v0").plan(Selection(split="file", instances=(3,), env_kwargs={
        "tasks_file": str(TASKS), "grading": "herculean"}))[0]
    episode = McpEpisode(spec, out=tmp_path, name="mcp")
    try:
        async def go():
            async with Client(build_server(episode)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                replies = await drive_mcp_episode(ScriptedAuditAgent(), client, AUDIT_PROTOCOLS["herculean"])
                return tools, replies

        tools, replies = asyncio.run(go())
    finally:
        episode.close()
    assert tools["commit_action"].input_schema["required"] == list(HERCULEAN_KEYS)
    assert replies[-1]["done"] and replies[-1]["reproduced_offline"] is True
    score = json.loads((tmp_path / "mcp" / "score.json").read_text())
    assert score["episodes"][0]["metrics"]["label"] == "a4" and score["episodes"][0]["metrics"]["verdict"] == "pass"


def test_harness_plays_a_task_file_under_herculean_grading(tmp_path):
    """An agent program per decision (the test command plays the scripted agent over the harness's MCP server)."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    import sys

    from finenvs.evaluation.confine import probe_bwrap
    from finenvs.evaluation.harness import HarnessAgent, run_harness
    from finenvs.evaluation.llm import RunConfig
    from finenvs.evaluation.score import score_run

    unconfined = probe_bwrap()[0] is None
    command = f"{sys.executable} {Path(__file__).parent / 'harness_agent.py'} {{prompt_file}} {{mcp_config}}"
    config = RunConfig(env_id="FinAudit-v0", split="file", instances=(0,),
                       env_kwargs={"tasks_file": str(TASKS), "grading": "herculean"})
    summary = run_harness(config, HarnessAgent(command, timeout=120, unconfined=unconfined), out=tmp_path, name="h",
                          progress=False)
    steps = [json.loads(line) for line in (summary.run_dir / "trajectories.jsonl").read_text().splitlines()]
    steps = [s for s in steps if s.get("type") == "step"]
    assert len(steps) == 1 and steps[0]["reward"] == 1.0 and steps[0]["symbol"] == "a1"
    assert list(json.loads(steps[0]["env_action"])) == list(HERCULEAN_KEYS)
    assert score_run(summary.run_dir).status == "reproduced"
