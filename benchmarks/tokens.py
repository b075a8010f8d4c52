"""Prompt tokens per decision of every family's scripted agent, with the current prompts and tool outputs.

Usage (from the repository root)::

    python benchmarks/tokens.py --label after        # writes its section of benchmarks/TOKENS_RESULTS.md
    python benchmarks/tokens.py --episodes 1 --decisions 5 --out /tmp/tokens.md   # smoke run

The defaults (150 episodes, 200 decisions) cover each one-decision family's whole eval plan (audit 100 tasks, QA 150,
options 34) and up to 200 decisions of each multi-decision one; sections before session 4 used
``--episodes 10 --decisions 60``, ten decisions of a one-decision family (its plan's first ten: one kind of question).

For every registered family (``finenvs.tasks.tasks()``; nothing here names a family) its offline scripted agent
plays the first ``--episodes`` episodes of the eval plan through the runner's decision loop
(:func:`finenvs.evaluation.cost.measure_tokens`: ``decide`` in memory, the env stepped by each commit) for at most
``--decisions`` decisions. Each request is counted with tiktoken's ``o200k_base`` (the tool schemas, every message
and its framing: :mod:`finenvs.evaluation.tokens`); a decision's prompt tokens are the sum over its requests (each
re-sends the conversation so far), its cached prefix the leading tokens of each request that repeat the previous
request of the episode byte for byte. The table gives the median per decision and the cached share of all prompt
tokens; ``cached share (run)`` counts the prefix against the previous request of the run instead (the episodes
played one after another, so an episode's first request is compared with the last of the episode before: the tool
schemas, system prompt and instructions a provider's cache still holds). The goal (issue 36): at least 5x fewer prompt tokens per decision than the issue's table, trading under
2,500 and options under 6,000, with the scripted agents' and baselines' scores unchanged (``finenvs bench``), and a
cached share of at least 80%.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from results_file import cpu_name, update_section  # noqa: E402

from finenvs.evaluation.cost import measure_tokens  # noqa: E402
from finenvs.evaluation.tokens import ENCODING, tokenizer_status  # noqa: E402
from finenvs.tasks import tasks  # noqa: E402
from finenvs.text.markdown import md_table  # noqa: E402

RESULTS = HERE / "TOKENS_RESULTS.md"
TITLE = ("# Tokens per decision\n\nWritten by `benchmarks/tokens.py` (see its docstring); one section per labelled "
         "run.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="current", help="the section's name (e.g. before, after)")
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    status = tokenizer_status()
    if status != "ok":
        print(f"tokens.py: no {ENCODING} tokenizer: {status}", file=sys.stderr)
        return 2
    rows = []
    began = time.perf_counter()
    for task in tasks():
        print(f"tokens.py: {task.env_id}", file=sys.stderr, flush=True)
        r = measure_tokens(task, episodes=args.episodes, decisions=args.decisions).record()
        share, run_share = r["cached_share"], r["run_cached_share"]
        rows.append([task.env_id, str(r["episodes"]), str(r["decisions"]), f"{r['median_prompt']:,.0f}",
                     f"{r['mean_prompt']:,.0f}", f"{r['median_completion']:,.0f}",
                     "n/a" if share is None else f"{share:.0%}", "n/a" if run_share is None else f"{run_share:.0%}",
                     f"{r['requests_per_decision']:.1f}", f"{r['tool_calls_per_decision']:.1f}"])
    text = "\n".join([
        f"## {args.label}", "",
        f"`python benchmarks/tokens.py --label {args.label} --episodes {args.episodes} --decisions {args.decisions}`, "
        f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_name()}, Python {platform.python_version()}, "
        f"{time.perf_counter() - began:.0f} s. Tokens: tiktoken `{ENCODING}` (an estimate).", "",
        md_table(["env", "episodes", "decisions", "median prompt", "mean prompt", "median completion",
                  "cached share", "cached share (run)", "requests", "tool calls"], rows), ""])
    if not args.out.exists():
        args.out.write_text(TITLE, encoding="utf-8")
    update_section(args.label, text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
