"""What a hostile reply costs the runner: a flood of tool calls in one reply, and one huge reply.

Usage (from the repository root; each case runs in a fresh subprocess so its peak memory is its own)::

    python benchmarks/hostile_replies.py                    # every case, prints a Markdown table
    python benchmarks/hostile_replies.py --case flood:150   # one case
    python benchmarks/hostile_replies.py --out /tmp/r.md    # also write the table to a file

Cases:

* ``flood:N``: an agent that answers every request with N ``get_prices`` calls (no commit), tool budget 8, one
  decision of a FinTrading-v0 episode through :func:`finenvs.evaluation.llm.run_llm`;
* ``flood-openai:N``: the same flood from the test chat server (``tests/chat_server.py``) through the
  OpenAI-compatible path (:class:`~finenvs.evaluation.endpoints.OpenAIChatAgent`);
* ``huge-openai:N``: the OpenAI-compatible path (:class:`~finenvs.evaluation.endpoints.OpenAIChatAgent`) against
  the test chat server (``tests/chat_server.py``) whose every reply is N characters of text ending ``Action: BUY``;
* ``huge-a2a:N``: the same reply from an A2A agent (:func:`finenvs.evaluation.a2a.serve_a2a`,
  :class:`~finenvs.evaluation.a2a.A2AChatAgent`).

The servers run in a child process, so the peak memory reported is the runner's alone. Reported per case: the step's recorded messages, the agent's requests (rounds), the largest request sent
(characters of JSON), the bytes of ``trajectories.jsonl``, how many copies of the huge reply it holds
(occurrences of its 64-character repeated piece over the piece's count in one reply), wall seconds of the run, and peak RSS (``ru_maxrss``) minus the RSS before the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CASES = ("flood:150", "flood:2000", "flood-openai:150", "flood-openai:2000", "huge-openai:4000000", "huge-a2a:4000000",
         "huge-openai:100000000", "huge-a2a:100000000")
MARK = "hostile-reply-mark-" + "z" * 45  # 64 characters, repeated through the huge reply


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Flood:
    """Every reply: ``n`` get_prices calls and no commit."""

    def __init__(self, n: int) -> None:
        self.name, self.n, self.calls, self.largest = "flood", n, 0, 0

    def describe(self) -> dict:
        return {"kind": "flood", "n": self.n}

    def reply(self, messages, tools):
        from finenvs.text.chat import ChatReply, ToolCall

        self.calls += 1
        self.largest = max(self.largest, len(json.dumps(messages)))
        return ChatReply(None, [ToolCall(f"c{self.calls}_{k}", "get_prices", '{"lookback": 5}')
                                for k in range(self.n)], usage={"prompt_tokens": 1, "completion_tokens": 1})

    async def complete(self, messages, tools):
        return self.reply(messages, tools)


class Huge:
    """Every reply: ``n`` characters of text ending ``Action: BUY`` (a scripted agent's ``reply``)."""

    def __init__(self, n: int) -> None:
        self.name, self.n, self.calls, self.largest = "huge", n, 0, 0
        body = (MARK * (n // len(MARK) + 1))[: max(0, n - len("\nAction: BUY"))]
        self.text = body + "\nAction: BUY"

    def describe(self) -> dict:
        return {"kind": "huge", "n": self.n}

    def reply(self, messages, tools):
        from finenvs.text.chat import ChatReply

        self.calls += 1
        self.largest = max(self.largest, len(json.dumps(messages)))
        return ChatReply(self.text, [], usage={"prompt_tokens": 1, "completion_tokens": 1})

    async def complete(self, messages, tools):
        return self.reply(messages, tools)


def _serve(kind: str, n: int, urls: Any, stop: Any, stats: Any) -> None:
    """The child process of :func:`served`: the agent behind a chat-completions or A2A server until ``stop``."""
    sys.path.insert(0, str(ROOT / "tests"))
    agent = Huge(n) if kind.startswith("huge") else Flood(n)
    if kind == "huge-a2a":
        from finenvs.evaluation.a2a import serve_a2a

        with serve_a2a(agent) as url:
            urls.put(url)
            stop.wait()
    else:
        from chat_server import ChatServer

        with ChatServer(agent) as server:
            urls.put(server.base_url)
            stop.wait()
    stats.put((agent.calls, agent.largest))


@contextlib.contextmanager
def served(kind: str, n: int) -> Any:
    """The hostile server in a child process (its memory is not the runner's): yields ``(url, stats)``, ``stats()``
    giving an object with the requests it answered (``calls``) and the largest conversation it got (``largest``)."""
    context = multiprocessing.get_context("fork")
    urls, stats, stop = context.Queue(), context.Queue(), context.Event()
    child = context.Process(target=_serve, args=(kind, n, urls, stop, stats), daemon=True)
    child.start()
    result: dict = {}

    def read() -> Any:
        if not result:
            stop.set()
            result["calls"], result["largest"] = stats.get(timeout=60)
        return types.SimpleNamespace(**result)

    try:
        yield urls.get(timeout=60), read
    finally:
        read()
        child.join(timeout=60)


def run_case(case: str) -> dict:
    """One case in this process; returns its measurements."""
    sys.path.insert(0, str(ROOT / "tests"))
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.runlog import read_trajectories

    kind, n = case.split(":")
    n = int(n)
    config = RunConfig(symbols=["AAPL"], split="eval", max_tool_calls=8, max_decisions=1, backoff_base=0.001,
                       backoff_max=0.01, request_timeout=600, decision_timeout=3600)
    out = Path(tempfile.mkdtemp(prefix="finenvs-hostile-"))
    run_llm(config, Huge(10), out=out, name="warm", progress=False)  # imports, data, the env: outside the figures
    import openai  # noqa: F401  (the clients' libraries too)

    import finenvs.evaluation.a2a  # noqa: F401
    before = _rss_mb()
    began = time.perf_counter()
    if kind == "flood":
        agent = Flood(n)
        summary = run_llm(config, agent, out=out, name="case", progress=False)
        server_agent = agent
    elif kind in ("huge-openai", "flood-openai", "huge-a2a"):
        from finenvs.evaluation.a2a import A2AChatAgent
        from finenvs.evaluation.endpoints import OpenAIChatAgent

        with served(kind, n) as (url, stats):
            agent = A2AChatAgent(url, timeout=600) if kind == "huge-a2a" else OpenAIChatAgent("huge", url, timeout=600)
            summary = run_llm(config, agent, out=out, name="case", progress=False)
            server_agent = stats()
    else:
        raise SystemExit(f"unknown case {case!r}; valid: {CASES}")
    seconds = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    path = summary.run_dir / "trajectories.jsonl"
    records, _ = read_trajectories(path)
    step = next(r for r in records if r.get("type") == "step")
    text = path.read_text(encoding="utf-8")
    return {"case": case, "messages": len(step["messages"]), "requests": server_agent.calls,
            "largest_request_chars": server_agent.largest, "jsonl_bytes": path.stat().st_size,
            "reply_copies": round(text.count(MARK) / max(1, n // len(MARK)), 2),
            "action": step["action"], "invalid": (step["invalid"] or "")[:120],
            "errors": [e[:160] for e in step["errors"]][:3],
            "seconds": round(seconds, 2), "peak_rss_over_start_mb": round(peak - before, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help=f"a case (repeatable); default: {', '.join(CASES)}")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.in_process:
        print(json.dumps(run_case(args.case[0])))
        return
    rows = []
    for case in args.case or CASES:
        done = subprocess.run([sys.executable, __file__, "--in-process", "--case", case], capture_output=True,
                              text=True, cwd=ROOT)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            rows.append({"case": case, "error": done.stderr.strip().splitlines()[-1][:200]})
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr)
    keys = ["case", "messages", "requests", "largest_request_chars", "jsonl_bytes", "reply_copies", "action",
            "seconds", "peak_rss_over_start_mb", "invalid"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" if "error" not in r
              else f"| {r['case']} | failed: {r['error']} |" for r in rows]
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
