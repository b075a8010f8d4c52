"""A failed evaluation is a failure: an endpoint that never answers gives no score (n/a, never 0), a non-zero
exit and a line naming the cause, on ``finenvs llm`` and ``finenvs bench`` alike."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from finenvs.cli import main
from finenvs.evaluation.bench import BenchConfig, run_bench

sys.path.insert(0, str(Path(__file__).parent))

DEAD = "http://127.0.0.1:9/v1"  # nothing listens on port 9


@pytest.mark.parametrize("command", [["llm", "--env", "FinQA-v0", "--limit", "3"], ["bench", "--envs", "FinQA-v0"]])
def test_an_unreachable_endpoint_stops_the_command_before_any_work_naming_the_url(tmp_path, capsys, command):
    code = main([*command, "--base-url", DEAD, "--model", "foo", "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2
    assert f"cannot reach {DEAD}" in err and "nothing was run" in err
    assert not (tmp_path / "out").exists()  # no run folder, no scorecard, no score
    assert "0.00" not in out


A2A_DEAD = "http://127.0.0.1:9"


@pytest.mark.parametrize("command", [
    ["llm", "--env", "FinQA-v0", "--limit", "1", "--a2a-url", A2A_DEAD],  # an A2A agent: its card is read first
    ["bench", "--envs", "FinQA-v0", "--no-agents", "--a2a-url", A2A_DEAD],
    ["llm", "--env", "FinQA-v0", "--limit", "1", "--judge-base-url", DEAD, "--judge-model", "j"],  # the judge too
], ids=["llm-a2a", "bench-a2a", "llm-judge"])
def test_every_endpoint_of_a_command_is_checked_before_any_work(tmp_path, capsys, command):
    code = main([*command, "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach http://127.0.0.1:9" in err and "nothing was run" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_check_asks_once_and_any_answer_counts(tmp_path):
    """A server that answers (even 404 on /models, as some do) passes; only no answer or a refused key stops."""
    from chat_server import ChatServer

    from finenvs.evaluation.endpoints import EndpointError, OpenAIChatAgent, check_reachable
    from finenvs.tasks.qa.baselines import ScriptedQAChatAgent

    with ChatServer(ScriptedQAChatAgent()) as server:
        asyncio.run(check_reachable(OpenAIChatAgent("m", server.base_url)))
        asyncio.run(check_reachable(OpenAIChatAgent("m", server.base_url + "/nowhere")))  # 404: it answered
    with pytest.raises(EndpointError, match="cannot reach"):
        asyncio.run(check_reachable(OpenAIChatAgent("m", DEAD)))


def test_bench_with_an_unreachable_endpoint_reports_the_cause_and_gives_the_model_no_score(tmp_path):
    card = run_bench(BenchConfig(envs=["FinQA-v0"], base_url=DEAD, model="foo", out=tmp_path, run_name="dead",
                                 plots=False, html=False, progress=False, agents=False,
                                 instances={"qa": (0,), "qa/fab_public": ()}, endpoint={"timeout": 1.0},
                                 retries=0))  # refused at once: the failure is the point, not the backoff
    assert card.errors and all(e["policy"] == "foo" for e in card.errors)
    assert any(f"cannot reach {DEAD}" in e["error"] and "did not finish" in e["error"] for e in card.errors)
    foo = card.aggregate["profiles"]["foo"]
    assert foo["overall"] is None and all(s["score"] is None for s in foo["sections"].values())
    assert "no task finished" in foo["note"]
    scripted = card.aggregate["profiles"]["reference"]
    assert scripted["overall"] is not None  # the other profiles are scored as usual


def test_weights_missing_a_section_the_run_scores_fail_before_any_work(tmp_path, capsys):
    code = main(["bench", "--weights", "knowledge=0.5,analysis=0.6", "--suite", "fabpp", "--out", str(tmp_path / "o"),
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "no weight to section(s) options" in err
    assert not (tmp_path / "o").exists()  # refused before any work: no folder left behind


# ---------------------------------------------------------------------------- an endpoint that stops answering
class _AnswersFirstDecisions:
    """A chat-completions server (:class:`chat_server.ChatServer`) that answers the first ``answered`` decisions of
    a run and then fails every request with ``fault``: the endpoint answered, then went away mid-run. A request with
    only the system message and the prompt starts a decision (the runner sends no other such request)."""

    def __new__(cls, answered: int, fault: str = "status:400"):
        from chat_server import ChatServer

        class Server(ChatServer):
            decisions = 0

            def respond(self, body, _fault):
                if len(body.get("messages", [])) == 2:
                    Server.decisions += 1
                return super().respond(body, None if Server.decisions <= answered else fault)

        return Server()


def _run_dir(out: Path) -> Path:
    [run_dir] = [p.parent for p in out.glob("*/run.json")]
    return run_dir


@pytest.fixture(scope="module")
def mid_run(tmp_path_factory):
    """``finenvs llm`` over three questions against an endpoint that answers the first, then fails with 5xx (no
    retries): ``(exit code, stdout, stderr, run folder)``."""
    import contextlib
    import io

    out_dir = tmp_path_factory.mktemp("mid")
    out, err = io.StringIO(), io.StringIO()
    with _AnswersFirstDecisions(1, "status:500") as server, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(["llm", "--env", "FinQA-v0", "--limit", "3", "--concurrency", "1", "--retries", "0",
                     "--base-url", server.base_url, "--model", "foo", "--out", str(out_dir)])  # not --quiet: the score report is read
    return code, out.getvalue(), err.getvalue(), _run_dir(out_dir)


def test_an_episode_whose_every_decision_failed_is_failed_not_scored(mid_run):
    """The endpoint answered the first question, then failed: the next two are failed (no metrics, never the
    default answer's 0), the run exits 1 with a last line that says so, and finenvs score re-derives it."""
    import json

    from finenvs.evaluation.score import score_run, terminal_report

    code, out, err, run_dir = mid_run
    assert code == 1
    assert out.strip().splitlines()[-1].startswith("run failed: 2 of 3 episode(s) got no reply from the endpoint")
    assert err.count("failed (the endpoint failed on all 1 decision(s)") == 2
    assert "no score, 2 of 3 episode(s) failed" in out
    records = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    finals = {r["episode"]: r for r in records if r["type"] == "episode"}
    assert finals[0]["status"] == "complete" and "endpoint_failed_decisions" not in finals[0]
    for k in (1, 2):
        assert finals[k]["status"] == "failed" and finals[k]["metrics"] is None
        assert finals[k]["endpoint_failed_decisions"] == 1
    steps = {r["episode"]: r for r in records if r["type"] == "step"}
    assert "endpoint_failed" not in steps[0] and steps[1]["endpoint_failed"] is True
    score = score_run(run_dir, write=False)
    assert score.status == "reproduced" and score.reproduced
    assert [e.endpoint_failed for e in score.episodes] == [False, True, True]
    assert score.run_metrics() is None and score.complete_metrics() is not None  # no score for the run
    assert score.to_json()["endpoint_failed_episodes"] == 2 and score.to_json()["metrics"] is None
    assert "FAILED: 2 of 3 episode(s) got no reply from the endpoint" in terminal_report(score)


def test_score_re_derives_the_failure_from_the_step_lines(mid_run):
    """A record that calls an unanswered episode complete (or an answered one failed) does not reproduce."""
    import json

    from finenvs.evaluation.score import _score_episode
    from finenvs.tasks import EpisodeSpec

    run_dir = mid_run[3]
    records = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    spec = [EpisodeSpec.from_dict(e) for e in json.loads((run_dir / "run.json").read_text())["episodes"]]
    steps = {k: [r for r in records if r["type"] == "step" and r["episode"] == k] for k in (0, 1)}
    finals = {r["episode"]: r for r in records if r["type"] == "episode"}
    envs: dict = {}
    assert _score_episode(spec[1], steps[1], finals[1], envs).endpoint_failed
    called_complete = {**finals[1], "status": "complete"}
    assert any("got no reply from the endpoint" in m
               for m in _score_episode(spec[1], steps[1], called_complete, envs).mismatches)
    called_failed = {**finals[0], "status": "failed", "metrics": None, "endpoint_failed_decisions": 1}
    assert any("the step lines disagree" in m for m in _score_episode(spec[0], steps[0], called_failed, envs).mismatches)
    for env in envs.values():
        env.close()


def test_bench_shows_a_run_the_endpoint_stopped_answering_as_failed_never_a_score(tmp_path):
    """A 4xx after the first question (a model name the server does not serve): the model's row reads failed."""
    with _AnswersFirstDecisions(1, "status:400") as server:
        card = run_bench(BenchConfig(envs=["FinQA-v0"], base_url=server.base_url, model="foo", out=tmp_path,
                                     run_name="mid", plots=False, html=False, progress=False, agents=False,
                                     concurrency=1, instances={"qa": (0, 1, 2), "qa/fab_public": ()}))
    [run] = [r for r in card.agents if r["agent"] == "foo"]
    assert run["endpoint_failed"] == 2 and run["metrics"] is None
    assert any(e["policy"] == "foo" and "failed, not scored: 2 of 3 episode(s)" in e["error"] for e in card.errors)
    foo = card.aggregate["profiles"]["foo"]
    assert foo["failed"] is True and foo["overall"] is None and "got no reply from the endpoint" in foo["note"]
    markdown = (tmp_path / "mid" / "scorecard.md").read_text()
    lines = [re.sub(" +", " ", line) for line in markdown.splitlines()]  # tables pad their cells
    [row] = [line for line in lines if line.startswith("| foo | eval |")]
    assert row.split(" | ")[3:6] == ["failed", "failed", "failed"]  # the agents table: no score in any column
    [aggregate_row] = [line for line in lines if line.startswith("| foo | ") and not line.startswith("| foo | eval |")]
    assert "| failed |" in aggregate_row


def test_under_herculeans_rule_a_decision_the_endpoint_never_answered_is_not_the_agents_failure(tmp_path):
    """HERCULEAN's rule fails an episode whose decision has no valid action (the agent's failure, "—"); when no
    decision of the episode got a reply, it is the endpoint's failure: marked so, and re-derived by the score."""
    from finenvs.evaluation.endpoints import EndpointError
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.score import score_run
    from finenvs.tasks.qa.baselines import ScriptedQAChatAgent

    class GoesAway(ScriptedQAChatAgent):  # answers the first decision, then the endpoint is gone
        decisions = 0

        async def complete(self, messages, tools):
            GoesAway.decisions += len(messages) == 2
            if GoesAway.decisions > 1:
                raise EndpointError("permanent", "the model 'foo' does not exist", status=404)
            return await super().complete(messages, tools)

    summary = run_llm(RunConfig(env_id="FinQA-v0", limit=2, concurrency=1, failure_rule="herculean"), GoesAway(),
                      out=tmp_path, name="h", progress=False)
    assert [o.status for o in summary.outcomes] == ["complete", "failed"]
    [failed] = summary.endpoint_failed
    assert failed.record["endpoint_failed_decisions"] == 1 and "does not exist" in failed.record["reason"]
    score = score_run(summary.run_dir, write=False)
    assert score.reproduced and [e.endpoint_failed for e in score.episodes] == [False, True]
    assert score.run_metrics() is None
