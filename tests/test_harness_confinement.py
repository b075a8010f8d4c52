"""``finenvs harness`` runs agent programs confined, and handles their processes and output safely.

An adversarial agent program (tests/harness_snoop.py) tries to read every data path a coding agent could find
(the shipped data, the catalog cache and the built catalog, the user layer, the run key, the run folder, an
earlier run, the checkout's history and published results), to write into each, and leaves a detached child
holding stdout. Confined, it reads and writes nothing protected, sees only its own processes, and nothing it
started outlives the attempt; the commit counts whatever the program does after it. Unconfined (opt-in), the
same program reads the data, which shows the check can fail, and the run says it was unconfined.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

from finenvs.cli import main  # noqa: E402
from finenvs.data.catalog import cache_dir, user_data_dir  # noqa: E402
from finenvs.data.manifest import shipped_data_dir  # noqa: E402
from finenvs.evaluation.confine import ConfinementError, make_sandbox, probe_bwrap  # noqa: E402
from finenvs.evaluation.harness import HarnessAgent, run_harness, substitute  # noqa: E402
from finenvs.evaluation.llm import RunConfig  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.evaluation.seal import load_or_create_key, run_key_path  # noqa: E402

SNOOP = Path(__file__).parent / "harness_snoop.py"
AGENT = Path(__file__).parent / "harness_agent.py"
CHECKOUT = Path(__file__).resolve().parents[1]
needs_sandbox = pytest.mark.skipif(probe_bwrap()[0] is None, reason=f"no sandbox here: {probe_bwrap()[1]}")


def _known_paths(out: Path) -> list[Path]:
    """Every place a snooping program could find the future: found independently of the harness's own list."""
    earlier = out / "earlier-run"
    earlier.mkdir(parents=True, exist_ok=True)
    (earlier / "run.json").write_text('{"secret": "an earlier run"}')
    user = user_data_dir()
    user.mkdir(parents=True, exist_ok=True)
    (user / "prices.csv").write_text("date,symbol,close\n2030-01-02,TSLA,1\n")
    paths = [shipped_data_dir(), shipped_data_dir() / "prices", cache_dir(), *sorted(cache_dir().glob("*.duckdb")),
             user, user / "prices.csv", out, out / "h", earlier]
    load_or_create_key()
    paths.append(run_key_path())
    paths += [CHECKOUT / name for name in (".git", "docs", "benchmarks", "README.md") if (CHECKOUT / name).exists()]
    return paths


def _run_snoop(tmp_path: Path, *, unconfined: bool) -> tuple[dict, dict, str, list[Path]]:
    out = tmp_path / "runs"
    paths = _known_paths(out)
    tag = f"finenvs-snoop-{uuid.uuid4().hex}"
    read_only = ["--read-only"] if unconfined else []  # unconfined, it would write into the real folders
    command = " ".join(shlex.quote(a) for a in [sys.executable, str(SNOOP), "{mcp_config}", tag, *read_only,
                                                 *map(str, paths)])
    agent = HarnessAgent(command, timeout=120, unconfined=unconfined, commit_grace=5.0)
    config = RunConfig(env_id="FinTrading-v0", split="eval", symbols=["TSLA"], max_decisions=1)
    try:
        summary = run_harness(config, agent, out=out, name="h", progress=False)
    finally:  # the planted user file is not in the layer's manifest: later tests of this worker verify the layer
        (user_data_dir() / "prices.csv").unlink(missing_ok=True)
    (log_dir,) = sorted((summary.run_dir / "harness").iterdir())
    attempt = json.loads((log_dir / "attempt.json").read_text())
    report = json.loads((log_dir / "stdout.log").read_text().splitlines()[0])
    return attempt, report, tag, paths


def _survivors(tag: str, wait: float = 10.0) -> list[str]:
    deadline = time.monotonic() + wait
    while True:
        found = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout.split()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@needs_sandbox
