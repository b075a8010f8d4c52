"""Vector-env throughput: FinTradingVectorEnv beside gymnasium's SyncVectorEnv and the single env.

Run from the repository root::

    python benchmarks/bench_vector.py            # full run (~2-3 min); writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_vector.py --quick    # smoke run (seconds); prints only unless --out is given

What it measures, in one process, interleaved so the numbers are comparable:

1. Shipped data (every symbol of the core dataset, ``split="train"``, whole
   train windows, next-step autoreset): env-steps/s of
   ``FinTradingVectorEnv(N)``, of ``gymnasium.vector.SyncVectorEnv`` over N
   ``gym.make("FinTrading-v0")`` and, as the floor, of one
   ``gym.make("FinTrading-v0")`` stepped N times per batch, at N = 1, 64, 1024.
2. The same with ``source="synthetic"`` (GBM, 252-decision episodes): every
   reset simulates a fresh path, which both vector envs pay alike.
3. With stable-baselines3 installed: ``to_sb3(FinTradingVectorEnv(N))`` beside
   SB3's ``DummyVecEnv`` of N single envs (SB3's own vector interface).

Protocol: actions are pre-generated random integers (seeded ``numpy``
Generator), the same for every env; each measurement steps a fixed number of
env-steps (resets inside the timer: a vector env resets sub-envs within
``step``); repetitions interleave the contenders in a reshuffled order; we
report the median and min of env-steps/s over repetitions and the median of
per-repetition ratios. ``time.perf_counter``; GC on. Every number in the
report is measured by this run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata as _md
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gymnasium as gym  # noqa: E402
from results_file import RESULTS, cpu_name, update_section  # noqa: E402

import finenvs  # noqa: E402,F401  (registers FinTrading-v0)
from finenvs.tasks.trading.vector import FinTradingVectorEnv  # noqa: E402

perf_counter = time.perf_counter
SIZES = (1, 64, 1024)
TARGET_STEPS_PER_S = 5_000_000
TARGET_RATIO = 20.0


class Contender:
    """One env (or vector env) and how to step it for ``n`` env-steps."""

    def __init__(self, name: str, n_envs: int, build: Callable[[], Any], kind: str) -> None:
        self.name, self.n_envs, self.kind = name, n_envs, kind
        self.env = build()
        self.rates: list[float] = []
        if kind in ("vector", "single"):
            self.env.reset(seed=0)
        else:  # an SB3 VecEnv
            self.env.seed(0)
            self.env.reset()

    def run(self, actions: np.ndarray, batches: int) -> float:
        """Step ``batches`` batches of ``n_envs`` env-steps; env-steps per second."""
        env, n = self.env, self.n_envs
        rows = actions.shape[0]
        if self.kind in ("vector", "sb3"):
            step = env.step
            t0 = perf_counter()
            for k in range(batches):
                step(actions[k % rows, :n])
            dt = perf_counter() - t0
        else:  # one env stepped n times per batch, reset at episode ends
            flat = actions[:, 0].tolist()
            step, reset = env.step, env.reset
            t0 = perf_counter()
            i = 0
            for _ in range(batches * n):
                _, _, term, trunc, _ = step(flat[i])
                i = i + 1 if i + 1 < rows else 0
                if term or trunc:
                    reset()
            dt = perf_counter() - t0
        rate = batches * n / dt
        self.rates.append(rate)
        return rate


def version(dist: str) -> str:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        return "not installed"


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def ratio(x: float) -> str:
    return f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def paired(a: Contender, b: Contender) -> float:
    return med([x / y for x, y in zip(a.rates, b.rates, strict=True)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run; prints only unless --out is given")
    p.add_argument("--out", type=Path, default=None, help="results file (default: its section of benchmarks/RESULTS.md)")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 7; quick 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-synthetic", action="store_true", help="skip part 2")
    p.add_argument("--no-sb3", action="store_true", help="skip part 3")
    args = p.parse_args(argv)
    quick = args.quick
    reps = args.reps or (2 if quick else 7)
    out = args.out if args.out is not None else (None if quick else RESULTS)
    scale = 0.1 if quick else 1.0
    # env-steps per measurement: enough for tens of milliseconds of the fastest contender
    vector_steps = {1: int(40_000 * scale), 64: int(1_000_000 * scale), 1024: int(4_000_000 * scale)}
    loop_steps = {1: int(40_000 * scale), 64: int(150_000 * scale), 1024: int(300_000 * scale)}
    command = "python benchmarks/bench_vector.py" + ("" if argv is None and len(sys.argv) == 1 else
                                                     " " + " ".join(sys.argv[1:] if argv is None else argv))
    started = _dt.datetime.now().astimezone()
    load_before = loadavg()
    t_start = perf_counter()
    rng = np.random.default_rng(args.seed)
    actions = rng.integers(0, 3, size=(512, max(SIZES)), dtype=np.int64)

    def section(kwargs: dict[str, Any], label: str) -> list[tuple[int, Contender, Contender, Contender]]:
        rows = []
        for n in SIZES:
            vec = Contender(f"FinTradingVectorEnv({n})", n, lambda n=n: FinTradingVectorEnv(n, **kwargs), "vector")
            sync = Contender(f"SyncVectorEnv({n} x gym.make)", n, lambda n=n: gym.vector.SyncVectorEnv(
                [lambda: gym.make("FinTrading-v0", **kwargs) for _ in range(n)]), "vector")
            single = Contender("gym.make (one env, N steps per batch)", n,
                               lambda: gym.make("FinTrading-v0", **kwargs), "single")
            rows.append((n, vec, sync, single))
        for rep in range(reps):
            for n, vec, sync, single in rows:
                order = [vec, sync, single]
                rng.shuffle(order)
                for c in order:  # the batched env gets a larger budget: it is far faster
                    budget = vector_steps[n] if c is vec else loop_steps[n]
                    c.run(actions, max(1, budget // n))
            sys.stderr.write(f"[bench_vector] {label}: repetition {rep + 1}/{reps}\n")
        return rows

    real = section({"split": "train"}, "shipped data")
    synthetic = [] if args.no_synthetic else section(
        {"source": "synthetic", "synthetic": {"model": "gbm"}, "episode_length": 252}, "synthetic GBM")

    sb3_rows: list[tuple[int, Contender, Contender]] = []
    sb3_note = ""
    if not args.no_sb3:
        try:
            from stable_baselines3.common.vec_env import DummyVecEnv

            from finenvs.tasks.trading.sb3 import to_sb3
        except ImportError as exc:
            sb3_note = f"SB3 part skipped: {exc}"
        else:
            for n in (64, 1024):
                a = Contender(f"to_sb3(FinTradingVectorEnv({n}))", n,
                              lambda n=n: to_sb3(FinTradingVectorEnv(n, split="train")), "sb3")
                b = Contender(f"DummyVecEnv({n} x gym.make)", n, lambda n=n: DummyVecEnv(
                    [lambda: gym.make("FinTrading-v0", split="train") for _ in range(n)]), "sb3")
                sb3_rows.append((n, a, b))
            for rep in range(reps):
                for n, a, b in sb3_rows:
                    pair = [a, b]
                    rng.shuffle(pair)
                    for c in pair:
                        c.run(actions, max(1, (vector_steps[n] if c is a else loop_steps[n]) // n))
                sys.stderr.write(f"[bench_vector] SB3 VecEnv: repetition {rep + 1}/{reps}\n")

    wall = perf_counter() - t_start
    load_after = loadavg()
    L: list[str] = []
    L.append("# Vector-env throughput (FinTradingVectorEnv)")
    L.append("")
    L.append(f"- Command: `{command}` (from the repository root)")
    L.append(f"- Date: {started:%Y-%m-%d %H:%M:%S %Z}; script wall time {wall:.0f} s")
    L.append(f"- Machine: {cpu_name()}; {os.cpu_count()} logical CPUs; Python {platform.python_version()}")
    L.append(f"- Load average (1/5/15 min) before: {load_before}; after: {load_after} (shared machine: expect noise)")
    L.append(f"- Versions: finenvs {version('finenvs')} | gymnasium {version('gymnasium')} | numpy {version('numpy')}"
             f" | stable-baselines3 {version('stable-baselines3')} | torch {version('torch')}")
    L.append(f"- Protocol: {reps} repetitions; per repetition and N, FinTradingVectorEnv steps "
             f"{', '.join(f'{vector_steps[n]:,}' for n in SIZES)} env-steps (N = {', '.join(map(str, SIZES))}) and "
             f"the loop-based contenders {', '.join(f'{loop_steps[n]:,}' for n in SIZES)}; contenders interleaved in "
             "a reshuffled order; random actions pre-generated; resets (autoreset) inside the timer; next-step "
             "autoreset for both vector envs. Ratios are medians of per-repetition ratios.")
    L.append("")

    def table(rows: list[tuple[int, Contender, Contender, Contender]], title: str) -> None:
        L.append(f"## {title}")
        L.append("")
        L.append("| N | FinTradingVectorEnv env-steps/s (median, min) | SyncVectorEnv env-steps/s | one gym.make env steps/s"
                 " | vector / Sync | vector / single |")
        L.append("|---:|---:|---:|---:|---:|---:|")
        for n, vec, sync, single in rows:
            L.append(f"| {n:,} | {med(vec.rates):,.0f} ({min(vec.rates):,.0f}) | {med(sync.rates):,.0f} | "
                     f"{med(single.rates):,.0f} | {ratio(paired(vec, sync))} | {ratio(paired(vec, single))} |")
        L.append("")

    table(real, "1. Shipped data (10 symbols, train split, whole windows)")
    n_big = real[-1]
    big_rate, big_ratio = med(n_big[1].rates), paired(n_big[1], n_big[2])
    L.append(f"Targets at N = 1,024: >= {TARGET_STEPS_PER_S:,} env-steps/s — measured {big_rate:,.0f} "
             f"({'met' if big_rate >= TARGET_STEPS_PER_S else 'NOT met'}); >= {TARGET_RATIO:.0f}x SyncVectorEnv — "
             f"measured {big_ratio:.1f}x ({'met' if big_ratio >= TARGET_RATIO else 'NOT met'}).")
    L.append("")
    if synthetic:
        table(synthetic, "2. Synthetic GBM (a fresh path every reset, 252 decisions)")
        L.append("Every synthetic reset simulates a path (an overnight and 12 intraday steps a day for the OHLC bars) and computes its "
                 "features; that cost is the same for both vector envs and, spread over 252 steps, dominates the "
                 "batched step. Longer episodes (`episode_length`) amortise it.")
        L.append("")
    if sb3_rows:
        L.append("## 3. SB3 VecEnv interface (shipped data)")
        L.append("")
        L.append("| N | to_sb3(FinTradingVectorEnv) env-steps/s | DummyVecEnv env-steps/s | ratio |")
        L.append("|---:|---:|---:|---:|")
        for n, a, b in sb3_rows:
            L.append(f"| {n:,} | {med(a.rates):,.0f} | {med(b.rates):,.0f} | {ratio(paired(a, b))} |")
        L.append("")
    elif sb3_note:
        L.append(sb3_note)
        L.append("")
    report = "\n".join(L) + "\n"
    print(report)
    if out is not None:
        if out.resolve() == RESULTS:
            update_section("vector", report)
        else:
            out.write_text(report, encoding="utf-8")
        sys.stderr.write(f"[bench_vector] wrote {out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
