"""A real agent CLI through ``finenvs harness``: opencode, the shipped model proxy and the scripted model (slow).

opencode streams its chat requests and sends no ``tool_choice``; ``tests/chat_server.py`` does not stream. Through
``finenvs harness --model-proxy`` opencode (``examples/opencode/agent.sh``, its config beside it) gets the scripted
model's tool calls as a stream, calls the episode's tools over MCP and commits: the same decisions as the family's
scripted agent in process. Needs opencode (``npm i -g opencode-ai@1.18.33``, or ``OPENCODE=/path/to/opencode``);
``pytest -m slow tests/test_agent_cli.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

from chat_server import AgentCliRouter, ChatServer  # noqa: E402

from finenvs.cli import main  # noqa: E402
from finenvs.evaluation.confine import probe_bwrap  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "examples" / "opencode" / "agent.sh"
OPENCODE = os.environ.get("OPENCODE") or shutil.which("opencode")
FLAGS = ["--unconfined"] if probe_bwrap()[0] is None else []


def _steps(run_dir: Path) -> list[dict]:
    return [r for r in read_trajectories(run_dir / "trajectories.jsonl")[0] if r.get("type") == "step"]


@pytest.fixture(scope="module")
def agent_home(tmp_path_factory):
    """One opencode home for the module: its config dependencies are installed once, as with --agent-home."""
    return tmp_path_factory.mktemp("opencode-home")


@pytest.mark.skipif(not OPENCODE, reason="opencode is not installed (npm i -g opencode-ai@1.18.33, or set OPENCODE)")
@pytest.mark.parametrize("env_id, decisions", [("FinTrading-v0", 2), ("FinAudit-v0", 1)])
def test_opencode_commits_the_scripted_decisions_through_the_proxy(tmp_path, monkeypatch, agent_home, env_id,
                                                                     decisions):
    monkeypatch.setenv("OPENCODE", str(OPENCODE))
    common = ["--env", env_id, "--split", "eval", "--limit", "1", "--max-decisions", str(decisions), "--out",
              str(tmp_path), "--quiet"]
    with ChatServer(AgentCliRouter()) as server:
        code = main(["harness", *common, "--name", "opencode", "--model-proxy", server.base_url, "--agent-cmd",
                     f"{AGENT} {{prompt_file}}", "--agent-home", str(agent_home), "--timeout", "180", *FLAGS])
        requests = list(server.requests)
    assert code in (0, 3)  # 3: stopped at --max-decisions as asked
    played = _steps(tmp_path / "opencode")
    assert len(played) == decisions
    assert all(r["invalid"] is None and r["via"] == "tool" for r in played), [r["invalid"] for r in played]
    # opencode asked for streams; the upstream got plain requests with the tool choice set
    with_tools = [r for r in requests if r.get("tools")]
    assert with_tools and all(r["stream"] is False and r["tool_choice"] == "required" for r in with_tools), [
        (r.get("stream"), r.get("tool_choice")) for r in with_tools]
    # the same decisions as the family's scripted agent makes in process
    assert main(["llm", *common, "--name", "scripted"]) in (0, 3)
    reference = _steps(tmp_path / "scripted")
    assert [r["action"] for r in played] == [r["action"] for r in reference]
