"""Every everyday command checks its arguments before doing any work (issue 24, item 6).

An unknown symbol, split, date, env id, policy or dataset exits 2 with one line
``finenvs: error: ...`` naming the valid choices, and before the command's work
starts: the function that would do it (run the bench, build an env, run the
agent, open the MCP episode) is replaced by one that fails the test, and no run
folder may appear. That is the deterministic form of "fails in under a second"
(tests never assert on wall-clock time; the measured times are in the issue's
report). ``finenvs train`` never overwrites a run: a second run into the same
``--out`` writes a suffixed folder beside the first, ``--overwrite`` replaces it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from finenvs.cli import main

CORE = "valid symbols: ['AAPL', 'ADBE', 'AMZN'"
SPLITS = "valid splits: ['eval', 'live', 'train']"
ENVS = "valid envs: ['FinTrading-v0'"
DATE = "is not a date; use YYYY-MM-DD"
ORDER = "start 2026-03-01 is after end 2026-02-01"


class _Terminal(io.StringIO):
    """stdin of a person at a terminal (``finenvs mcp`` answers an MCP client otherwise)."""

    def isatty(self) -> bool:
        return True


def _no_work(what: str):
    def fail(*args, **kwargs):
        raise AssertionError(f"{what} ran: the bad argument was not caught before the work")

    return fail


@pytest.fixture()
def no_work(monkeypatch):
    """Any command's work fails the test: the checks must come first."""
    import gymnasium

    import finenvs.evaluation.bench as bench
    import finenvs.evaluation.harness as harness
    import finenvs.evaluation.llm as llm
    import finenvs.evaluation.mcp_server as mcp_server

    monkeypatch.setattr(bench, "run_bench", _no_work("run_bench"))
    monkeypatch.setattr(llm, "run_llm", _no_work("run_llm"))
    monkeypatch.setattr(harness, "run_harness", _no_work("run_harness"))
    monkeypatch.setattr(mcp_server, "McpEpisode", _no_work("McpEpisode"))
    monkeypatch.setattr(gymnasium, "make", _no_work("gymnasium.make"))
    monkeypatch.setattr(sys, "stdin", _Terminal())


