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
