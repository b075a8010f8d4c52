"""Worst-case time to read one hostile reply, every text env (target: under 10 ms at the length limit).

Usage (from the repository root)::

    python benchmarks/bench_parse.py            # ~1 min; writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_parse.py --quick    # a smoke run; prints only unless --out is given

For every registered family (``finenvs.tasks.tasks()``), the protocol of its text env reads each reply of an
adversarial corpus: the named floods of ``tests/hostile.py`` (deep nesting, huge numbers, marker/brace/quote/
fence floods, lines of lead characters, ...) cut to the protocol's own length limit, plus ``--soups``
seeded soups of the same fragments at the limit. Per reply the time of ``protocol.parse_text(reply)`` and of
``protocol.parse_commit(reply)`` is the median of ``--reps`` runs (``time.perf_counter``); the table gives the
worst reply per family and the median over the corpus. Beside it, the peer: CPython's ``json.loads`` on the
same text (C, linear; it raises on most of the corpus, which is timed too), the floor of any reader that
looks at every character. Tool calls are timed the same way: each tool of the family's toolset given each
corpus text as its arguments.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import gymnasium as gym  # noqa: E402
from hostile import _FRAGMENTS, floods  # noqa: E402
from results_file import RESULTS, cpu_name, update_section  # noqa: E402

import finenvs  # noqa: E402,F401
from finenvs.tasks import tasks  # noqa: E402

TARGET_MS = 10.0


def soups(limit: int, count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        parts, size = [], 0
        while size < limit:
            piece = rng.choice(_FRAGMENTS) * rng.choice((1, 1, 2, 8, 64))
            parts.append(piece)
            size += len(piece)
        out.append((f"soup-{i}", "".join(parts)[:limit]))
    return out


def timed(fn, reps: int) -> float:
    try:  # one untimed call: lazy imports and first-call caches are not the reply's cost
        fn()
    except Exception:
        pass
    samples = []
    for _ in range(reps):
        began = time.perf_counter()
        try:
            fn()
        except Exception:  # the peer (json.loads) raises on most of the corpus; finenvs must not (tests prove it)
            pass
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def protocol_of(env):
    while not hasattr(env, "protocol"):
        env = env.env
    return env


def measure(reps: int, n_soups: int, tool_texts: int) -> list[dict]:
    rows = []
    for spec in tasks():
        env = gym.make(spec.text_env_id)
        env.reset(seed=0)
        wrapper = protocol_of(env)
        protocol = wrapper.protocol
        corpus = [(n, t) for n, t in floods(protocol.max_chars) if len(t) <= protocol.max_chars]
        corpus += soups(protocol.max_chars, n_soups)
        parse = [(timed(lambda t=t, p=protocol: p.parse_text(t), reps), n) for n, t in corpus]
        commit = [(timed(lambda t=t, p=protocol: p.parse_commit(t), reps), n) for n, t in corpus]
        peer = [(timed(lambda t=t: json.loads(t), reps), n) for n, t in corpus]
        tools = []
        for name in wrapper.toolbox.tools:
            for label, text in corpus[:tool_texts]:
                tools.append((timed(lambda name=name, text=text, w=wrapper: w.call_tool(name, text), 1), f"{name}/{label}"))
        worst = max(parse)
        rows.append({
            "family": spec.family, "env_id": spec.text_env_id, "limit": protocol.max_chars, "replies": len(corpus),
            "parse_worst_ms": worst[0] * 1e3, "parse_worst_reply": worst[1],
            "parse_median_ms": statistics.median(t for t, _ in parse) * 1e3,
            "commit_worst_ms": max(commit)[0] * 1e3, "peer_worst_ms": max(peer)[0] * 1e3,
            "tool_worst_ms": max(tools)[0] * 1e3, "tool_worst": max(tools)[1], "tool_calls": len(tools),
        })
        env.close()
        print(f"{spec.family:<11} parse worst {worst[0] * 1e3:7.2f} ms ({worst[1]}), commit worst "
              f"{max(commit)[0] * 1e3:6.2f} ms, json.loads worst {max(peer)[0] * 1e3:6.2f} ms, "
              f"tool worst {max(tools)[0] * 1e3:6.2f} ms ({max(tools)[1]})", flush=True)
    return rows


def render(rows: list[dict], args: argparse.Namespace, seconds: float) -> str:
    lines = [
        "## Hostile-reply parse time, every text env",
        "",
        f"`python benchmarks/bench_parse.py{' --quick' if args.quick else ''}` — {_dt.date.today()}, "
        f"{cpu_name()}, Python {platform.python_version()}, {seconds:.0f} s. Median of {args.reps} runs per reply; "
        f"the corpus is tests/hostile.py's floods at each protocol's length limit plus {args.soups} seeded "
        f"fragment soups. Target: worst reply under {TARGET_MS:g} ms.",
        "",
        "| env | limit (chars) | replies | parse_text worst (ms) | worst reply | parse_text median (ms) | "
        "parse_commit worst (ms) | json.loads worst (ms, peer) | tool call worst (ms) | meets target |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ok = max(r["parse_worst_ms"], r["commit_worst_ms"]) < TARGET_MS
        lines.append(f"| {r['env_id']} | {r['limit']:,} | {r['replies']} | {r['parse_worst_ms']:.2f} | "
                     f"{r['parse_worst_reply']} | {r['parse_median_ms']:.3f} | {r['commit_worst_ms']:.2f} | "
                     f"{r['peer_worst_ms']:.2f} | {r['tool_worst_ms']:.2f} ({r['tool_worst']}) | "
                     f"{'yes' if ok else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--soups", type=int, default=40)
    parser.add_argument("--tool-texts", type=int, default=12, help="corpus texts sent to each tool")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.soups, args.tool_texts = 1, 4, 2
    began = time.perf_counter()
    rows = measure(args.reps, args.soups, args.tool_texts)
    text = render(rows, args, time.perf_counter() - began)
    print(text)
    out = args.out if args.out is not None else (None if args.quick else RESULTS)
    if out is not None:
        if out == RESULTS:
            update_section("parse", text)
        else:
            out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
