"""Does RL beat the rule baselines on FinTrading-v0's held-out windows? PPO, A2C and DQN over several seeds.

Run from the repository root (needs ``finenvs[rl]``; about 13 minutes on 2 shared CPU cores)::

    python benchmarks/rl_trading.py                         # writes benchmarks/RL_RESULTS.md and its RESULTS.md section
    python benchmarks/rl_trading.py --timesteps 20000 --seeds 0,1 --out /tmp/rl.md

Each of PPO, A2C and DQN (``finenvs.baselines.rl.train`` with the algorithm table's
default arguments: stable-baselines3 defaults but PPO's 512 steps per env,
DQN's 50k replay buffer; observations normalised by VecNormalize, frozen at
evaluation) trains once per seed on ``FinTrading-v0``'s ``train`` split (real
data 2024-01-02..2025-12-31, all 10 symbols, random 63-day sub-windows), then
its saved model is evaluated deterministically on the held-out ``eval``
(2026-01-02..2026-03-31) and ``live`` (2026-04-01..2026-05-01) splits: one
whole-window episode per symbol. Every rule baseline plays the very same
episodes. Scores are the mean over a split's 10 episodes of each episode's CR,
SR and MDD (``finenvs.scoring``), then mean ± std over seeds. Nothing is tuned
on eval or live: the hyper-parameters are the table's defaults, fixed before
this benchmark was run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
from results_file import cpu_name, update_section  # noqa: E402

ALGOS = ("ppo", "a2c", "dqn")
SPLITS = ("eval", "live")
ENV_ID = "FinTrading-v0"


def _mean_std(values: list[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else float("nan")


def _verdict(results: dict[str, list[dict[str, Any]]], split: str) -> list[str]:
    """Per algorithm: which rule baselines its mean CR and SR beat on ``split`` (computed, not written by hand)."""
    first = next(iter(results.values()))[0]["splits"][split]["policies"]
    rules = [name for name in first if name not in ALGOS]
    lines = []
    best_cr = max(first[n]["cumulative_return"] for n in rules)
    winners = [a for a, runs in results.items()
               if _mean_std([r["splits"][split]["policies"][a]["cumulative_return"] for r in runs])[0] > best_cr]
    lines.append(f"- In short: {', '.join(w.upper() for w in winners)} beat(s) every rule baseline on mean CR."
                 if winners else "- In short: no RL algorithm beats the best rule baseline on mean CR.")
    for algo, runs in results.items():
        cr, cr_sd = _mean_std([r["splits"][split]["policies"][algo]["cumulative_return"] for r in runs])
        sr, _ = _mean_std([r["splits"][split]["policies"][algo]["sharpe"] for r in runs])
        beat_cr = [n for n in rules if first[n]["cumulative_return"] is not None and cr > first[n]["cumulative_return"]]
        beat_sr = [n for n in rules if first[n]["sharpe"] is not None and sr > first[n]["sharpe"]]
        best = max(rules, key=lambda n: first[n]["cumulative_return"])
        lines.append(
            f"- **{algo.upper()}** mean CR {100 * cr:+.2f}% (± {100 * cr_sd:.2f} over seeds) beats "
            f"{len(beat_cr)}/{len(rules)} rule baselines on CR ({', '.join(beat_cr) or 'none'}) and "
            f"{len(beat_sr)}/{len(rules)} on SR ({', '.join(beat_sr) or 'none'}); the best rule on CR is "
            f"{best} ({100 * first[best]['cumulative_return']:+.2f}%)"
            + (f" — {algo.upper()} is {'behind' if cr <= first[best]['cumulative_return'] else 'ahead of'} it by "
               f"{100 * abs(cr - first[best]['cumulative_return']):.2f} pp (seed std {100 * cr_sd:.2f} pp).")
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000, help="training steps per run")
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    parser.add_argument("--out", type=Path, default=HERE / "RL_RESULTS.md")
    parser.add_argument("--runs-dir", type=Path, help="where models and result.json go (default: a temp folder)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]

    import stable_baselines3
    import torch

    import finenvs
    from finenvs.baselines.rl.algos import ALGORITHMS
    from finenvs.baselines.rl.common import markdown_table
    from finenvs.baselines.rl.train import run

    torch.set_num_threads(1)
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="finenvs-rl-bench-"))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    began = time.perf_counter()
    results: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, list[float]] = {}
    for algo in ALGOS:
        for seed in seeds:
            t0 = time.perf_counter()
            result = run(ALGORITHMS[algo](env_id=ENV_ID, timesteps=args.timesteps, seed=seed, out=str(runs_dir),
                                          progress=False))
            results.setdefault(algo, []).append(result)
            seconds.setdefault(algo, []).append(time.perf_counter() - t0)
            ev = result["splits"]["eval"]["policies"][algo]
            print(f"{algo} seed {seed}: {seconds[algo][-1]:.0f} s, eval CR {100 * ev['cumulative_return']:+.2f}%",
                  flush=True)
    wall = time.perf_counter() - began

    # the rule baselines must have played identical episodes in every run
    reference = results[ALGOS[0]][0]
    for runs in results.values():
        for r in runs:
            for split in SPLITS:
                assert r["splits"][split]["episodes"] == reference["splits"][split]["episodes"]
                for name, scores in reference["splits"][split]["policies"].items():
                    if name not in ALGOS:
                        assert r["splits"][split]["policies"][name] == scores, (name, split)

    first = results[ALGOS[0]][0]
    defaults = {algo: ALGORITHMS[algo]() for algo in ALGOS}
    lines = [
        "# PPO, A2C and DQN on FinTrading-v0 beside the rule baselines",
        "",
        "- Command: `python benchmarks/rl_trading.py"
        + ("" if args.timesteps == 100_000 else f" --timesteps {args.timesteps}")
        + ("" if args.seeds == "0,1,2,3,4" else f" --seeds {args.seeds}") + "` (from the repository root)",
        f"- Date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC; wall time {wall / 60:.1f} min for "
        f"{len(ALGOS) * len(seeds)} runs (training + evaluation), mean per run: "
        + ", ".join(f"{a.upper()} {np.mean(s):.0f} s" for a, s in seconds.items()),
        f"- Machine: {platform.machine()} {cpu_name()}, {os.cpu_count()} cores shared with other jobs "
        f"(load average {load:.1f} at the start), torch threads 1, {platform.system()} {platform.release()}",
        f"- Versions: finenvs {finenvs.__version__}, stable-baselines3 {stable_baselines3.__version__}, "
        f"torch {torch.__version__}, gymnasium {first['versions']['gymnasium']}, numpy {first['versions']['numpy']}, "
        f"Python {platform.python_version()}",
        f"- Training: {args.timesteps:,} timesteps per run, seeds {', '.join(map(str, seeds))}; `{ENV_ID}` "
        "train split (2024-01-02..2025-12-31, real, all 10 symbols), random 63-decision sub-windows, default env "
        "(window 30, fee 5 bp, shorting allowed, reward log_return, fill at the close); envs per algorithm: "
        + ", ".join(f"{a.upper()} {d.n_envs}" for a, d in defaults.items())
        + "; VecNormalize on observations (statistics frozen at evaluation); MlpPolicy; stable-baselines3 defaults "
        "except PPO n_steps 512 per env and DQN buffer 50,000",
        "- Evaluation: the saved model, deterministic actions, one whole-window episode per symbol (10 per split); "
        "every rule baseline on the very same episodes (identical in every run; checked). Cells are the mean over "
        "the 10 episodes of each episode's CR / SR / MDD, then mean ± std over seeds for RL (rule baselines are "
        "deterministic: std 0). SR is annualised (252, ddof=1), left out of the mean when undefined (always flat).",
        f"- Real training dates seen (every run): "
        f"{min(r['train']['real_dates'][0] for rs in results.values() for r in rs)}.."
        f"{max(r['train']['real_dates'][1] for rs in results.values() for r in rs)}",
        "",
    ]
    for split in SPLITS:
        block = first["splits"][split]
        lines += [f"## {split} split ({block['dates'][0]}..{block['dates'][1]}, "
                  f"{len(block['episodes'])} episodes of {block['episodes'][0]['steps']} decisions)", ""]
        header, rule, *rows = markdown_table(results[ALGOS[0]], split, label=f"{ALGOS[0].upper()}")
        algo_rows = [markdown_table(results[a], split, label=a.upper())[2] for a in ALGOS[1:]]
        lines += [header, rule, rows[0], *algo_rows, *rows[1:], ""]
        lines += ["Per seed (CR % / SR):", "",
                  "| algo | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|" + "---:|" * len(seeds)]
        for algo, runs in results.items():
            cells = []
            for r in runs:
                p = r["splits"][split]["policies"][algo]
                sr = "n/a" if p["sharpe"] is None else f"{p['sharpe']:+.2f}"
                cells.append(f"{100 * p['cumulative_return']:+.2f} / {sr}")
            lines.append(f"| {algo.upper()} | " + " | ".join(cells) + " |")
        lines += ["", "Verdict (computed from the table):", "", *_verdict(results, split), ""]
    lines += [
        "## Reading this",
        "",
        "Means over 10 symbols of a 60-day (eval) and a 21-day (live) window are noisy: one quarter of one market "
        "regime. A policy beating a rule here is weak evidence; the seed spread of RL shows how much of the "
        "difference is training noise. Rule baselines have no parameters fitted to any data.",
        "",
    ]
    text = "\n".join(lines)
    args.out.write_text(text)
    if args.out.resolve() == (HERE / "RL_RESULTS.md").resolve():  # the recorded run: also its section of RESULTS.md
        update_section("rl", text)
    print(text)
    print(f"written to {args.out} ({wall / 60:.1f} min); models in {runs_dir}")


if __name__ == "__main__":
    sys.exit(main())
