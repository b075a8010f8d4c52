"""finenvs.inspect: every family as an Inspect task, played offline by Inspect's mock model.

The mock model answers as the family's scripted agent (``custom_outputs``), so the Inspect run and ``finenvs
llm`` with that agent play the same episodes with the same replies and must report the same scores.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ChatMessageTool, ChatMessageUser, ModelOutput, ModelUsage, get_model  # noqa: E402

import finenvs.inspect as fi  # noqa: E402
from finenvs.evaluation.llm import RunConfig, run_llm  # noqa: E402
from finenvs.tasks import EpisodeSpec, tasks  # noqa: E402
from finenvs.tools.registry import COMMIT_TOOL  # noqa: E402

#: Market families play tens of decisions per episode: slow (the default run keeps FinDeltaHedge-v0's many steps).
FAMILIES = [pytest.param(t.family, marks=pytest.mark.slow) if t.bench.market else t.family for t in tasks()]


def _offline(output: ModelOutput) -> ModelOutput:
    """A mock output with its token counts given (otherwise the mock model counts them with a downloaded table)."""
    output.usage = ModelUsage()
    return output


def _eval(task, outputs, tmp_path):
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(tmp_path),
                         display="none")
    return log


@pytest.mark.parametrize("family", FAMILIES)
def test_inspect_score_equals_finenvs_llm(family, tmp_path):
    spec = fi._spec(family)
    log = _eval(fi.TASKS[family](limit=1), fi.scripted_outputs(family), tmp_path)
    assert log.status == "success", log.error
    summary = run_llm(RunConfig(env_id=spec.env_id, limit=1), spec.make_scripted_agent(), out=tmp_path / "runs",
                      progress=False)
    assert summary.status == "complete"
    [record] = summary.episode_records()
    [sample] = log.samples
    # the episode's metrics, as the scorer replayed them, are the run's
    assert sample.scores["finenvs_scorer"].metadata["metrics"] == record["metrics"]
    # and the task's metrics are the family's run metrics of the same episode
    run = spec.metrics_of_run([record["metrics"]])
    want = {c.key: run[c.key] for c in spec.columns if isinstance(run.get(c.key), float) and math.isfinite(run[c.key])}
    got = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert want and got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-12, abs_tol=1e-12) for k in want)
    # the log holds the decisions' conversations (what inspect view shows)
    assert sample.metadata[fi.EPISODE_KEY]["decisions"] == record["steps"] == len(sample.metadata[fi.EPISODE_KEY]["actions"])
    assert any(isinstance(m, ChatMessageUser) for m in sample.messages)


def test_tool_budget_and_date_lock_are_the_envs(tmp_path):
    """Calls beyond the family's budget are dropped with one notice; a look past the date is counted."""
    spec = fi._spec("qa")
    budget = spec.max_tool_calls
    calls = [ModelOutput.for_tool_call("mockllm", "get_prices", {"symbol": "AAPL", "start": "2026-01-02",
                                                                 "end": "2099-12-31"})]
    many = ModelOutput.for_tool_call("mockllm", "calculate", {"expression": "1+1"})
    many.message.tool_calls = [dataclasses.replace(c, id=f"c{i}") for i in range(budget + 3)
                               for c in many.message.tool_calls]
    outputs = [_offline(o) for o in (*calls, many, ModelOutput.from_content("mockllm", "no action here"))]
    log = _eval(fi.TASKS["qa"](instances="0"), outputs, tmp_path)
    assert log.status == "success", log.error
    [sample] = log.samples
    served = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
    assert len(served) == budget  # one get_prices and budget - 1 calculate calls; the rest dropped
    assert any("dropped unanswered" in m.text for m in sample.messages if isinstance(m, ChatMessageUser))
    metrics = sample.scores["finenvs_scorer"].metadata["metrics"]
    assert metrics["look_ahead_attempts"] >= 1
    assert sample.metadata[fi.EPISODE_KEY]["invalid"] == 1  # no action: the protocol's default, scored


