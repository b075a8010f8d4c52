"""A failed evaluation is a failure: an endpoint that never answers gives no score (n/a, never 0), a non-zero
exit and a line naming the cause, on ``finenvs llm`` and ``finenvs bench`` alike."""

from __future__ import annotations

from finenvs.cli import main
from finenvs.evaluation.bench import BenchConfig, run_bench

DEAD = "http://127.0.0.1:9/v1"  # nothing listens on port 9


def test_llm_against_an_unreachable_endpoint_exits_non_zero_naming_the_url(tmp_path, capsys):
    code = main(["llm", "--env", "FinQA-v0", "--limit", "3", "--base-url", DEAD, "--model", "foo",
                 "--out", str(tmp_path), "--quiet", "--concurrency", "1"])
    out, err = capsys.readouterr()
    assert code != 0
    assert f"cannot reach {DEAD}" in err and "the endpoint never answered" in err
    assert "2 episode(s) not started" in err  # the later episodes wait for --resume instead of failing one by one
    assert "Score 0.00" not in out and "| 0.00 " not in out


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
