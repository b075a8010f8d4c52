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


# ---------------------------------------------------------------------------- the papers' named tasks
def _metrics(log):
    return {k: v.value for k, v in log.results.scores[0].metrics.items()}


def _llm_metrics(config, keys, tmp_path):
    spec = fi._spec(config.task.family)
    summary = run_llm(config, spec.make_scripted_agent(), out=tmp_path / "runs", progress=False)
    assert summary.status == "complete"
    run = spec.metrics_of_run([r["metrics"] for r in summary.episode_records()])
    return {k: run[k] for k in keys if isinstance(run.get(k), float) and math.isfinite(run[k])}


def test_paper_tasks_read_their_parameters_from_the_specs():
    """One named task per HERCULEAN workflow and per FAB++ section, each parameter the family spec's."""
    herculean = [t for t in tasks() if t.bench.herculean]
    sections = [(t, s) for t in tasks() for s in t.bench.fabpp_sections]
    assert len(herculean) == 4 and {s for _, s in sections} == {"knowledge", "analysis", "options"}
    assert set(fi.PAPER_TASKS) == ({f"herculean_{t.bench.published_block}" for t in herculean}
                                   | {f"fabpp_{s}" for _, s in sections})
    assert set(fi.PAPER_TASKS) <= set(fi.TASKS)
    for spec in herculean:
        paper = fi.PAPER_TASKS[f"herculean_{spec.bench.published_block}"]
        assert paper.family == spec.family and paper.part == spec.bench.herculean
        assert paper.symbols == (tuple(spec.bench.herculean_labels) or None)
        assert paper.env_kwargs == dict(spec.bench.herculean_env_kwargs)
        assert paper.failure_rule == "herculean" and paper.splits == ("eval",)
        assert paper.columns == tuple(spec.bench.herculean_columns or spec.columns)
    for spec, section in sections:
        paper = fi.PAPER_TASKS[f"fabpp_{section}"]
        assert paper.env_kwargs == {**spec.bench.gradings.get("fabpp", {}), **spec.bench.fabpp_env_kwargs.get(section, {})}
        assert paper.debate == (spec.debate is not None) and paper.splits[0] == "eval"
    assert fi.PAPER_TASKS["herculean_auditing"].env_kwargs == {"grading": "herculean"}
    assert fi.PAPER_TASKS["fabpp_analysis"].env_kwargs == {"analysis_score": "fabpp", "section": "analysis"}
    # FAB++'s Knowledge section pools the eval questions and the public ones; Analysis has none of the public ones
    assert fi.PAPER_TASKS["fabpp_knowledge"].splits == ("eval", "fab_public")
    assert fi.PAPER_TASKS["fabpp_analysis"].splits == ("eval",)


def test_paper_task_datasets_windows_and_limits():
    trading = fi.TASKS["herculean_trading"]()
    assert [EpisodeSpec.from_dict(s.metadata["episode"]).env_kwargs["symbol"] for s in trading.dataset] == \
        ["MSFT", "TSLA", "AAPL", "NVDA"]
    assert trading.metadata["windows"] == {"eval": ["2026-01-02", "2026-03-31"]}
    assert trading.metadata["failure_rule"] == "herculean" and trading.metadata["max_tool_calls"] == 8
    assert fi.TASKS["herculean_trading"](split="live").metadata["windows"] == {"live": ["2026-04-01", "2026-05-01"]}
    audit = fi.TASKS["herculean_auditing"](limit=3)
    assert audit.metadata["max_tool_calls"] == fi._spec("audit").max_tool_calls
    assert all(s.metadata["episode"]["env_kwargs"]["grading"] == "herculean" for s in audit.dataset)
    knowledge = fi.TASKS["fabpp_knowledge"]()
    ids = [s.id for s in knowledge.dataset]
    assert len(ids) == 60 + 50 and ids[0] == "eval-0" and ids[-1] == "fab_public-49"
    assert all(s.metadata["episode"]["env_kwargs"]["section"] == "knowledge" for s in knowledge.dataset)
    assert len(fi.TASKS["fabpp_analysis"]().dataset) == 90
    assert [s.id for s in fi.TASKS["fabpp_knowledge"](split="fab_public", limit=2).dataset] == [0, 1]


def test_section_plan_asks_the_same_questions():
    """FinQA-v0's plan narrowed to a section numbers that section's questions: the same questions as the full plan."""
    import gymnasium as gym

    spec = fi._spec("qa")
    full = gym.make(spec.env_id)
    for section, offset in (("knowledge", 0), ("analysis", 60)):
        [last] = spec.plan(fi.Selection(env_kwargs={"section": section}, instances=(5,)))
        narrowed = gym.make(spec.env_id, **last.env_kwargs)
        asked = narrowed.reset(seed=0, options=last.options)[1]
        assert asked["section"] == section
        assert asked["task_id"] == full.reset(seed=0, options={"index": offset + 5})[1]["task_id"]
    with pytest.raises(ValueError, match="fab_public"):
        spec.plan(fi.Selection(split="fab_public", env_kwargs={"section": "analysis"}))