def test_hostile_replies_take_the_default(tmp_path):
    """Unparseable tool arguments, an unknown tool and a model error end in the default action, never a crash."""
    bad = ModelOutput.for_tool_call("mockllm", "no_such_tool", {})
    commit = ModelOutput.for_tool_call("mockllm", COMMIT_TOOL, {})
    commit.message.tool_calls[0].parse_error = "x" * 100_000

    def failing(*args):
        raise RuntimeError("provider down")

    outputs = iter([_offline(bad), _offline(commit)])

    def reply(input, tools, tool_choice, config):
        try:
            return next(outputs)
        except StopIteration:
            failing()

    log = _eval(fi.TASKS["options"](limit=2), reply, tmp_path)
    assert log.status == "success", log.error
    statuses = []
    for sample in log.samples:
        played = sample.metadata[fi.EPISODE_KEY]
        statuses.append(played["status"])
        if played["status"] == "failed":  # the model failed on the episode's only decision: failed, never scored
            assert "the endpoint failed on all 1 decision(s)" in played["message"] and "provider down" in played["message"]
            assert math.isnan(sample.scores["finenvs_scorer"].value)
        else:
            assert played["status"] == "complete" and played["invalid"] == 1
            assert isinstance(sample.scores["finenvs_scorer"].value, dict)
    assert sorted(statuses) == ["complete", "failed"]


def test_unplayed_episode_is_unscored():
    spec = fi._spec("qa")
    episode = EpisodeSpec(0, spec.env_id, {}, 0, {"index": 0})
    assert math.isnan(fi.episode_score(spec, episode, None).value)
    assert math.isnan(fi.episode_score(spec, episode, {"status": "aborted", "message": "x"}).value)


def test_message_conversion_keeps_tool_calls():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "calculate", "arguments": '{"expression": "2"}'}},
                    {"id": "b", "type": "function", "function": {"name": "calculate", "arguments": "not json"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "2"}]
    out = fi.inspect_messages(messages)
    assert [m.role for m in out] == ["system", "user", "assistant", "tool"]
    assert [c.arguments for c in out[2].tool_calls] == [{"expression": "2"}, {}]
    assert out[3].function == "calculate"
    back = fi._openai_messages(out)
    assert json.loads(back[2]["tool_calls"][0]["function"]["arguments"]) == {"expression": "2"}


def test_export_run_folder_as_inspect_log(tmp_path):
    """finenvs export --inspect: a run folder as an Inspect log with the run's scores and each decision's turns;
    the Inspect run of the same episodes reports the same metrics."""
    from inspect_ai.log import read_eval_log

    from finenvs.cli import main

    spec = fi._spec("options")
    summary = run_llm(RunConfig(env_id=spec.env_id, limit=2), spec.make_scripted_agent(), out=tmp_path / "runs",
                      name="opt", progress=False)
    out = tmp_path / "opt.eval"
    assert main(["export", "--inspect", str(summary.run_dir), "--out", str(out)]) == 0
    log = read_eval_log(str(out))
    assert log.status == "success" and log.eval.task == "options" and len(log.samples) == 2
    records = {r["episode"]: r for r in summary.episode_records()}
    for sample in log.samples:
        assert sample.scores["finenvs_scorer"].metadata["metrics"] == records[sample.id]["metrics"]
        assert any(isinstance(m, ChatMessageTool) for m in sample.messages)  # the tool results, per decision
        assert sample.metadata["decisions"][0]["tool_calls"]
    exported = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    played = _eval(fi.TASKS["options"](limit=2), fi.scripted_outputs("options"), tmp_path / "logs")
    assert exported == {name: m.value for name, m in played.results.scores[0].metrics.items()}
    assert main(["export", "--inspect", str(tmp_path / "nothing-here")]) != 0
