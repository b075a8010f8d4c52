"""One task, every path, one score: a task x path table (``benchmarks/ONE_SCORE_RESULTS.md`` holds the recorded one).

    python benchmarks/one_score_paths.py [--out DIR] [--no-bench] [--no-harness]

Each row is one task answered by one fixed agent, played through every path that runs offline here: the env
directly (``gym.make``), ``finenvs llm`` against a local OpenAI-compatible endpoint (tests/chat_server.py), the
same run folder re-scored by ``finenvs score``, the MCP server (``McpEpisode``), ``finenvs harness`` (an agent
program per decision over MCP), A2A (an agent served over Agent-to-Agent) and ``finenvs bench`` with the
endpoint as its model. Every cell is the task's 0-100 score as that path reports it (a debated row: the debated
score; the bench: the model's section score, or its overall with debate). ``llm --env-kwargs`` is the same llm run
with ``analysis_score="fabpp"`` (FAB++'s methodology/calculation/answer split asked for explicitly).

The agents (``tests/one_score_agent.py``): ``bare`` commits the right answer only; ``structured`` commits it
with the method and the key intermediates (FAB++'s methodology and calculation); ``yield`` commits the structured
right answer, then, challenged by the debate's counter-argument, withdraws it (``{"answer": null}``); ``scripted``
is each family's offline scripted agent (the env path: the ``engine_reference`` policy, the same answer). The script uses only interfaces that exist on both sides of the change, so
the same command measures any commit.

The paths are in ``tests/one_score_paths.py`` and the agents (the harness's agent program too) in
``tests/one_score_agent.py``: the test suite runs the same code, and the harness's sandbox sees tests/.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from one_score_paths import markdown, measure  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--no-harness", action="store_true")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        out = args.out or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        print(markdown(measure(out, bench=not args.no_bench, harness=not args.no_harness)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
