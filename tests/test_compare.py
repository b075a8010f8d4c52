"""``finenvs compare``: bench runs and agent runs side by side, bootstrap intervals, paired differences.

Two bench runs of a tiny suite (FinTrading-v0 on AAPL and MSFT, no agents) with different seeds, and two agent
runs of FinQA-v0's first 5 questions: the family's scripted agent and an agent that always answers "0".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from finenvs.evaluation.compare import cli_compare, compare_markdown, compare_plot, compare_runs, run_kind
from finenvs.text.chat import NO_USAGE, ChatReply, ScriptedChatAgent


@dataclass
class ZeroAgent(ScriptedChatAgent):
    """Answers every question with "0" and calls no tool."""

    name: str = "zero"

    def reply(self, messages, tools):
        return ChatReply("0", [], usage=NO_USAGE)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from finenvs.evaluation.bench import BenchConfig, run_bench
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.tasks import task_of

    out = tmp_path_factory.mktemp("compare")
    bench = {}
    for seed in (0, 1):
        card = run_bench(BenchConfig(suite="herculean", envs=["FinTrading-v0"], agents=False, plots=False, html=False,
                                     symbols=["AAPL", "MSFT"], seed=seed, out=out, run_name=f"seed{seed}",
                                     progress=False))
        assert card.errors == []
        bench[seed] = out / f"seed{seed}"
    config = RunConfig(env_id="FinQA-v0", limit=5)
    scripted = run_llm(config, task_of("FinQA-v0").make_scripted_agent(), out=out, name="scripted", progress=False)
    zero = run_llm(config, ZeroAgent(), out=out, name="zero", progress=False)
    assert scripted.status == zero.status == "complete"
    return {"bench0": bench[0], "bench1": bench[1], "scripted": scripted.run_dir, "zero": zero.run_dir}


def _group(result, env, policy=None):
    found = [g for g in result["groups"] if g["env"] == env and (policy is None or g["policy"] == policy)]
    assert len(found) == 1, [(g["env"], g["policy"]) for g in result["groups"]]
    return found[0]


def test_run_kinds(runs, tmp_path):
    assert run_kind(runs["bench0"]) == "bench" and run_kind(runs["scripted"]) == "llm"
    with pytest.raises(ValueError, match="neither a bench run"):
        run_kind(tmp_path)


def test_bench_runs_with_different_seeds_are_side_by_side_and_not_paired(runs):
    result = compare_runs([runs["bench0"], runs["bench1"]])
    assert [r["run"] for r in result["runs"]] == ["A", "B"] and {r["kind"] for r in result["runs"]} == {"bench"}
    card = json.loads((runs["bench0"] / "scorecard.json").read_text())
    means = {m["policy"]: m for m in card["means"] if m["env"] == "FinTrading-v0"}
    assert {g["policy"] for g in result["groups"]} == set(means)
    for group in result["groups"]:
        assert [c["key"] for c in group["columns"]] == ["cumulative_return", "sharpe", "max_drawdown",
                                                        "h_cumulative_return", "h_sharpe", "h_max_drawdown"]
        a, b = group["entries"]
        assert (a["run"], b["run"], a["n"], b["n"]) == ("A", "B", 2, 2)
        assert a["paired"] is None and b["paired"] is None  # seed 0 and seed 1 are different episodes
        cell = a["cells"]["cumulative_return"]
        # the estimate is the scorecard's mean over symbols; its interval over the 2 symbols holds it
        assert cell["estimate"] == pytest.approx(means[group["policy"]]["standard"]["cumulative_return"])
        assert cell["ci"][0] <= cell["estimate"] <= cell["ci"][1]
    # a deterministic rule does not depend on the seed; the random policy does
    bh = _group(result, "FinTrading-v0", "buy_and_hold")["entries"]
    assert bh[0]["cells"]["cumulative_return"] == bh[1]["cells"]["cumulative_return"]
    rnd = _group(result, "FinTrading-v0", "random")["entries"]
    assert rnd[0]["cells"]["cumulative_return"]["estimate"] != rnd[1]["cells"]["cumulative_return"]["estimate"]
    markdown = re.sub(" +", " ", compare_markdown(result))  # the table's cells without their padding
    assert "No paired difference for B" in markdown and "| A | buy_and_hold | 2 |" in markdown


def test_a_bench_run_against_itself_pairs_every_episode_with_zero_difference(runs):
    result = compare_runs([runs["bench0"], runs["bench0"]])
    for group in result["groups"]:
        paired = group["entries"][1]["paired"]
        assert paired["reference"] == "A" and paired["n_matched"] == 2
        cr = paired["columns"]["cumulative_return"]
        assert cr["estimate"] == 0.0 and cr["win_rate"] == 0.0 and cr["tie_rate"] == 1.0 and cr["n"] == 2


def test_two_agents_on_the_same_questions_are_paired_and_the_sign_is_right(runs):
    result = compare_runs([runs["scripted"], runs["zero"]])
    group = _group(result, "FinQA-v0")
    a, b = group["entries"]
    assert (a["policy"], b["policy"], a["n"], b["n"]) == ("scripted-qa", "zero", 5, 5)
    assert [c["key"] for c in group["columns"]] == ["knowledge", "analysis", "score"]
    from finenvs.evaluation.score import score_run

    assert a["cells"]["score"]["estimate"] == pytest.approx(score_run(runs["scripted"], write=False)
                                                             .run_metrics()["score"])
    diff = b["paired"]["columns"]["score"]
    assert b["paired"]["n_matched"] == 5
    assert diff["estimate"] < 0 and diff["ci"][1] <= 0 and diff["win_rate"] == 0.0  # zero is worse
    reverse = _group(compare_runs([runs["zero"], runs["scripted"]]), "FinQA-v0")["entries"][1]["paired"]
    assert reverse["columns"]["score"]["estimate"] == pytest.approx(-diff["estimate"])
    assert reverse["columns"]["score"]["win_rate"] > 0
    assert "B − A | paired | 5 |" in re.sub(" +", " ", compare_markdown(result))


def test_mixed_kinds_are_side_by_side(runs):
    result = compare_runs([runs["bench0"], runs["scripted"], runs["zero"]])
    assert [r["kind"] for r in result["runs"]] == ["bench", "llm", "llm"]
    assert [r.get("signature") for r in result["runs"]] == [None, "signed", "signed"]  # agent runs: the verdict
    from finenvs.text.markdown import md_text

    assert (f"(llm, agent {md_text(result['runs'][1]['agent'])}, reproduced, signed): {md_text(str(runs['scripted']), 1_000)}"
            in compare_markdown(result))
    trading = [g for g in result["groups"] if g["env"] == "FinTrading-v0"]
    assert trading and all([e["run"] for e in g["entries"]] == ["A"] for g in trading)
    qa = _group(result, "FinQA-v0")
    assert [e["run"] for e in qa["entries"]] == ["B", "C"]
    assert qa["entries"][1]["paired"]["reference"] == "B"  # the two agent runs are compared with each other


def test_cli_compare_prints_and_writes_the_files(runs, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_compare([runs["scripted"], runs["zero"]], out=out) == 0
    printed = capsys.readouterr().out
    assert "## FinQA-v0" in printed and "compare.md" in printed
    assert (out / "compare.md").read_text().startswith("# finenvs compare")
    record = json.loads((out / "compare.json").read_text())  # strict JSON: undefined values are null
    assert record["groups"][0]["entries"][1]["paired"]["columns"]["score"]["estimate"] < 0
    pytest.importorskip("matplotlib")
    assert (out / "compare.png").read_bytes().startswith(b"\x89PNG")


def test_cli_compare_json_and_default_folder(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli_compare([runs["bench0"], runs["bench1"]], as_json=True) == 0
    record = json.loads(capsys.readouterr().out)
    assert len(record["runs"]) == 2
    written = list(Path("finenvs-compare").glob("*/compare.json"))
    assert len(written) == 1 and json.loads(written[0].read_text()) == record


def test_compare_plot(runs, tmp_path):
    pytest.importorskip("matplotlib")
    path = compare_plot(compare_runs([runs["bench0"], runs["bench1"]]), tmp_path)
    assert path == tmp_path / "compare.png" and path.stat().st_size > 1000


@pytest.mark.parametrize("case", ["empty", "missing", "one"])
def test_a_bad_folder_exits_2_with_a_clear_error(runs, tmp_path, capsys, case):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "run.json").write_text("{}")  # run.json without trajectories is not a run folder either
    paths = {"empty": [runs["bench0"], empty], "missing": [tmp_path / "nope", runs["bench0"]],
             "one": [runs["bench0"]]}[case]
    assert cli_compare(paths, out=tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert err.startswith("finenvs: error: ")
    assert {"empty": "neither a bench run", "missing": "no such folder", "one": "two or more"}[case] in err
    assert not (tmp_path / "out").exists()
