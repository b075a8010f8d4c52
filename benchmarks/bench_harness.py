"""``finenvs harness`` per decision, every task family, confined and unconfined; and its memory under a flood.

Usage (from the repository root)::

    python benchmarks/bench_harness.py                 # writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_harness.py --decisions 2 --repeats 1 --out /tmp/harness.md

For every registered family, the first episode of its eval plan is run by
:func:`finenvs.evaluation.harness.run_harness` with the test agent program
``tests/harness_agent.py`` (a Python process per decision that connects to the harness's MCP server over
HTTP and plays the family's scripted agent), for at most ``--decisions`` decisions, once in the bubblewrap
sandbox (the default) and once ``unconfined``, alternating the order each repetition. Reported per family:
decisions, format errors (a decision without a commit), tool calls per decision, the median seconds of an
attempt (the program's start, its MCP session and tool calls and the commit) in each mode and their
difference (the sandbox's cost per decision), wall seconds per decision, and whether ``finenvs score``
reproduces the run (``incomplete`` for an episode cut at ``--decisions``).

First, in a fresh state, one confined attempt whose program writes ``--flood-mb`` MiB to stdout before it
commits: the harness's peak resident memory before and after (``ru_maxrss``) and the size of the log it kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from results_file import cpu_name, update_section

from finenvs.evaluation.confine import probe_bwrap
from finenvs.evaluation.harness import HarnessAgent, run_harness
from finenvs.evaluation.llm import RunConfig
from finenvs.evaluation.score import score_run
from finenvs.tasks import tasks

AGENT = Path(__file__).resolve().parents[1] / "tests" / "harness_agent.py"
FLOOD = ("import sys, json, asyncio\nfrom mcp import Client\nchunk = b'x' * (1 << 20)\n"
         "for _ in range(int(sys.argv[2])):\n    sys.stdout.buffer.write(chunk)\nsys.stdout.flush()\n"
         "async def go():\n    async with Client(json.load(open(sys.argv[1]))['mcpServers']['finenvs']['url']) as c:\n"
         "        await c.call_tool('commit_action', {'answer': '1'})\nasyncio.run(go())\n")


def _attempts(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "harness").glob("*/attempt.json"))]


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def flood(megabytes: int, tmp: Path) -> str:
    """One attempt whose program writes ``megabytes`` MiB to stdout, then commits (confined), after one that
    writes nothing (so that the peak before includes every import and the catalog)."""
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "flood.py"
    script.write_text(FLOOD)
    if megabytes:
        flood(0, tmp / "warm-up")
    before = _maxrss_mb()
    here = os.getcwd()
    os.chdir(tmp)  # the program sits in the working directory, which the sandbox shows
    try:
        agent = HarnessAgent(f"{sys.executable} {script.name} {{mcp_config}} {megabytes}", timeout=600)
        summary = run_harness(RunConfig(env_id="FinQA-v0", split="eval", instances=[0]), agent, out=tmp / "runs",
                              name="flood", progress=False)
    finally:
        os.chdir(here)
    (attempt,) = _attempts(summary.run_dir)
    log = next((summary.run_dir / "harness").glob("*/stdout.log"))
    return (f"A confined attempt whose program wrote {attempt['stdout_bytes'] / 2**20:,.0f} MiB to stdout, then "
            f"committed: the harness's peak resident memory {before:,.0f} MiB before, {_maxrss_mb():,.0f} MiB after; "
            f"stdout.log kept {log.stat().st_size / 2**20:.1f} MiB (truncated: {attempt['stdout_truncated']}), "
            f"attempt.json the last {len(attempt['stdout_tail']):,} characters; the decision counted: "
            f"{attempt['committed'] is not None} ({attempt['seconds']:.1f} s).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=5, help="decisions per family and run (default: 5)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per family and mode (default: 3)")
    parser.add_argument("--flood-mb", type=int, default=300, help="MiB the flooding program writes (default: 300)")
    parser.add_argument("--out", type=Path, help="write the Markdown here instead of benchmarks/RESULTS.md")
    args = parser.parse_args()
    sandbox = probe_bwrap()
    if sandbox[0] is None:
        print(f"no sandbox here ({sandbox[1]}): the confined half cannot run", file=sys.stderr)
        return 1
    command = f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}"
    rows, began_all = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        flooded = flood(args.flood_mb, Path(tmp))
        print(flooded, flush=True)
        for task in tasks():
            seconds: dict[bool, list[float]] = {True: [], False: []}
            wall: dict[bool, list[float]] = {True: [], False: []}
            for rep in range(args.repeats):
                for unconfined in ((False, True) if rep % 2 == 0 else (True, False)):
                    config = RunConfig(env_id=task.env_id, split="eval", limit=1, max_decisions=args.decisions)
                    name = f"{task.family}-{rep}-{'open' if unconfined else 'box'}"
                    t0 = time.perf_counter()
                    summary = run_harness(config, HarnessAgent(command, timeout=120, unconfined=unconfined),
                                          out=tmp, name=name, progress=False)
                    elapsed = time.perf_counter() - t0
                    attempts = _attempts(summary.run_dir)
                    seconds[unconfined] += [a["seconds"] for a in attempts]
                    score = score_run(summary.run_dir, write=False)
                    eff = score.efficiency()
                    wall[unconfined].append(elapsed / max(1, eff["decisions"]))
            box, open_ = statistics.median(seconds[False]), statistics.median(seconds[True])
            rows.append(f"| {task.env_id} | {eff['decisions']} | {eff['format_errors']} | "
                        f"{eff['tool_calls_per_decision']:.2f} | {box:.3f} | {open_:.3f} | {1000 * (box - open_):+.0f} | "
                        f"{statistics.median(wall[False]):.2f} | {score.status} |")
            print(rows[-1], flush=True)
    text = "\n".join([
        "### `finenvs harness`: one agent-program invocation per decision, every family, confined and not", "",
        f"`python benchmarks/bench_harness.py --decisions {args.decisions} --repeats {args.repeats} --flood-mb "
        f"{args.flood_mb}` on {cpu_name()} ({sandbox[1]}; {time.perf_counter() - began_all:.0f} s): the first eval "
        "episode of each family, the test agent program (`tests/harness_agent.py`: a Python process per decision, "
        "MCP over HTTP, the family's scripted agent), run in the sandbox and unconfined, alternating. An attempt's "
        "seconds are the program's start (about 1 s of Python imports), its tool calls and its commit; the wall "
        "time per decision adds the env step and the runner.", "",
        "| env | decisions | format errors | tool calls / decision | s / attempt, confined (median) | "
        "s / attempt, unconfined | sandbox cost, ms / decision | wall s / decision, confined | finenvs score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|", *rows, "", flooded, ""])
    if args.out is not None:
        args.out.write_text(text + "\n")
    else:
        update_section("harness", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
