"""Does RL learn on FinHedging-v0's synthetic cointegrated universes? PPO beside random and the z-score rule.

Run from the repository root (needs ``finenvs[rl]``; about a minute of training on 2 CPU cores)::

    python benchmarks/rl_pairs.py                 # writes benchmarks/RL_PAIRS_RESULTS.md
    python benchmarks/rl_pairs.py --timesteps 20000 --out /tmp/rl.md

stable-baselines3 PPO (``MlpPolicy``, default hyper-parameters, seed 0) trains on
``FinHedging-v0`` with ``source="synthetic"`` (2 assets: the cointegrated pair,
126-decision episodes, a fresh universe every reset, 4 vector envs). It is then
evaluated deterministically on 50 universes it never saw (reset seeds
1000..1049), beside a random trader (random trading actions after taking pair
0) and the ``zscore_coint`` baseline on the same 50 universes. The mean of
each episode's standard Sharpe ratio and cumulative return is reported.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np

import finenvs  # noqa: F401
from finenvs.baselines.registry import make_policy
from finenvs.wrappers import EpisodeMetrics

HERE = Path(__file__).resolve().parent
ENV_KWARGS = {"source": "synthetic", "episode_length": 126}
EVAL_SEEDS = range(1000, 1050)


def evaluate(
    act: Callable[[np.ndarray, dict], int],
    reset: Callable[[int], None] | None = None,
    env: gym.Env | None = None,
) -> tuple[float, float]:
    env = EpisodeMetrics(env if env is not None else gym.make("FinHedging-v0", **ENV_KWARGS))
    sharpe, cr = [], []
    for seed in EVAL_SEEDS:
        if reset is not None:
            reset(seed)
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(act(obs, info))
            done = term or trunc
        m = info["episode_metrics"]["standard"]
        sharpe.append(m["sharpe"])
        cr.append(m["cumulative_return"])
    return float(np.nanmean(sharpe)), float(np.mean(cr))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=HERE / "RL_PAIRS_RESULTS.md")
    args = parser.parse_args()
    import stable_baselines3
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    began = time.perf_counter()
    train = make_vec_env("FinHedging-v0", n_envs=4, seed=0, env_kwargs=ENV_KWARGS)
    model = PPO("MlpPolicy", train, seed=0, verbose=0).learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - began
    rows = {"PPO (deterministic)": evaluate(lambda o, i: int(model.predict(o, deterministic=True)[0]))}
    rng = np.random.default_rng(0)
    rows["random trader (pair 0, then uniform actions)"] = evaluate(
        lambda o, i: 0 if o[0] >= 0.5 else int(rng.integers(4)))
    zs_env = gym.make("FinHedging-v0", **ENV_KWARGS)
    zscore = make_policy("zscore_coint", "FinHedging-v0", zs_env)
    rows["zscore_coint baseline"] = evaluate(lambda o, i: zscore(o, i), reset=zscore.reset, env=zs_env)
    lines = [
        "# PPO on FinHedging-v0 synthetic cointegrated pairs",
        "",
        "- Command: `python benchmarks/rl_pairs.py` (from the repository root)",
        f"- Date: {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC; training {train_s:.0f} s for "
        f"{args.timesteps:,} timesteps on {platform.machine()} (torch threads 1), Python {platform.python_version()}, "
        f"stable-baselines3 {stable_baselines3.__version__}, torch {torch.__version__}",
        f"- Env: `FinHedging-v0` {ENV_KWARGS}; PPO MlpPolicy, default hyper-parameters, seed 0, 4 vector envs",
        "- Evaluation: 50 unseen universes (reset seeds 1000..1049), mean over episodes",
        "",
        "| policy | mean Sharpe | mean CR % |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {s:.2f} | {100 * c:.2f} |" for name, (s, c) in rows.items()]
    lines.append("")
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
