"""A failed evaluation is a failure: an endpoint that never answers gives no score (n/a, never 0), a non-zero
exit and a line naming the cause, on ``finenvs llm`` and ``finenvs bench`` alike."""

from __future__ import annotations

import asyncio
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
                                 instances={"qa": (0,), "qa/fab_public": ()}, endpoint={"timeout": 1.0}))
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
