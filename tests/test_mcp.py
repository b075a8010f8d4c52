"""The MCP server, through the official SDK's client: in process and over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from helpers import SUBPROCESS_TIMEOUT

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

from finenvs.evaluation.llm import drive_mcp_episode  # noqa: E402
from finenvs.evaluation.mcp_server import McpEpisode, build_server  # noqa: E402
from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.evaluation.score import score_run  # noqa: E402
from finenvs.tasks import EpisodeSpec  # noqa: E402
from finenvs.tasks.trading.agent import ScriptedTradingAgent  # noqa: E402
from finenvs.tasks.trading.protocol import TRADING_PROTOCOL  # noqa: E402

MARKET_TOOLS = {"get_state", "get_prices", "get_indicators", "list_news", "get_news", "list_filings",
                "get_filing_section", "get_rate"}


_OPEN: list[McpEpisode] = []


def episode(tmp_path, symbol="TSLA", **kwargs):
    ep = McpEpisode(EpisodeSpec(0, "FinTrading-v0", {"symbol": symbol, "split": "eval", **kwargs}, 0),
                    out=tmp_path, name="mcp")
    _OPEN.append(ep)
    return ep


@pytest.fixture(autouse=True)
def _close_episodes():
    """Close every episode a test opened (an episode left mid-way keeps its trajectory file open)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def run(coro):
    return asyncio.run(coro)


def test_lists_the_task_tools_with_schemas(tmp_path):
    ep = episode(tmp_path)

    async def go():
        async with Client(build_server(ep)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in run(go())}
    assert set(tools) == MARKET_TOOLS | {"get_observation", "commit_action"}
    assert tools["commit_action"].input_schema["properties"]["action"]["enum"] == ["SELL", "HOLD", "BUY"]
    assert tools["get_indicators"].input_schema["required"] == ["names"]
    assert all(t.description for t in tools.values())


def test_tools_read_as_of_the_clock_and_look_ahead_is_refused_and_counted(tmp_path):
    ep = episode(tmp_path)

    async def go():
        async with Client(build_server(ep)) as client:
            obs = (await client.call_tool("get_observation", {})).structured_content
            ahead = await client.call_tool("get_prices", {"start": "2026-01-01", "end": "2026-12-31"})
            bad = await client.call_tool("get_prices", {"lookback": "ten"})
            unknown = await client.call_tool("get_weather", {})
            commit = await client.call_tool("commit_action", {"action": "BUY", "reasoning": "test"})
            after = await client.call_tool("get_prices", {"lookback": 1})
            return obs, ahead, bad, unknown, commit, after

    obs, ahead, bad, unknown, commit, after = run(go())
    assert obs["date"] == "2026-01-02" and "Symbol: TSLA" in obs["observation"]
    rows = ahead.structured_content["rows"]
    assert not ahead.is_error and [r[0] for r in rows] == ["2026-01-02"]  # nothing after the clock
    assert bad.is_error and "must be of type integer" in bad.structured_content["error"]
    assert unknown.is_error and "unknown tool" in unknown.structured_content["error"]
    c = commit.structured_content
    assert c["accepted"] and c["action"] == "BUY" and not c["done"]
    assert "look_ahead_attempts" not in c  # reported with the results, never mid-episode
    assert c["next_date"] == "2026-01-05" and "Position: LONG" in c["observation"]
    assert after.structured_content["rows"][-1][0] == "2026-01-05"  # the clock moved only on commit
    [step] = [r for r in read_trajectories(ep.files.trajectories)[0] if r["type"] == "step"]
    assert step["look_ahead"] == 1 and len(step["tool_calls"]) == 3 and step["reasoning"] == "test"


def test_an_invalid_commit_takes_the_default_and_is_recorded(tmp_path):
    ep = episode(tmp_path)

    async def go():
        async with Client(build_server(ep)) as client:
            return (await client.call_tool("commit_action", {"action": "MOON"})).structured_content

    reply = run(go())
    assert reply["accepted"] is False and reply["action"] == "HOLD" and "unknown action" in reply["invalid"]


