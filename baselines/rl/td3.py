"""TD3 (stable-baselines3) on FinDeltaHedge-v0: train on synthetic paths, score on real eval and live.

One file, read top to bottom (CleanRL style): ``Args`` -> ``make_env`` -> seeding ->
train on synthetic option-hedging paths (GBM by default; ``--source real`` or ``both``
adds windows of the ``train`` split, 2024-01-02..2025-12-31) -> save the model and
the VecNormalize statistics -> evaluate the saved model deterministically on
windows of the held-out ``eval`` and ``live`` splits, beside the rule baselines
(``bs_delta``, ``no_hedge``, ``random``) on the very same episodes: hedging error
(mean, std, RMSE in % of the initial spot) and CR/SR/MDD of the hedging book on a
notional of one initial spot -> JSON.

    python -m finenvs.baselines.rl.td3 --env-id FinDeltaHedge-v0 --timesteps 20000 --seed 0
    finenvs train --algo td3 --env FinDeltaHedge-v0 --timesteps 20000 --seeds 0,1,2

Writes a new folder ``<out>/<env_id>__td3__s<seed>/`` (``-2``, ``-3``, ... when taken; ``--overwrite``
replaces it): ``model.zip``, ``vecnormalize.pkl`` (with
``--normalize-obs``, the default) and ``result.json`` (keys in
``finenvs.baselines.rl.common.RESULT_KEYS``). Needs ``finenvs[rl]``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import finenvs  # noqa: F401  (registers the envs)
from finenvs.baselines.rl import common
from finenvs.errors import FinEnvsError

ALGO = "td3"


@dataclass
class Args:
    env_id: str = "FinDeltaHedge-v0"
    """env to train on: FinDeltaHedge-v0 (a Box action in [-1, 1]: hedge ratio 1.5 * a)"""
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"maturity_days": 20})
    """env arguments of every split, e.g. {"cost_bps": 5, "option": "put"}; maturity_days <= 20 fits the live split's 22 closes"""
    train_kwargs: dict[str, Any] | None = None
    """extra env arguments of training episodes only; None = none"""
    source: str = "synthetic"
    """training data: synthetic (paths of the synthetic model), real (train split windows) or both (even envs real)"""
    synthetic: dict[str, Any] | None = None
    """synthetic model {"model": "gbm"|"heston"|"merton", "params": {"sigma": 0.2, ...}}; None = GBM, sigma 0.2"""
    timesteps: int = 20_000
    """total environment steps of training, over all envs"""
    seed: int = 0
    """seed of Python, numpy, torch and the envs (training env i's first reset uses seed + i)"""
    n_envs: int = 1
    """training envs, stepped in one DummyVecEnv"""
    normalize_obs: bool = True
    """normalise observations with VecNormalize; its statistics are saved and frozen for evaluation"""
    normalize_reward: bool = False
    """also scale rewards during training (evaluation always reports raw rewards)"""
    eval_splits: tuple[str, ...] = ("eval", "live")
    """evaluation splits: eval (2026-01-02..2026-03-31), live (2026-04-01..2026-05-01), synthetic (fresh seeded paths)"""
    eval_episodes: int | None = None
    """episodes per split: seeded random windows (symbol and start day) of the split; None = 50"""
    eval_seed: int = 10_000
    """reset seed of the first evaluation episode (episode i uses eval_seed + i)"""
    baselines: tuple[str, ...] | None = None
    """rule baselines scored on the same episodes; None = every applicable one (oracles excluded)"""
    out: str = "runs/rl"
    """parent folder of the run folder <env_id>__<algo>__s<seed> (taken: <...>__s<seed>-2, -3, ...; see overwrite)"""
    overwrite: bool = False
    """replace an existing run folder <env_id>__<algo>__s<seed>; without it a run never overwrites another"""
    progress: bool = True
    """tqdm progress bar on stderr"""
    torch_threads: int = 1
    """torch CPU threads (1: reproducible, and polite on shared machines)"""
    # TD3 (stable-baselines3 defaults unless noted)
    learning_rate: float = 1e-3
    """Adam learning rate"""
    buffer_size: int = 100_000
    """replay buffer size, capped at timesteps (SB3's default is 1M)"""
    learning_starts: int = 100
    """transitions collected before learning starts"""
    batch_size: int = 256
    """minibatch size"""
    tau: float = 0.005
    """soft target update coefficient"""
    gamma: float = 0.99
    """discount factor"""
    policy_delay: int = 2
    """critic updates per actor update"""
    action_noise: float = 0.1
    """std of the Gaussian exploration noise, as a fraction of half the action range (SB3 has none by default)"""


