"""``finenvs harness`` per decision, every task family: one agent-program invocation per decision over MCP.

Usage (from the repository root)::

    python benchmarks/bench_harness.py                 # writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_harness.py --decisions 2 --out /tmp/harness.md

For every registered family, the first episode of its eval plan is run by
:func:`finenvs.evaluation.harness.run_harness` with the test agent program
``tests/harness_agent.py`` (a Python process per decision that connects to the harness's MCP server over
HTTP and plays the family's scripted agent), for at most ``--decisions`` decisions. Reported per family:
decisions, format errors (a decision without a commit), tool calls per decision, wall seconds per decision
(the program's start, its MCP session and tool calls, the commit and the env step), and whether ``finenvs
score`` reproduces the run (``incomplete`` for an episode cut at ``--decisions``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from results_file import cpu_name, update_section

from finenvs.evaluation.harness import HarnessAgent, run_harness
from finenvs.evaluation.llm import RunConfig
from finenvs.evaluation.score import score_run
from finenvs.tasks import tasks

AGENT = Path(__file__).resolve().parents[1] / "tests" / "harness_agent.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=5, help="decisions per family (default: 5)")
    parser.add_argument("--out", type=Path, help="write the Markdown here instead of benchmarks/RESULTS.md")
    args = parser.parse_args()
    command = f"{sys.executable} {AGENT} {{prompt_file}} {{mcp_config}}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks():
            config = RunConfig(env_id=task.env_id, split="eval", limit=1, max_decisions=args.decisions)
            began = time.perf_counter()
            summary = run_harness(config, HarnessAgent(command, timeout=120), out=tmp, name=task.family,
                                  progress=False)
            seconds = time.perf_counter() - began
            score = score_run(summary.run_dir, write=False)
            eff = score.efficiency()
            n = max(1, eff["decisions"])
            rows.append(f"| {task.env_id} | {eff['decisions']} | {eff['format_errors']} | "
                        f"{eff['tool_calls_per_decision']:.2f} | {seconds / n:.2f} | {score.status} |")
            print(rows[-1], flush=True)
    text = "\n".join([
        "## `finenvs harness`: one agent-program invocation per decision, every family", "",
        f"`python benchmarks/bench_harness.py --decisions {args.decisions}` on {cpu_name()}: the first eval "
        "episode of each family, the test agent program (`tests/harness_agent.py`: a Python process per decision, "
        "MCP over HTTP, the family's scripted agent). Seconds per decision are wall time, the program's start "
        "(about 1 s of Python imports) included.", "",
        "| env | decisions | format errors | tool calls / decision | s / decision | finenvs score |",
        "|---|---:|---:|---:|---:|---|", *rows, ""])
    if args.out is not None:
        args.out.write_text(text + "\n")
    else:
        update_section("harness", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