def _fails(argv: list[str], capsys) -> str:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    assert rc == 2, (rc, captured.err)
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("finenvs: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def _written(out: Path) -> list[Path]:
    return sorted(out.rglob("*")) if out.exists() else []


BENCH = ["bench", "--no-plots", "--no-html", "--quiet", "--no-agents"]
WINDOWS = "quarterly:2016-01-01:2025-12-31"
AGENT = "cat {prompt_file}"

CASES = [
    # bench: symbols of the split's dataset, a pairs universe, the long-history datasets with --windows
    (BENCH + ["--symbols", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (BENCH + ["--universe", "AAPL", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (BENCH + ["--universe", "AAPL"], ["needs at least 2 symbols"]),
    (BENCH + ["--split", "nope"], ["unknown split 'nope'", SPLITS]),
    (BENCH + ["--envs", "FinNope-v0"], ["unknown env 'FinNope-v0'", ENVS]),
    (BENCH + ["--windows", WINDOWS, "--symbols", "XYZ"], ["unknown symbol 'XYZ'", "with --windows the valid symbols",
                                                         "'AMD'", "yahoo_2000_2024"]),
    (BENCH + ["--windows", WINDOWS, "--universe", "AAPL", "XYZ"], ["--universe: unknown symbol 'XYZ'", "'AMD'"]),
    (BENCH + ["--windows", WINDOWS, "--after", "2026-13-01"], [DATE]),
    # run
    (["run", "--env", "FinTrading-v0", "--policy", "momentum", "--symbol", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (["run", "--env", "FinTrading-v0", "--policy", "momentum", "--split", "nope"], ["unknown split 'nope'", SPLITS]),
    (["run", "--env", "FinTrading-v0", "--policy", "momentum", "--start", "2026-13-01"], [DATE]),
    (["run", "--env", "FinTrading-v0", "--policy", "momentum", "--start", "2026-03-01", "--end", "2026-02-01"], [ORDER]),
    (["run", "--env", "FinTrading-v0", "--policy", "nope"], ["unknown policy 'nope'", "valid policies: ["]),
    (["run", "--env", "FinNope-v0", "--policy", "momentum"], ["unknown env 'FinNope-v0'", ENVS]),
    (["run", "--env", "FinHedging-v0", "--policy", "buy_and_hold", "--symbols", "AAPL", "XYZ"],
     ["unknown symbol 'XYZ'", CORE]),
    # llm
    (["llm", "--symbols", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (["llm", "--symbols", "AAPL", "XYZ", "QQQQ"], ["unknown symbols ['XYZ', 'QQQQ']", CORE]),
    (["llm", "--split", "nope"], ["unknown split 'nope'", SPLITS]),
    (["llm", "--start", "2026-13-01"], [DATE]),
    (["llm", "--start", "2026-03-01", "--end", "2026-02-01"], [ORDER]),
    (["llm", "--env", "FinNope-v0"], ["unknown env 'FinNope-v0'", ENVS]),
    (["llm", "--env", "FinHedging-v0", "--symbols", "AAPL"], ["needs at least 2 symbols"]),
    (["llm", "--env", "FinReport-v0", "--symbols", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    # harness
    (["harness", "--agent-cmd", AGENT, "--symbols", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (["harness", "--agent-cmd", AGENT, "--split", "nope"], ["unknown split 'nope'", SPLITS]),
    (["harness", "--agent-cmd", AGENT, "--start", "2026-13-01"], [DATE]),
    (["harness", "--agent-cmd", AGENT, "--env", "FinNope-v0"], ["unknown env 'FinNope-v0'", ENVS]),
    # mcp
    (["mcp", "--symbol", "XYZ"], ["unknown symbol 'XYZ'", CORE]),
    (["mcp", "--split", "nope"], ["unknown split 'nope'", SPLITS]),
    (["mcp", "--start", "2026-03-01", "--end", "2026-02-01"], [ORDER]),
    (["mcp", "--env", "FinNope-v0"], ["unknown env 'FinNope-v0'", ENVS]),
    # train (its env checks build the envs once, as before; the unknown id fails before that)
    (["train", "--algo", "ppo", "--env", "FinNope-v0", "--timesteps", "64"], ["unknown env 'FinNope-v0'", ENVS]),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in CASES])
def test_a_bad_argument_exits_2_before_any_work_naming_the_valid_choices(argv, expected, tmp_path, no_work, capsys):
    out = tmp_path / "out"
    line = _fails([*argv, "--out", str(out)] if argv[0] != "run" else argv, capsys)  # run writes no folder
    for text in expected:
        assert text in line, (text, line)
    assert _written(out) == [], "a run folder was written before the arguments were checked"


# Flags mean one thing (issue 35, item 2): two flags that would say different things, or a flag nothing would play
# (a --resume takes its setup from run.json; endpoint flags without a model), fail before any work with one line.
SPLIT_KW = json.dumps({"split": "train"})
CONFLICTS = [
    (["llm", "--symbols", "MSFT", "--env-kwargs", SPLIT_KW], ["names 'split', which --split sets"]),
    (["llm", "--env-kwargs", json.dumps({"symbol": "AAPL"})], ["names 'symbol', which --symbols sets"]),
    (["llm", "--env", "FinHedging-v0", "--env-kwargs", json.dumps({"symbols": ["AAPL", "MSFT"]})],
     ["names 'symbols', which --symbols sets"]),
    (["llm", "--start", "2025-01-02", "--env-kwargs", json.dumps({"start": "2025-02-03"})],
     ["--start 2025-01-02 and --env-kwargs start='2025-02-03' disagree"]),
    (["llm", "--env", "FinQA-v0", "--tools", "none", "--env-kwargs", json.dumps({"tools": "fabpp"})],
     ["--tools none and --env-kwargs tools='fabpp' disagree"]),
    (["llm", "--env", "FinQA-v0", "--instances", "1", "--limit", "1"], ["give --instances", "or --limit N", "not both"]),
    (["llm", "--env", "FinQA-v0", "--seeds", "0", "1"], ["FinQA-v0 plays its plan at one seed", "--seeds gives 2"]),
    (["llm", "--env", "FinDeltaHedge-v0", "--seeds", "0", "1"], ["plays its plan at one seed"]),
    (["llm", "--temperature", "0.5"], ["--temperature: only a model endpoint's requests take them",
                                       "offline scripted agent"]),
    (["llm", "--a2a-url", "http://127.0.0.1:9", "--max-tokens", "5"], ["--max-tokens", "takes only --timeout"]),
    (["llm", "--a2a-url", "http://127.0.0.1:9", "--model", "m"], ["--a2a-url or --base-url/--model, not both"]),
    (["llm", "--price-in", "1"], ["--price-in and --price-out go together"]),
    (["llm", "--prices", "p.json", "--price-in", "1", "--price-out", "2"], ["--prices FILE or --price-in/--price-out"]),
    (["llm", "--judge-model", "judge"], ["--judge-base-url and --judge-model go together"]),
    (["llm", "--herculean-rule", "--format-retries", "2"], ["--herculean-rule gives every decision 5 attempts"]),
    (["llm", "--resume", "runs/x", "--symbols", "AAPL", "--concurrency", "2"],
     ["--resume continues runs/x as its run.json recorded it", "--symbols, --concurrency, --out would not be played"]),
    (["llm", "--resume", "runs/x", "--timeout", "5"], ["--out, --timeout would not be played"]),
    (["llm", "--resume", "runs/x", "--name", "y"], ["--out, --name would not be played"]),
    (["harness", "--agent-cmd", AGENT, "--instances", "0", "--limit", "1"], ["not both"]),
    (["harness", "--resume", "runs/x", "--split", "train"], ["--split, --out would not be played"]),
    (["mcp", "--env", "FinTrading-v0", "--env-kwargs", SPLIT_KW], ["names 'split', which --split sets"]),
    # every bench option is checked before any work
    (BENCH + ["--env-kwargs", SPLIT_KW], ["names 'split', which --split sets"]),
    (BENCH + ["--env-kwargs", json.dumps({"symbols": ["AAPL", "MSFT"]})], ["which --symbols or --universe sets"]),
    (BENCH + ["--after", "2020-01-01"], ["--after", "goes with --windows"]),
    (BENCH + ["--agent-limit", "3"], ["--agent-limit: only a model's runs play them"]),
    (BENCH + ["--retries", "2"], ["--retries: only a model's runs play them"]),
    (BENCH + ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--retries", "-1"], ["--retries -1"]),
    (BENCH + ["--herculean-rule"], ["--herculean-rule: only a model's runs play them"]),
    (BENCH + ["--temperature", "0.3"], ["--temperature: only a model endpoint's requests take them"]),
    (BENCH + ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--agent-limit", "0"], ["--agent-limit 0"]),
    (BENCH + ["--concurrency", "0"], ["--concurrency 0: an integer >= 1"]),
    (BENCH + ["--seed", "-1"], ["--seed -1"]),
    (BENCH + ["--timeout", "0"], ["--timeout: only a model endpoint's requests take them"]),
    (BENCH + ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "0"], ["--timeout 0.0: seconds"]),
    (BENCH + ["--alpha-cost-floor", "-1"], ["--alpha-cost-floor -1.0"]),
    (BENCH + ["--resume", "runs/x", "--name", "y"], ["drop --name"]),
    (BENCH + ["--herculean-published", "nope.json"], ["nope.json: no such file"]),
    (BENCH + ["--config", "nope.yaml"], ["nope.yaml: no such file"]),
    (BENCH + ["--weights", "knowledge=x"], ["--weights: 'knowledge=x' is not name=number"]),
]


@pytest.mark.parametrize(("argv", "expected"), CONFLICTS, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in CONFLICTS])
def test_conflicting_or_unplayed_flags_exit_2_before_any_work(argv, expected, tmp_path, no_work, capsys):
    out = tmp_path / "out"
    line = _fails([*argv, "--out", str(out)], capsys)
    for text in expected:
        assert text in line, (text, line)
    assert _written(out) == [], "a folder was written before the arguments were checked"


def test_what_the_run_folder_records_is_what_was_played(tmp_path):
    """run.json's configuration (env arguments, split, symbols) is what every episode played: each recorded
    episode carries the recorded arguments unchanged, and its steps are in the recorded window and symbol."""
    args = {"fee_bps": 10, "start": "2025-06-02", "end": "2025-06-13"}
    assert main(["llm", "--env", "FinTrading-v0", "--symbols", "MSFT", "AAPL", "--split", "eval", "--start",
                 args["start"], "--end", args["end"], "--env-kwargs", json.dumps({"fee_bps": 10}), "--out",
                 str(tmp_path), "--name", "r", "--quiet"]) == 0
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    config = meta["config"]
    assert config["env_kwargs"] == args and config["symbols"] == ["MSFT", "AAPL"] and config["split"] == "eval"
    assert [e["env_kwargs"] for e in meta["episodes"]] == [{**args, "split": "eval", "symbol": s}
                                                           for s in ("MSFT", "AAPL")]
    steps = [json.loads(line) for line in (tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()]
    steps = [r for r in steps if r["type"] == "step"]
    for k, symbol in enumerate(("MSFT", "AAPL")):
        mine = [r for r in steps if r["episode"] == k]
        assert {r["symbol"] for r in mine} == {symbol}
        assert mine[0]["date"] == args["start"] and mine[-1]["next_date"] <= args["end"]
    from finenvs.evaluation.envpool import make_base_env
    from finenvs.tasks import EpisodeSpec

    env = make_base_env(EpisodeSpec.from_dict(meta["episodes"][0]))
    try:  # the env built from the record charges the recorded fee
        assert env.unwrapped.params.fee == pytest.approx(10 / 10_000)
    finally:
        env.close()


def test_a_pairs_universe_of_one_fails_at_once_in_a_fresh_process(tmp_path):
    """``bench --universe AAPL`` used to run every family for ~25 s and then exit 1 with per-episode errors."""
    proc = subprocess.run([sys.executable, "-m", "finenvs.cli", *BENCH, "--universe", "AAPL", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "finenvs: error: --universe AAPL: a pairs universe (FinHedging-v0) needs at least 2 symbols"]
    assert _written(tmp_path) == []


def test_good_arguments_pass_the_checks(capsys):
    """The checks reject only what the envs would reject: a valid run still runs."""
    assert main(["run", "--env", "FinTrading-v0", "--policy", "buy_and_hold", "--symbol", "AAPL", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------- train never overwrites a run
def _train(out: Path, *extra: str) -> Path:
    argv = ["train", "--algo", "dqn", "--timesteps", "64", "--eval-splits", "eval", "--eval-episodes", "1",
            "--no-normalize-obs", "--out", str(out), "--quiet", "--json", *extra]
    import contextlib

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    [result] = json.loads(buffer.getvalue())
    return Path(result["files"]["result"]).parent


def test_train_twice_into_one_out_keeps_both_and_overwrite_replaces(tmp_path):
    pytest.importorskip("stable_baselines3")
    first = _train(tmp_path)
    assert first == tmp_path / "FinTrading-v0__dqn__s0"
    marker = first / "kept.txt"
    marker.write_text("the first run's folder\n")
    second = _train(tmp_path)
    assert second == tmp_path / "FinTrading-v0__dqn__s0-2"
    assert marker.is_file() and (first / "result.json").is_file() and (second / "result.json").is_file()

    again = _train(tmp_path, "--overwrite")
    assert again == first and not marker.exists() and (first / "result.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FinTrading-v0__dqn__s0", "FinTrading-v0__dqn__s0-2"]


def test_run_dir_never_reuses_a_folder(tmp_path):
    from types import SimpleNamespace

    from finenvs.baselines.rl.common import run_dir

    args = SimpleNamespace(out=str(tmp_path), env_id="FinTrading-v0", seed=3, overwrite=False)
    made = [run_dir(args, "ppo") for _ in range(3)]
    assert [p.name for p in made] == ["FinTrading-v0__ppo__s3", "FinTrading-v0__ppo__s3-2", "FinTrading-v0__ppo__s3-3"]
    (made[0] / "model.zip").write_text("old")
    replaced = run_dir(SimpleNamespace(**{**vars(args), "overwrite": True}), "ppo")
    assert replaced == made[0] and list(replaced.iterdir()) == []


def _subcommands(parser) -> dict:
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_help_page_renders(capsys):
    """argparse %-formats help texts: a bare '%' in one (it was '95% intervals') crashed ``finenvs --help``."""
    from finenvs.cli import build_parser

    pages = [[]]
    for name, sub in _subcommands(build_parser()).items():
        pages.append([name])
        pages += [[name, inner] for inner in _subcommands(sub)] if any(
            type(a).__name__ == "_SubParsersAction" for a in sub._actions) else []
    for page in pages:
        with pytest.raises(SystemExit) as exit_:
            main([*page, "--help"])
        assert exit_.value.code == 0, page
        assert "usage: finenvs" in capsys.readouterr().out
    assert len(pages) > 12