def make_env(env_id: str, seed: int, idx: int, **kwargs: Any) -> Callable[[], gym.Env]:
    """A thunk building env ``idx``: ``info["episode"]`` statistics, action space seeded ``seed + idx``."""

    def thunk() -> gym.Env:
        env = gym.make(env_id, **{"render_mode": None, **kwargs})
        env = gym.wrappers.RecordEpisodeStatistics(env)  # gymnasium 1.x: info["episode"] = {"r", "l", "t"}
        env.action_space.seed(seed + idx)
        return env

    return thunk


def train(args: Args) -> tuple[Any, Any, Any]:
    """Train TD3 on the training data only; returns ``(model, training envs, monitor callback)``."""
    common.check_args(ALGO, args)
    common.require_rl()
    import torch
    from stable_baselines3 import TD3
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

    # seeding: Python, numpy, torch; the envs through envs.seed below (and SB3's seed=)
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (SB3 draws minibatches from the global generator)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    torch.backends.cudnn.deterministic = True

    # env setup: the train split (and/or synthetic paths), never eval or live
    envs: VecEnv = DummyVecEnv([make_env(args.env_id, args.seed, i, **common.train_env_kwargs(args, i))
                        for i in range(args.n_envs)])
    envs.seed(args.seed)
    if args.normalize_obs or args.normalize_reward:
        envs = VecNormalize(envs, norm_obs=args.normalize_obs, norm_reward=args.normalize_reward, gamma=args.gamma)

    box = envs.action_space
    assert isinstance(box, gym.spaces.Box)  # check_args admits only continuous-action envs to TD3
    half_range = (box.high - box.low) / 2.0
    noise = NormalActionNoise(mean=np.zeros_like(half_range), sigma=args.action_noise * half_range)
    model = TD3(
        "MlpPolicy", envs, learning_rate=args.learning_rate, buffer_size=min(args.buffer_size, args.timesteps),
        learning_starts=args.learning_starts, batch_size=args.batch_size, tau=args.tau, gamma=args.gamma,
        policy_delay=args.policy_delay, action_noise=noise, seed=args.seed, device="cpu", verbose=0,
    )
    monitor = common.train_monitor(args, desc=f"{ALGO} {args.env_id} seed {args.seed}")
    model.learn(total_timesteps=args.timesteps, callback=monitor)
    return model, envs, monitor


def run(args: Args) -> dict[str, Any]:
    """Train, save, evaluate beside the rule baselines, write ``result.json``; returns the result."""
    began = time.perf_counter()
    model, envs, monitor = train(args)
    train_seconds = time.perf_counter() - began
    from stable_baselines3 import TD3

    out = common.run_dir(args, ALGO)
    model.save(out / "model.zip")
    vecnormalize = common.save_normalization(envs, out)  # None without normalisation
    envs.close()

    # evaluate what was saved: the model from its zip, observations normalised by the saved, frozen statistics
    model = TD3.load(out / "model.zip", device="cpu")
    splits = common.evaluate(model, args, make_env, algo=ALGO, vecnormalize_path=vecnormalize)

    files = {"model": out / "model.zip", "vecnormalize": vecnormalize, "result": out / "result.json"}
    result = common.make_result(ALGO, args, {**monitor.summary(), "seconds": train_seconds}, splits, files)
    common.write_result(out / "result.json", result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(Args, argv, __doc__)
    try:  # every bad argument fails here, in one line, before any training
        common.check_args(ALGO, args)
        common.require_rl()
    except (ValueError, KeyError, ImportError, FinEnvsError) as exc:
        print(f"{ALGO}: error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 2
    result = run(args)
    print(common.summary_table([result]))
    print(f"\nmodel, statistics and result.json in {Path(result['files']['result']).parent}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
