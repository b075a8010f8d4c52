"""Time of a finenvs package's reply parsers on the flood corpus, one family per process.

Written for the ``parse-before`` section of RESULTS.md: run it with ``PYTHONPATH`` pointing at an older
finenvs package (its ``wrappers``, ``scoring``, ``baselines`` and ``envs_data`` copied inside it), under a
timeout, since the old parsers are quadratic or worse::

    PYTHONPATH=/tmp/oldpkg timeout 300 python benchmarks/parse_before.py trading

Prints one JSON line (worst reply, its time, the replies that raised); each reply's time goes to stderr.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import gymnasium as gym  # noqa: E402
from hostile import floods  # noqa: E402

from finenvs.tasks import tasks  # noqa: E402


def main(family: str) -> dict:
    spec = next(s for s in tasks() if s.family == family)
    env = gym.make(spec.text_env_id)
    env.reset(seed=0)
    while not hasattr(env, "protocol"):
        env = env.env
    protocol = env.protocol
    worst, raised = (0.0, ""), []
    for name, text in floods(protocol.max_chars):
        if len(text) > protocol.max_chars:
            continue
        began = time.perf_counter()
        try:
            protocol.parse_text(text)
        except Exception as exc:  # what the old parsers did on this reply
            raised.append(f"{name}: {type(exc).__name__}")
        elapsed = time.perf_counter() - began
        worst = max(worst, (elapsed, name))
        print(f"{name} {elapsed * 1e3:.1f}", file=sys.stderr, flush=True)
    return {"family": family, "worst_ms": round(worst[0] * 1e3, 1), "worst": worst[1], "raised": raised}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
