"""Latency of the LLM-agent layer: tool calls, text-env steps, a scripted decision, an MCP round trip.

Usage (from the repository root)::

    python benchmarks/bench_tools.py            # full run; writes benchmarks/TOOLS_RESULTS.md
    python benchmarks/bench_tools.py --quick    # smoke run, prints only

What is timed (median / p90 over ``--reps`` calls, ``time.perf_counter``):

1. every tool through ``ToolBox.call`` (JSON parsing and schema check of the
   arguments, the date-locked read, the output cap), at decision days spread
   over AAPL's 2025 window (where news and filings are visible);
2. one decision of the text env (``step("...Action: BUY")``: parse, env step,
   next prompt) beside the base env's ``step(2)``;
3. one whole decision of the offline scripted agent through the runner's loop
   (two chat turns, two tool calls, the commit, the trajectory record kept in memory);
4. one tool call over MCP with the SDK's in-process client (the protocol's cost).

No peer library offers date-locked agent tools, so there is no side-by-side
comparison here; an LLM's own latency (hundreds of milliseconds to seconds per
turn) dwarfs these numbers, which is the point of measuring them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import finenvs
from finenvs.tools import ToolBox

HERE = Path(__file__).resolve().parent
CALLS = [
    ("get_state", {}),
    ("get_prices", {"lookback": 20}),
    ("get_prices", {"lookback": 250}),
    ("get_indicators", {"names": ["sma", "ema", "rsi", "macd", "bollinger", "atr", "realized_vol"]}),
    ("list_news", {"lookback_days": 7}),
    ("get_news", None),  # the id comes from list_news
    ("list_filings", {}),
    ("get_filing_section", {"id": "AAPL-10-K-2024-11-01", "section": "item_1a_risk_factors", "max_chars": 4000}),
    ("get_rate", {}),
    ("commit_action", {"action": "BUY", "reasoning": "trend"}),
]


def quantiles(samples: list[float]) -> tuple[float, float]:
    xs = sorted(samples)
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.9 * len(xs)))]


def bench_tools(reps: int) -> list[tuple[str, float, float, int]]:
    env = gym.make("FinTrading-v0", symbol="AAPL", split=None, start="2025-02-03", end="2025-07-25")
    env.reset(seed=0)
    box = ToolBox(env)
    rng = np.random.default_rng(0)
    times: dict[str, list[float]] = {}
    sizes: dict[str, list[int]] = {}
    n_days = env.unwrapped.state.end - env.unwrapped.state.start
    per_day = max(1, reps // n_days)
    done = 0
    while done < reps:
        news_id = None
        for name, args in CALLS:
            label = name if name != "get_prices" else f"get_prices(lookback={args['lookback']})"
            if name == "get_news":
                if news_id is None:
                    continue
                args = {"id": news_id}
            for _ in range(per_day):
                t0 = time.perf_counter()
                result = box.call(name, args)
                times.setdefault(label, []).append(time.perf_counter() - t0)
                sizes.setdefault(label, []).append(len(result.text()))
            if name == "list_news" and result.data.get("items"):
                news_id = result.data["items"][0]["id"]
        done += per_day
        _, _, term, trunc, _ = env.step(int(rng.integers(3)))
        if term or trunc:
            env.reset(seed=0)
    return [(label, *quantiles(ts), int(np.median(sizes[label]))) for label, ts in times.items()]


def bench_text_step(reps: int) -> list[tuple[str, float, float]]:
    base = gym.make("FinTrading-v0", symbol="AAPL", split="eval")
    text = gym.make("FinTrading-text-v0", symbol="AAPL", split="eval")
    out: dict[str, list[float]] = {"base env step(2)": [], 'text env step("...Action: BUY")': []}
    base.reset(seed=0)
    text.reset(seed=0)
    reply = "Momentum is up and volatility is moderate.\nAction: BUY"
    for _ in range(reps):
        t0 = time.perf_counter()
        _, _, t1_, t2_, _ = base.step(2)
        out["base env step(2)"].append(time.perf_counter() - t0)
        if t1_ or t2_:
            base.reset(seed=0)
        t0 = time.perf_counter()
        _, _, t1_, t2_, _ = text.step(reply)
        out['text env step("...Action: BUY")'].append(time.perf_counter() - t0)
        if t1_ or t2_:
            text.reset(seed=0)
    return [(k, *quantiles(v)) for k, v in out.items()]


def bench_decision(reps: int) -> list[tuple[str, float, float]]:
    from finenvs.evaluation.llm import RunConfig, SessionPort, decide
    from finenvs.evaluation.session import EpisodeSession
    from finenvs.tasks import EpisodeSpec
    from finenvs.tasks.trading.agent import ScriptedTradingAgent

    session = EpisodeSession(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": None,
                                                             "start": "2025-02-03", "end": "2025-07-25"}, 0))
    agent, config, port = ScriptedTradingAgent(), RunConfig(), SessionPort(session)
    samples = []

    async def loop() -> None:
        nonlocal session, port
        for _ in range(reps):
            t0 = time.perf_counter()
            decision = await decide(agent, port, session.prompt, config)
            session.commit(decision.parsed, messages=decision.messages)
            samples.append(time.perf_counter() - t0)
            if session.done:
                session = EpisodeSession(session.spec)
                port = SessionPort(session)

    asyncio.run(loop())
    return [("scripted-agent decision (2 chat turns, 2 tools, commit, record)", *quantiles(samples))]


def bench_mcp(reps: int, tmp: Path) -> list[tuple[str, float, float]]:
    try:
        from mcp import Client
    except ImportError:
        return [("MCP tool call (in-process client)", float("nan"), float("nan"))]
    from finenvs.evaluation.mcp_server import McpEpisode, build_server
    from finenvs.tasks import EpisodeSpec

    episode = McpEpisode(EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "split": "eval"}, 0), out=tmp,
                         name=f"bench-{os.getpid()}-{time.time_ns()}")
    samples: list[float] = []

    async def loop() -> None:
        async with Client(build_server(episode)) as client:
            for _ in range(reps):
                t0 = time.perf_counter()
                await client.call_tool("get_prices", {"lookback": 20})
                samples.append(time.perf_counter() - t0)

    asyncio.run(loop())
    return [("MCP get_prices(lookback=20), in-process client", *quantiles(samples))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions; print only")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="write the report here (default: TOOLS_RESULTS.md for a full run)")
    args = parser.parse_args()
    reps = 60 if args.quick else args.reps
    began = time.perf_counter()
    load_before = os.getloadavg()
    print("tools ...", file=sys.stderr)
    tools = bench_tools(reps)
    print("text env ...", file=sys.stderr)
    steps = bench_text_step(reps * 5)
    print("decisions ...", file=sys.stderr)
    decisions = bench_decision(max(20, reps // 4))
    print("mcp ...", file=sys.stderr)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        mcp_rows = bench_mcp(max(20, reps // 4), Path(tmp))
    load_after = os.getloadavg()

    def us(x: float) -> str:
        return "n/a" if x != x else f"{x * 1e6:,.0f}"

    lines = [
        "# Agent-layer latency results",
        "",
        "- Command: `python benchmarks/bench_tools.py`" + (" --quick" if args.quick else ""),
        f"- Date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC; wall time "
        f"{time.perf_counter() - began:.0f} s",
        f"- Machine: {platform.processor() or platform.machine()}; {os.cpu_count()} logical CPUs; "
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (shared machine: expect noise)",
        f"- Python {platform.python_version()}; finenvs {finenvs.__version__}; gymnasium {gym.__version__}",
        f"- Repetitions: {reps} per tool (spread over the decision days of AAPL 2025-02-03..2025-07-25), "
        f"{reps * 5} text/base steps, {max(20, reps // 4)} decisions and MCP calls",
        "",
        "## Tool calls through `ToolBox.call`",
        "",
        "| tool | median µs | p90 µs | median output chars |",
        "|---|---:|---:|---:|",
        *[f"| `{name}` | {us(med)} | {us(p90)} | {size:,} |" for name, med, p90, size in tools],
        "",
        "## Decisions",
        "",
        "| what | median µs | p90 µs |",
        "|---|---:|---:|",
        *[f"| {name} | {us(med)} | {us(p90)} |" for name, med, p90 in steps + decisions + mcp_rows],
        "",
    ]
    report = "\n".join(lines)
    print(report)
    target = args.out or (None if args.quick else HERE / "TOOLS_RESULTS.md")
    if target is not None:
        Path(target).write_text(report)
        print(f"written to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
