"""FinDeltaHedge-v0: Black-Scholes delta hedging against no hedge as the rebalancing frequency rises.

Run from the repository root::

    python benchmarks/deltahedge_frequency.py            # ~20 s, writes benchmarks/DELTAHEDGE_RESULTS.md
    python benchmarks/deltahedge_frequency.py --quick    # smoke run (100 episodes), prints only

Setting: GBM, sigma 0.2 (the pricing vol too), mu = r = q = 0, S0 = 100, a
short at-the-money call expiring in 30 trading days, transaction costs of 0
and 1 bp of traded notional. For each cost level and ``steps_per_day`` in
1, 2, 4, 8, 16, the ``bs_delta`` and ``no_hedge`` baselines each play the
same N seeded episodes (seeds 0..N-1: the same paths for both policies and
both cost levels); the table gives the mean, sample sd (``ddof=1``) and mean
square of the final hedging error (``info["hedging_error"]``, currency units;
0 is a perfect hedge), its root mean square as a share of the premium, and
the mean costs paid.

Throughput: env steps/s over the whole run of each row (resets and the
policy's call included), and raw ``env.step`` throughput with pre-generated
float32 actions (resets outside the timer).

Every number in the report is measured by this run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from finenvs.tasks.deltahedge.baselines import BSDeltaHedge, NoHedge
from finenvs.tasks.deltahedge.env import FinDeltaHedgeEnv

HERE = Path(__file__).resolve().parent
FREQUENCIES = (1, 2, 4, 8, 16)
COSTS_BPS = (0.0, 1.0)
POLICIES = {"bs_delta": BSDeltaHedge, "no_hedge": NoHedge}
SETTING = {"option": "call", "moneyness": 1.0, "maturity_days": 30, "source": "gbm", "sigma": 0.2,
           "mu": 0.0, "r": 0.0, "q": 0.0, "spot": 100.0}


def _episodes(env: FinDeltaHedgeEnv, policy: object, n: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(final errors, costs, steps, seconds) of episodes seeded 0..n-1."""
    errors, costs = np.empty(n), np.empty(n)
    steps = 0
    began = time.perf_counter()
    for i in range(n):
        obs, info = env.reset(seed=i)
        done = False
        while not done:
            obs, _, done, _, info = env.step(policy(obs, info))
            steps += 1
        errors[i], costs[i] = info["hedging_error"], info["costs"]
    return errors, costs, steps, time.perf_counter() - began


def _raw_steps_per_s(steps_per_day: int, n_steps: int, reps: int) -> list[float]:
    env = FinDeltaHedgeEnv(**SETTING, steps_per_day=steps_per_day)
    actions = list(np.random.default_rng(0).uniform(-1.0, 1.0, (4096, 1)).astype(np.float32))
    rates = []
    for rep in range(reps):
        done_steps, total, k = 0, 0.0, 0
        env.reset(seed=rep)
        while done_steps < n_steps:
            began = time.perf_counter()
            while done_steps < n_steps:
                _, _, term, _, _ = env.step(actions[k % 4096])
                k += 1
                done_steps += 1
                if term:
                    break
            total += time.perf_counter() - began
            if term:
                env.reset()
        rates.append(n_steps / total)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 episodes, print only")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None, help="report file (default: DELTAHEDGE_RESULTS.md)")
    args = parser.parse_args()
    n = 100 if args.quick else args.episodes
    began = time.perf_counter()

    rows = []
    for cost in COSTS_BPS:
        for spd in FREQUENCIES:
            env = FinDeltaHedgeEnv(**SETTING, steps_per_day=spd, cost_bps=cost)
            for name, cls in POLICIES.items():
                errors, costs, steps, seconds = _episodes(env, cls.from_env(env), n)
                premium = env.reset(seed=0)[1]["premium"]
                rows.append({
                    "cost": cost, "spd": spd, "policy": name, "mean": errors.mean(), "sd": errors.std(ddof=1),
                    "mse": float(np.mean(errors**2)),
                    "rms_pct_premium": 100 * np.sqrt(np.mean(errors**2)) / premium,
                    "costs": costs.mean(), "steps_per_s": steps / seconds,
                })
                print(f"cost {cost:g} bp, {spd:>2}/day, {name:<8} mse {rows[-1]['mse']:.4f}", file=sys.stderr)
    raw_steps, raw_reps = (20_000, 3) if args.quick else (200_000, 7)
    raw = {spd: _raw_steps_per_s(spd, raw_steps, raw_reps) for spd in (1, 16)}
    wall = time.perf_counter() - began

    lines = [
        "# FinDeltaHedge-v0: delta-hedging error against rebalancing frequency",
        "",
        "- Command: `python benchmarks/deltahedge_frequency.py` (from the repository root)",
        f"- Date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC; script wall time {wall:.0f} s",
        f"- Machine: {platform.machine()}, {len(os.sched_getaffinity(0))} usable CPUs, "
        f"Python {platform.python_version()}, gymnasium {gym.__version__}, numpy {np.__version__}",
        "- Setting: GBM sigma 0.2 (= pricing vol), mu = r = q = 0, S0 = 100, short ATM call, "
        f"30 trading days (T = 30/252), N = {n} episodes per row, seeds 0..{n - 1} (the same paths "
        "for every row with the same steps/day); hedging error = premium + hedge gains - costs - payoff, "
        "currency units (0 = perfect hedge).",
        "",
        "| cost (bp) | steps/day | steps | policy | mean error | sd | MSE | MSE / no-hedge MSE "
        "| RMS / premium | mean costs | steps/s (incl. reset, policy) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    mse_none = {(r["cost"], r["spd"]): r["mse"] for r in rows if r["policy"] == "no_hedge"}
    for r in rows:
        ratio = r["mse"] / mse_none[(r["cost"], r["spd"])]
        lines.append(
            f"| {r['cost']:g} | {r['spd']} | {30 * r['spd']} | {r['policy']} | {r['mean']:+.4f} | "
            f"{r['sd']:.4f} | {r['mse']:.4f} | {ratio:.4f} | {r['rms_pct_premium']:.1f}% | "
            f"{r['costs']:.4f} | {r['steps_per_s']:,.0f} |"
        )
    lines += [
        "",
        "Raw `env.step` throughput (pre-generated float32 box actions, resets outside the timer):",
        "",
        "| steps/day | median steps/s | min | max |",
        "|---:|---:|---:|---:|",
    ]
    for spd, rates in raw.items():
        lines.append(f"| {spd} | {statistics.median(rates):,.0f} | {min(rates):,.0f} | {max(rates):,.0f} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.quick or args.out is not None:
        out = args.out or HERE / "DELTAHEDGE_RESULTS.md"
        out.write_text(report)
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