def test_a_whole_episode_is_committed_scored_and_closed(tmp_path):
    ep = episode(tmp_path, symbol="AAPL")

    async def go():
        async with Client(build_server(ep)) as client:
            replies = await drive_mcp_episode(ScriptedTradingAgent(), client, TRADING_PROTOCOL)
            late = await client.call_tool("get_prices", {"lookback": 1})
            return replies, late

    replies, late = run(go())
    last = replies[-1]
    assert len(replies) == 60 and last["done"] and last["reproduced_offline"] is True
    assert last["look_ahead_attempts"] == 0
    assert late.is_error and "episode is over" in late.structured_content["error"]
    score = json.loads((tmp_path / "mcp" / "score.json").read_text())
    assert score["reproduced"] is True and score["episodes"][0]["steps"] == 60
    metrics = score["episodes"][0]["metrics"]
    assert metrics["standard"]["cumulative_return"] == pytest.approx(metrics["final_equity"] - 1.0)
    assert last["metrics"]["cumulative_return"] == metrics["standard"]["cumulative_return"]
    assert json.loads((tmp_path / "mcp" / "run.json").read_text())["status"] == "complete"
    assert score_run(tmp_path / "mcp").reproduced


def test_stdio_server_from_the_cli_plays_a_whole_episode(tmp_path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "finenvs.cli", "mcp", "--env", "FinTrading-v0", "--symbol", "NVDA", "--split", "eval",
              "--out", str(tmp_path), "--name", "stdio"],
        env=dict(os.environ),
    )

    async def go():
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            replies = await drive_mcp_episode(ScriptedTradingAgent(), client, TRADING_PROTOCOL)
            return names, replies

    names, replies = run(go())
    assert "commit_action" in names and replies[-1]["done"] and replies[-1]["reproduced_offline"]
    steps = [r for r in read_trajectories(tmp_path / "stdio" / "trajectories.jsonl")[0] if r["type"] == "step"]
    assert len(steps) == len(replies) == 60
    assert score_run(tmp_path / "stdio").reproduced


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "FinNope-v0"], "unknown env 'FinNope-v0'"),
    (["--env", "FinAudit-v0", "--instance", "100"], "instances [100] are out of range"),
])
def test_a_refused_episode_reaches_the_mcp_client_as_an_error_result(tmp_path, args, message):
    """An MCP client that starts ``finenvs mcp`` with bad arguments gets the reason, not a closed connection."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "finenvs.cli", "mcp", *args, "--out",
                                                                 str(tmp_path)], env=dict(os.environ))

    async def go():
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("get_observation", {})

    names, result = run(go())
    assert names == ["get_observation"] and result.is_error
    assert message in result.structured_content["error"] and not any(tmp_path.iterdir())


def test_print_config_gives_a_ready_mcp_json_entry(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "finenvs.cli", "mcp", "--env", "FinQA-v0", "--instance", "3",
                           "--print-config", "--out", str(tmp_path)], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(proc.stdout)["mcpServers"]["finenvs-qa"]
    assert os.path.isabs(entry["command"]) and entry["args"][:3] == ["mcp", "--env", "FinQA-v0"]
    assert entry["args"][entry["args"].index("--instance") + 1] == "3" and not any(tmp_path.iterdir())


def test_a_task_without_a_date_replies_with_a_null_date(tmp_path):
    """FinQA-v0's analytical questions have no date: the replies carry null, not the string "None"."""
    from finenvs.tasks import Selection, task_of

    task = task_of("FinQA-v0")
    spec = next(e for e in task.plan(Selection(split="eval")) if e.env_kwargs.get("topic") or e.index >= 100)
    ep = McpEpisode(spec, out=tmp_path, name="qa")
    _OPEN.append(ep)

    async def go():
        async with Client(build_server(ep)) as client:
            seen = (await client.call_tool("get_observation", {})).structured_content
            done = (await client.call_tool("commit_action", {"answer": "1"})).structured_content
            return seen, done

    seen, done = run(go())
    assert seen["date"] is None and done["date"] is None and done["done"] is True
    (step,) = [r for r in read_trajectories(tmp_path / "qa" / "trajectories.jsonl")[0] if r.get("type") == "step"]
    assert step["date"] == ""


def test_an_internal_error_and_a_refusal_show_no_path(tmp_path):
    """A bug inside a tool call, or an episode that cannot start, reaches the client without a file-system path."""

    class Crashing:
        max_result_chars = 8_000
        instructions = "test"

        def tool_list(self):
            return [{"name": "boom", "description": "raises", "input_schema": {"type": "object", "properties": {}}}]

        def call(self, name, arguments):
            raise FileNotFoundError(f"[Errno 2] No such file or directory: '{tmp_path}/secret/prices.parquet'")

    async def go(server):
        async with Client(server) as client:
            return await client.call_tool("boom" if server is crashing else "get_observation", {})

    crashing = build_server(Crashing())
    refused = build_server(None, error=f"cannot read {tmp_path}/user/prices.csv row 3")
    for server in (crashing, refused):
        result = run(go(server))
        text = result.structured_content["error"]
        assert result.is_error and str(tmp_path) not in text and "<path>" in text, text