@pytest.mark.parametrize("name, debate", [("fabpp_analysis", True), ("fabpp_options", True), ("herculean_auditing", False)])
def test_paper_task_scores_equal_finenvs_llm(name, debate, tmp_path):
    """The named task (with FAB++'s debate round where the family has one) reports what finenvs llm reports for the
    same episodes and rules (the debate's verdict is finenvs.text.debate's, through the env, on both paths)."""
    paper = fi.PAPER_TASKS[name]
    spec = fi._spec(paper.family)
    log = _eval(fi.TASKS[name](limit=2, debate=debate), fi.scripted_outputs(paper.family), tmp_path)
    assert log.status == "success", log.error
    kwargs = {**paper.env_kwargs, **({"debate": True} if debate else {})}
    keys = fi.metric_keys(spec, paper.columns)
    want = _llm_metrics(RunConfig(env_id=spec.env_id, limit=2, env_kwargs=kwargs, failure_rule=paper.failure_rule),
                        keys, tmp_path)
    got = _metrics(log)
    assert want and got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-12, abs_tol=1e-12) for k in want)
    if debate:
        assert {"debated_score", "debate_multiplier"} <= got.keys()
        for sample in log.samples:
            record = sample.scores["finenvs_scorer"].metadata["metrics"]["debate"]
            assert record["debate_rule"] == "finenvs" and record["multiplier"] in (0.8, 1.0, 1.2)


def test_herculean_rule_fails_an_episode_after_five_attempts(tmp_path):
    """HERCULEAN's rule: a reply that never holds a decision is asked five times, then the episode fails unscored."""
    asked = []

    def reply(input, tools, tool_choice, config):
        asked.append(1)
        return _offline(ModelOutput.from_content("mockllm", "I would rather not say."))

    log = _eval(fi.TASKS["herculean_auditing"](instances="0"), reply, tmp_path)
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.metadata[fi.EPISODE_KEY]["status"] == "failed" and len(asked) == 5
    assert math.isnan(sample.scores["finenvs_scorer"].value)
    # under the protocol's default the same replies are one invalid decision, scored
    log = _eval(fi.TASKS["herculean_auditing"](instances="0", failure_rule="default"), reply, tmp_path / "default")
    [sample] = log.samples
    assert sample.metadata[fi.EPISODE_KEY]["invalid"] == 1 and isinstance(sample.scores["finenvs_scorer"].value, dict)


def test_task_arguments_are_checked_before_any_work():
    with pytest.raises(ValueError, match="no debate round"):
        fi.TASKS["herculean_trading"](debate=True)
    with pytest.raises(ValueError, match="no date window"):
        fi.TASKS["fabpp_analysis"](live=True)
    with pytest.raises(ValueError, match="JSON object"):
        fi.TASKS["qa"](env_kwargs="{not json")
    with pytest.raises(ValueError, match="true or false"):
        fi.TASKS["fabpp_options"](debate="maybe")
    with pytest.raises(ValueError, match="debate_rule"):
        fi.TASKS["fabpp_options"](debate_rule="reference")  # a rule without the debate
    with pytest.raises(ValueError, match="limit"):
        fi.TASKS["qa"](limit=0)


@pytest.mark.slow
def test_live_regime_waits_at_the_newest_bar(tmp_path):
    """The live regime through Inspect: on a window the data covers the episode finishes and is scored; on an open
    window it plays to the newest bar, records the decision that waits for the next one, and is unscored."""
    log = _eval(fi.TASKS["herculean_trading"](symbols="MSFT", live=True, env_kwargs={"end": "2026-05-01"}),
                fi.scripted_outputs("trading"), tmp_path)
    [sample] = log.samples
    assert log.eval.metadata["windows"] == {"live": ["2026-04-01", "2026-05-01"]}
    assert sample.metadata[fi.EPISODE_KEY]["status"] == "complete"
    assert isinstance(sample.scores["finenvs_scorer"].value, dict)
    log = _eval(fi.TASKS["herculean_trading"](symbols="MSFT", live=True), fi.scripted_outputs("trading"),
                tmp_path / "open")
    [sample] = log.samples
    played = sample.metadata[fi.EPISODE_KEY]
    assert played["status"] == "waiting" and len(played["pending"]) == 1
    assert math.isnan(sample.scores["finenvs_scorer"].value)
    assert "waiting for the bar after" in sample.scores["finenvs_scorer"].explanation


@pytest.mark.slow
def test_inspect_cli_runs_a_paper_task_offline(tmp_path):
    """``inspect eval finenvs/<task> --model finenvs-scripted/<family>``: the entry point, the offline model."""
    import subprocess
    import sys
    from pathlib import Path

    from inspect_ai.log import list_eval_logs, read_eval_log

    inspect = Path(sys.executable).parent / "inspect"
    done = subprocess.run([str(inspect), "eval", "finenvs/fabpp_analysis", "--model", "finenvs-scripted/qa",
                           "-T", "limit=1", "--log-dir", str(tmp_path), "--display", "none"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    [found] = list_eval_logs(str(tmp_path))
    log = read_eval_log(found)
    assert log.status == "success" and log.eval.task.endswith("fabpp_analysis")
    assert _metrics(log)["analysis"] == 100.0
