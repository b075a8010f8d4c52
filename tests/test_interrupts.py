"""Clean exits: Ctrl-C prints one line (what was saved, how to resume) and exits 130; every error is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finenvs import cli
from finenvs.evaluation.runlog import read_trajectories
from helpers import SUBPROCESS_TIMEOUT


def default_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test run started as a background job of a
    non-interactive shell inherits SIGINT ignored, and so would every finenvs it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finenvs(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "finenvs.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ), preexec_fn=default_sigint,
                            **kwargs)


def wait_for(condition, timeout: float = SUBPROCESS_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def lines(path: Path) -> int:
    return path.read_text(errors="replace").count("\n") if path.exists() else 0


# ---------------------------------------------------------------------------- Ctrl-C
def test_ctrl_c_on_finenvs_llm_is_one_line_exit_130_and_resume_completes(tmp_path):
    pytest.importorskip("openai")
    from chat_server import ChatServer

    with ChatServer() as server:
        server.faults.extend(["sleep:0.1"] * 1_000)  # a slow endpoint, so the interrupt lands mid-run
        proc = finenvs("llm", "--base-url", server.base_url, "--model", "scripted", "--symbols", "AAPL",
                       "--start", "2026-01-02", "--end", "2026-01-16", "--out", str(tmp_path), "--name", "cut",
                       "--quiet")
        run_dir = tmp_path / "cut"
        wait_for(lambda: lines(run_dir / "trajectories.jsonl") >= 1 or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT)
        server.faults.clear()
        assert proc.returncode == 130, err
        [line] = err.strip().splitlines()
        assert line.startswith("interrupted: 0 of 1 episode finished (") and f"saved in {run_dir}" in line
        assert line.endswith(f"resume with: finenvs llm --resume {run_dir}")
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        saved = [r for r in read_trajectories(run_dir / "trajectories.jsonl")[0] if r["type"] == "step"]
        assert 1 <= len(saved) < 10

        done = finenvs("llm", "--resume", str(run_dir))
        out, err = done.communicate(timeout=SUBPROCESS_TIMEOUT)
    assert done.returncode == 0, err
    assert "the live scores exactly" in out  # the resumed run is re-scored from its records
    records, dropped = read_trajectories(run_dir / "trajectories.jsonl")
    steps = [r["step"] for r in records if r["type"] == "step"]
    assert dropped == 0 and steps == list(range(len(steps))) and len(steps) == 10  # the window's 10 trading days, each once
    assert [r["type"] for r in records].count("episode") == 1
    assert steps[: len(saved)] == [s["step"] for s in saved]


def test_ctrl_c_on_finenvs_mcp_is_one_line_exit_130(tmp_path):
    pytest.importorskip("mcp")
    proc = finenvs("mcp", "--env", "FinQA-v0", "--out", str(tmp_path), "--name", "served", stdin=subprocess.PIPE)
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0  # serving
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 130, err
    serving, line = err.strip().splitlines()  # the start notice, then the one line of the interrupt
    assert serving.startswith("finenvs mcp: serving") and "Traceback" not in err
    assert line == f"interrupted: the MCP episode stopped after 0 decisions, saved in {tmp_path / 'served'} (incomplete)"
    assert json.loads((tmp_path / "served" / "run.json").read_text())["status"] == "incomplete"


@pytest.mark.parametrize("module, handler, argv", [
    (cli.run, "handle", ["run", "--env", "FinTrading-v0", "--policy", "momentum"]),
    (cli.score, "handle", ["score", "somewhere"]),
    (cli.train, "handle", ["train", "--algo", "ppo", "--timesteps", "10"]),
    (cli.data, "handle_verify", ["data", "verify"]),
    (cli.list_command, "handle", ["list"]),
])
def test_ctrl_c_in_any_command_is_one_line_exit_130(monkeypatch, capsys, module, handler, argv):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, handler, interrupted)
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert err == f"interrupted: finenvs {argv[0]} stopped; nothing to resume\n"


def test_ctrl_c_in_bench_names_the_folder_to_resume(monkeypatch, capsys, tmp_path):
    import finenvs.evaluation.bench as bench

    def interrupted(config):
        folder = tmp_path / "b" / "agents" / "scripted" / "trading-eval"
        folder.mkdir(parents=True)
        (tmp_path / "b" / "bench.json").write_text("{}")
        (folder / "run.json").write_text(json.dumps({"episodes": [{}, {}, {}, {}]}))
        (folder / "trajectories.jsonl").write_text(
            '{"type": "step", "episode": 0, "step": 0}\n{"type": "episode", "episode": 0, "status": "complete"}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "run_bench", interrupted)
    assert cli.main(["bench", "--out", str(tmp_path), "--quiet"]) == 130
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"interrupted: 1 of 4 agent episodes saved in {tmp_path / 'b'}")
    assert f"resume with: finenvs bench --resume {tmp_path / 'b'}" in line


# ---------------------------------------------------------------------------- errors
def test_error_paths_exit_non_zero_with_one_line(tmp_path, capsys):
    proc = finenvs("llm", "--env", "FinNope-v0", "--out", str(tmp_path))  # the real process: its exit code and stderr
    cases = [
        (["score", str(tmp_path / "missing")], 2, "not a finenvs run folder"),
        (["llm", "--concurrency", "many"], 2, "argument --concurrency: invalid int value: 'many' (see `finenvs llm --help`)"),
        (["llm", "--concurrency", "0", "--out", str(tmp_path)], 2, "concurrency=0 must be an integer >= 1"),
        (["run", "--env", "FinTrading-v0", "--policy", "momentum", "--turbo"], 2, "unrecognized arguments: --turbo"),
        (["data"], 2, "data needs a subcommand: verify"),
    ]
    for argv, code, message in cases:
        try:
            returned = cli.main(argv)
        except SystemExit as exc:  # argparse's errors exit from the parser
            returned = exc.code
        err = capsys.readouterr().err
        assert returned == code, (argv, err)
        [line] = err.splitlines()
        assert line.startswith("finenvs: error: ") and message in line, (argv, line)
    _, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 2
    [line] = err.splitlines()
    assert line.startswith("finenvs: error: unknown env 'FinNope-v0'; valid envs: [")
    assert not any(tmp_path.iterdir())


def test_an_unexpected_error_is_one_line_unless_debugging(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("something\nunforeseen")

    monkeypatch.setattr(cli.list_command, "handle", broken)
    monkeypatch.delenv("FINENVS_DEBUG", raising=False)
    assert cli.main(["list"]) == 1
    err = capsys.readouterr().err
    assert err == ("finenvs: error: unexpected RuntimeError: something unforeseen (run with --debug or "
                   "FINENVS_DEBUG=1 for the traceback)\n")
    with pytest.raises(RuntimeError, match="unforeseen"):
        cli.main(["--debug", "list"])
    monkeypatch.setenv("FINENVS_DEBUG", "1")
    with pytest.raises(RuntimeError, match="unforeseen"):
        cli.main(["list"])