def test_a_snooping_program_reads_and_writes_nothing_protected_and_leaves_no_process(tmp_path):
    attempt, report, tag, paths = _run_snoop(tmp_path, unconfined=False)
    assert attempt["confined"] is True and attempt["committed"] == {"action": "HOLD"}
    assert report["commit"]["accepted"] is True
    for path in paths:
        seen = report["found"][str(path)]
        target = path if path.is_dir() else path.parent
        private = Path("/tmp") in target.parents  # the sandbox's own /tmp: a write there never reaches the host
        assert seen["read_bytes"] == 0 and seen["files"] == 0 and (private or not seen["wrote"]), (path, seen)
        assert not (target / "snoop-was-here").exists(), path
    assert report["home"] == "/tmp/home" and report["pid"] < 100  # a private home; its own PID namespace
    assert len(report["processes"]) < 10 and all(p < 100 for p in report["processes"])
    assert _survivors(tag, wait=10.0) == []  # the detached child died with the attempt
    assert attempt["outcome"] == "exited"  # the child holding stdout did not keep the attempt open


@needs_sandbox
def test_the_agent_can_still_run_reach_its_mcp_server_and_write_its_workdir(tmp_path):
    """The scripted agent imports finenvs (code, not data), reaches the MCP endpoint on loopback and writes to
    {workdir}; the decision is its own."""
    command = f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}"
    script = f"{sys.executable} -c \"import pathlib,sys; pathlib.Path(sys.argv[1], 'scratch').write_text('ok')\" "
    agent = HarnessAgent(f"sh -c {shlex.quote(script + '{workdir} && ' + command)}", timeout=120)
    summary = run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), agent, out=tmp_path,
                          name="h", progress=False)
    (log_dir,) = sorted((summary.run_dir / "harness").iterdir())
    attempt = json.loads((log_dir / "attempt.json").read_text())
    assert attempt["confined"] and attempt["exit_code"] == 0 and attempt["committed"] is not None, attempt
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    assert [r["via"] != "default" for r in records if r["type"] == "step"] == [True]
    described = json.loads((summary.run_dir / "run.json").read_text())["agent"]["confinement"]
    assert described["confined"] and described["sandbox"].startswith("bubblewrap")
    assert {str(shipped_data_dir().resolve()), str(cache_dir().resolve())} <= {p["path"] for p in
                                                                               described["protected"]}


def test_unconfined_is_opt_in_and_the_same_program_then_reads_the_data(tmp_path, capsys):
    attempt, report, tag, _ = _run_snoop(tmp_path, unconfined=True)
    try:
        assert attempt["confined"] is False and attempt["committed"] == {"action": "HOLD"}
        assert report["found"][str(shipped_data_dir())]["read_bytes"] > 0  # what the sandbox prevents
        meta = json.loads((tmp_path / "runs" / "h" / "run.json").read_text())
        assert meta["agent"]["confinement"]["confined"] is False
        assert main(["score", str(tmp_path / "runs" / "h")]) == 3  # one decision of an episode: incomplete
        assert "agent program: unconfined" in capsys.readouterr().out
        from finenvs.evaluation.compare import compare_markdown, compare_runs

        assert "agent program: unconfined" in compare_markdown(compare_runs([tmp_path / "runs" / "h"] * 2))
        assert "agent program: unconfined" in (tmp_path / "runs" / "h" / "score.md").read_text()
    finally:
        subprocess.run(["pkill", "-f", tag])


def test_no_sandbox_refuses_unless_unconfined(tmp_path, capsys):
    with pytest.raises(ConfinementError, match="--unconfined"):
        make_sandbox(unconfined=False, protected=[], cwd=tmp_path, bwrap=str(tmp_path / "no-bwrap"))
    assert make_sandbox(unconfined=True, protected=[], cwd=tmp_path).confined is False


@needs_sandbox
def test_a_working_directory_inside_a_protected_path_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(shipped_data_dir())
    agent = HarnessAgent(f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}")
    with pytest.raises(ConfinementError, match="start the harness elsewhere"):
        run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), agent, out=tmp_path, name="h",
                    progress=False)


# ------------------------------------------------------------------------------ process handling
LOUD = ("import sys, json, asyncio\n"
        "from mcp import Client\n"
        "async def commit(cfg):\n"
        "    async with Client(json.load(open(cfg))['mcpServers']['finenvs']['url']) as c:\n"
        "        await c.call_tool('commit_action', {'answer': '1'})\n"
        "chunk = b'x' * (1 << 20)\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.buffer.write(b'\\nTHE END')\n"
        "sys.stdout.flush()\n"
        "asyncio.run(commit(sys.argv[1]))\n"
        "if sys.argv[3] == 'hang':\n"
        "    import time; time.sleep(120)\n")


