"""A real agent CLI (opencode) through ``finenvs harness`` and the model proxy, every task family, offline.

Usage (from the repository root; opencode on PATH, or ``OPENCODE=/path/to/opencode``)::

    python benchmarks/bench_agent_cli.py                   # writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_agent_cli.py --decisions 2 --families FinTrading-v0 FinAudit-v0 --out /tmp/cli.md

The "model" is ``tests/chat_server.py``'s scripted model for an agent CLI
(:class:`chat_server.AgentCliRouter`: each family's offline scripted agent, answering with the right tool calls)
behind a plain chat-completions server on 127.0.0.1 that does not stream. For each family the real command runs::

    finenvs harness --env ENV --limit 1 --max-decisions N --model-proxy SERVER_URL \\
        --agent-cmd 'examples/opencode/agent.sh {prompt_file}' --agent-home HOME --quiet

(confined by bubblewrap; ``HOME`` is one folder kept over the whole run, so opencode installs its config
dependencies once; ``--fresh-home`` gives every attempt an empty home instead). Reported per family: decisions
committed, attempts (an attempt without a commit is tried again), tool calls per decision, the median seconds of an
attempt (opencode's start, its MCP session, the model turns through the proxy, the commit, its exit), wall seconds
per decision of the whole command, and ``finenvs score``'s verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from chat_server import AgentCliRouter, ChatServer  # noqa: E402
from results_file import cpu_name, update_section  # noqa: E402

from finenvs.evaluation.score import score_run  # noqa: E402
from finenvs.tasks import tasks  # noqa: E402

AGENT = ROOT / "examples" / "opencode" / "agent.sh"


def opencode_version(executable: str) -> str:
    proc = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    return proc.stdout.strip() or "unknown"


def run_family(env_id: str, decisions: int, server: str, home: Path | None, out: Path) -> dict:
    command = [sys.executable, "-m", "finenvs.cli", "harness", "--env", env_id, "--split", "eval", "--limit", "1",
               "--max-decisions", str(decisions), "--model-proxy", server, "--agent-cmd",
               f"{AGENT} {{prompt_file}}", "--timeout", "180", "--out", str(out), "--name", env_id, "--quiet"]
    if home is not None:
        command += ["--agent-home", str(home)]
    began = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    wall = time.perf_counter() - began
    run_dir = out / env_id
    attempts = [json.loads(p.read_text()) for p in sorted((run_dir / "harness").glob("*/attempt.json"))]
    committed = [a for a in attempts if a["committed"] is not None]
    score = score_run(run_dir, write=False)
    return {"env": env_id, "exit": proc.returncode, "decisions": len(committed), "attempts": len(attempts),
            "tool_calls": statistics.mean(a["tool_calls"] for a in committed) if committed else float("nan"),
            "attempt_s": statistics.median(a["seconds"] for a in committed) if committed else float("nan"),
            "wall_s": wall / max(1, len(committed)), "score": score.status,
            "outcomes": sorted({a["outcome"] for a in attempts})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=3, help="decisions per family (default: 3)")
    parser.add_argument("--families", nargs="*", help="env ids (default: every registered family)")
    parser.add_argument("--fresh-home", action="store_true", help="an empty HOME per attempt (no --agent-home)")
    parser.add_argument("--out", type=Path, help="write the Markdown here instead of benchmarks/RESULTS.md")
    args = parser.parse_args()
    executable = os.environ.get("OPENCODE") or shutil.which("opencode")
    if not executable:
        print("opencode is not installed: npm i -g opencode-ai (or set OPENCODE)", file=sys.stderr)
        return 1
    os.environ["OPENCODE"] = executable
    version = opencode_version(executable)
    rows, began_all = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ChatServer(AgentCliRouter()) as server:
        home = None if args.fresh_home else Path(tmp) / "agent-home"
        if home is not None:
            home.mkdir()
        for env_id in args.families or [t.env_id for t in tasks()]:
            r = run_family(env_id, args.decisions, server.base_url, home, Path(tmp) / "runs")
            rows.append(f"| {r['env']} | {r['decisions']} | {r['attempts']} | {r['tool_calls']:.2f} | "
                        f"{r['attempt_s']:.2f} | {r['wall_s']:.2f} | {', '.join(r['outcomes'])} | {r['score']} |")
            print(rows[-1], flush=True)
    home_note = ("every attempt with an empty private HOME (opencode installs its config dependencies from the npm "
                 "registry each time)" if args.fresh_home else "one `--agent-home` folder kept over the run")
    flags = " ".join(filter(None, [f"--decisions {args.decisions}",
                                   "--families " + " ".join(args.families) if args.families else "",
                                   "--fresh-home" if args.fresh_home else ""]))
    text = "\n".join([
        "### A real agent CLI through `finenvs harness`: opencode, every family, offline", "",
        f"`python benchmarks/bench_agent_cli.py {flags}` on {cpu_name()} (opencode {version}; "
        f"{time.perf_counter() - began_all:.0f} s): `finenvs harness --model-proxy` with "
        "`examples/opencode/agent.sh` as the agent program, confined, against `tests/chat_server.py`'s scripted model "
        f"for an agent CLI (a plain server that does not stream), the first eval episode of each family; {home_note}. "
        "An attempt's seconds are opencode's start, its MCP session, the model turns through the proxy, the commit and "
        "its exit; the wall time per decision is the whole command's.", "",
        "| env | decisions committed | attempts | tool calls / decision | s / attempt (median) | wall s / decision | "
        "attempt outcomes | finenvs score |",
        "|---|---:|---:|---:|---:|---:|---|---|", *rows, ""])
    if args.out is not None:
        args.out.write_text(text + "\n")
    else:
        update_section("agent-cli-fresh-home" if args.fresh_home else "agent-cli", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
