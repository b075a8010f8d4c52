"""FinHedging-v0 costs: step throughput, reset and selection, and the pairs baselines' selection time.

Run from the repository root::

    python benchmarks/bench_hedging.py            # ~30 s, writes benchmarks/HEDGING_RESULTS.md
    python benchmarks/bench_hedging.py --quick    # smoke run, prints only

Measured in one process, interleaved round-robin per repetition so a shared
machine's load hits every env alike:

* steps/s of FinHedging-v0 (8-symbol default universe and a 2-symbol one, the
  shipped data, ``split="train"``) after the pair is chosen, with random
  trading actions pre-generated as Python ints; FinTrading-v0 on the same split
  beside them for scale (no installed peer library has a pairs env);
* reset + selection step (µs): the reset builds the selection observation
  (cached per window), the selection step builds the chosen pair's table;
* the baselines' selection (ms): Engle-Granger on every ordered pair
  (``zscore_coint``), return correlation (``zscore_corr``), and the oracle's
  replay of the rule on every pair over the window.

Every number in the report is measured by this run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import statistics
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import finenvs  # noqa: F401
from finenvs.baselines.registry import make_policy

HERE = Path(__file__).resolve().parent


def _steps(env: gym.Env, actions: list[int], pair: int, n: int) -> float:
    """Seconds for ``n`` trading steps (resets and selection steps outside the timer)."""
    total = 0.0
    done_steps = 0
    k = 0
    while done_steps < n:
        env.reset(seed=k)
        env.step(pair)
        began = time.perf_counter()
        while done_steps < n:
            _, _, term, trunc, _ = env.step(actions[k % len(actions)])
            k += 1
            done_steps += 1
            if term or trunc:
                break
        total += time.perf_counter() - began
    return total


def _trading_steps(env: gym.Env, actions: list[int], n: int) -> float:
    total = 0.0
    done_steps = 0
    k = 0
    while done_steps < n:
        env.reset(seed=k)
        began = time.perf_counter()
        while done_steps < n:
            _, _, term, trunc, _ = env.step(actions[k % len(actions)] % 3)
            k += 1
            done_steps += 1
            if term or trunc:
                break
        total += time.perf_counter() - began
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    reps, n = (3, 2_000) if args.quick else (15, 20_000)
    out = args.out if args.out is not None else (None if args.quick else HERE / "HEDGING_RESULTS.md")
    began_all = time.perf_counter()
    rng = np.random.default_rng(0)
    actions = [int(a) for a in rng.integers(0, 4, 10_000)]
    envs = {
        "FinHedging-v0, 8 symbols": (gym.make("FinHedging-v0", split="train"), 5),
        "FinHedging-v0, 2 symbols (AAPL, MSFT)": (gym.make("FinHedging-v0", split="train", symbols=["AAPL", "MSFT"]), 0),
        "FinTrading-v0, AAPL (for scale)": (gym.make("FinTrading-v0", symbol="AAPL", split="train"), None),
    }
    rates: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(reps):
        order = list(envs)
        rng.shuffle(order)
        for name in order:
            env, pair = envs[name]
            secs = _trading_steps(env, actions, n) if pair is None else _steps(env, actions, pair, n)
            rates[name].append(n / secs)

    def reset_select_us(env: gym.Env, pair: int, count: int = 200) -> tuple[float, float]:
        t_reset = t_select = 0.0
        for k in range(count):
            began = time.perf_counter()
            env.reset(seed=k)
            mid = time.perf_counter()
            env.step((pair + k) % env.unwrapped.n_pairs)  # a new pair most times: its table is built
            t_reset += mid - began
            t_select += time.perf_counter() - mid
        return 1e6 * t_reset / count, 1e6 * t_select / count

    resets = {name: reset_select_us(env, pair) for name, (env, pair) in envs.items() if pair is not None}
    selection: dict[str, float] = {}
    env = gym.make("FinHedging-v0", split="eval")
    for name in ("zscore_coint", "zscore_corr", "oracle_best_pair"):
        policy = make_policy(name, "FinHedging-v0", env)
        times = []
        for k in range(3 if args.quick else 7):
            obs, info = env.reset(seed=k)
            policy.reset(k)
            began = time.perf_counter()
            policy(obs, info)
            times.append(time.perf_counter() - began)
        selection[name] = 1e3 * statistics.median(times)

    lines = [
        "# FinHedging-v0 cost benchmark",
        "",
        "- Command: `python benchmarks/bench_hedging.py` (from the repository root)",
        f"- Date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC; script wall time "
        f"{time.perf_counter() - began_all:.0f} s",
        f"- Machine: {platform.machine()}, {len(__import__('os').sched_getaffinity(0))} usable CPUs, "
        f"Python {platform.python_version()}, gymnasium {gym.__version__}, numpy {np.__version__}",
        f"- Protocol: {reps} repetitions x {n:,} trading steps per env, envs in shuffled order each repetition; "
        "random actions from `numpy.random.default_rng(0)`; resets and selection steps outside the step timer.",
        "",
        "## Steps/s after the pair is chosen (shipped data, `split=\"train\"`)",
        "",
        "| env | obs size | median steps/s | min | max | µs/step (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, (env_, _) in envs.items():
        r = rates[name]
        size = env_.observation_space.shape[0]
        lines.append(f"| {name} | {size} | {statistics.median(r):,.0f} | {min(r):,.0f} | {max(r):,.0f} | "
                     f"{1e6 / statistics.median(r):.2f} |")
    lines += ["", "## Reset and selection step (µs, mean of 200)", "", "| env | reset | selection step |",
              "|---|---:|---:|"]
    lines += [f"| {name} | {a:.1f} | {b:.1f} |" for name, (a, b) in resets.items()]
    lines += ["", "## Baselines' pair selection on the eval window (ms, median)", "",
              "| policy | what it computes | ms |", "|---|---|---:|",
              f"| zscore_coint | Engle-Granger (statsmodels `coint`) on 56 ordered pairs, 250 days | "
              f"{selection['zscore_coint']:.1f} |",
              f"| zscore_corr | return correlations, 250 days | {selection['zscore_corr']:.2f} |",
              f"| oracle_best_pair | the z-score rule replayed on 56 pairs over the window (oracle) | "
              f"{selection['oracle_best_pair']:.1f} |", ""]
    text = "\n".join(lines)
    print(text)
    if out is not None:
        out.write_text(text)
        print(f"written to {out}")


if __name__ == "__main__":
    main()