def _loud(tmp_path: Path, megabytes: int, after: str, **kwargs) -> tuple[dict, Path]:
    """The program writes ``megabytes`` MiB to stdout, commits, then exits or hangs; confined where a sandbox works
    (the script sits in the working directory, which stays visible)."""
    script = tmp_path / "loud.py"
    script.write_text(LOUD)
    agent = HarnessAgent(f"{sys.executable} loud.py {{mcp_config}} {megabytes} {after}", timeout=60,
                         unconfined=probe_bwrap()[0] is None, **kwargs)
    summary = run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), agent, out=tmp_path / "o",
                          name="h", progress=False)
    (log_dir,) = sorted((summary.run_dir / "harness").iterdir())
    return json.loads((log_dir / "attempt.json").read_text()), log_dir


def test_output_is_streamed_to_a_capped_file_and_its_tail_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    attempt, log_dir = _loud(tmp_path, 40, "exit", output_cap=1 << 20)
    assert attempt["stdout_bytes"] == 40 * (1 << 20) + len(b"\nTHE END") and attempt["stdout_truncated"]
    assert (log_dir / "stdout.log").stat().st_size == 1 << 20
    assert attempt["stdout_tail"].endswith("THE END") and len(attempt["stdout_tail"]) <= 4_000
    assert attempt["committed"] == {"answer": "1"}


def test_a_commit_counts_at_once_even_if_the_program_never_exits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    attempt, _ = _loud(tmp_path, 0, "hang", commit_grace=0.5)
    assert attempt["committed"] == {"answer": "1"} and attempt["outcome"] == "ended after its commit"
    assert attempt["seconds"] < 60  # the attempt's timeout: it ended at the grace, not at the timeout


def test_placeholders_are_substituted_in_one_pass():
    values = {"{workdir}": "/runs/{step}/w", "{step}": "3", "{prompt_file}": "{url}", "{url}": "http://x"}
    assert substitute(["{workdir}", "--p={prompt_file}", "{step}{step}"], values) == [
        "/runs/{step}/w", "--p={url}", "33"]


def test_cli_harness_without_a_sandbox_exits_2_naming_the_cause(tmp_path, monkeypatch, capsys):
    import finenvs.evaluation.confine as confine

    monkeypatch.setattr(confine, "probe_bwrap", lambda executable=None: (None, "bubblewrap (bwrap) is not installed"))
    code = main(["harness", "--env", "FinQA-v0", "--instances", "0", "--agent-cmd",
                 f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "bubblewrap (bwrap) is not installed" in err and "--unconfined" in err
    assert not any(tmp_path.iterdir())  # refused before any run folder was written


@needs_sandbox
def test_a_program_under_tmp_runs_and_sees_nothing_else_of_tmp(tmp_path, monkeypatch):
    """A program named by its path under /tmp runs (its folder is shown read-only), while a sibling folder of
    /tmp that the command does not name stays invisible."""
    (tmp_path / "prog").mkdir()
    (tmp_path / "here").mkdir()
    secret = tmp_path / "sibling" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not for the agent")
    script = tmp_path / "prog" / "agent.py"
    script.write_text(
        "import json, sys, asyncio, pathlib\nfrom mcp import Client\n"
        f"print('SEES', pathlib.Path({str(secret)!r}).exists())\n"
        "async def go():\n"
        "    async with Client(json.load(open(sys.argv[1]))['mcpServers']['finenvs']['url']) as c:\n"
        "        await c.call_tool('commit_action', {'answer': '1'})\n"
        "asyncio.run(go())\n")
    monkeypatch.chdir(tmp_path / "here")
    agent = HarnessAgent(f"{sys.executable} {script} {{mcp_config}}", timeout=60)
    summary = run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), agent, out=tmp_path / "o",
                          name="h", progress=False)
    (log_dir,) = sorted((summary.run_dir / "harness").iterdir())
    attempt = json.loads((log_dir / "attempt.json").read_text())
    assert attempt["committed"] == {"answer": "1"} and attempt["exit_code"] == 0, attempt
    assert "SEES False" in (log_dir / "stdout.log").read_text()
