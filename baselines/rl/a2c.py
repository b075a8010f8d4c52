"""A2C (stable-baselines3) on a finenvs market: train on the train split, score on eval and live.

One file, read top to bottom (CleanRL style): ``Args`` -> ``make_env`` -> seeding ->
train on the ``train`` split (real 2024-01-02..2025-12-31 and/or synthetic paths) ->
save the model and the VecNormalize statistics -> evaluate the saved model
deterministically on the held-out ``eval`` and ``live`` splits, beside every rule
baseline on the very same episodes (CR/SR/MDD from ``finenvs.scoring``) -> JSON.

    python -m finenvs.baselines.rl.a2c --env-id FinTrading-v0 --timesteps 100000 --seed 0
    finenvs train --algo a2c --env FinTrading-v0 --timesteps 100000 --seeds 0,1,2

Writes a new folder ``<out>/<env_id>__a2c__s<seed>/`` (``-2``, ``-3``, ... when taken; ``--overwrite``
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

ALGO = "a2c"


@dataclass
class Args:
    env_id: str = "FinTrading-v0"
    """env to train on: FinTrading-v0 or FinHedging-v0 (A2C also handles FinDeltaHedge-v0's Box action)"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """env arguments of every split, e.g. {"window": 30, "fee_bps": 5, "reward": "dsr"}; never split/source (set here)"""
    train_kwargs: dict[str, Any] | None = None
    """extra env arguments of training episodes only; None = {"episode_length": 63} (random 63-day sub-windows)"""
    source: str = "real"
    """training data: real (train split 2024-01-02..2025-12-31), synthetic (generated paths) or both (even envs real)"""
    synthetic: dict[str, Any] | None = None
    """synthetic market {"model": "gbm"|"heston"|"merton", "params": {...}} for synthetic training; None = env default"""
    timesteps: int = 100_000
    """total environment steps of training, over all envs"""
    seed: int = 0
    """seed of Python, numpy, torch and the envs (training env i's first reset uses seed + i)"""
    n_envs: int = 4
    """training envs, stepped in one DummyVecEnv"""
    normalize_obs: bool = True
    """normalise observations with VecNormalize; its statistics are saved and frozen for evaluation"""
    normalize_reward: bool = False
    """also scale rewards during training (evaluation always reports raw rewards)"""
    eval_splits: tuple[str, ...] = ("eval", "live")
    """evaluation splits: eval (2026-01-02..2026-03-31), live (2026-04-01..2026-05-01), synthetic (fresh seeded paths)"""
    eval_episodes: int | None = None
    """episodes per split; None = one per symbol (FinTrading-v0 real), 1 (FinHedging-v0 real), else 50 seeded"""
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
    # A2C (stable-baselines3 defaults)
    learning_rate: float = 7e-4
    """RMSprop learning rate"""
    n_steps: int = 5
    """steps per env per update"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 1.0
    """GAE lambda (1.0: plain n-step advantages)"""
    ent_coef: float = 0.0
    """entropy bonus coefficient"""
    vf_coef: float = 0.5
    """value loss coefficient"""


def make_env(env_id: str, seed: int, idx: int, **kwargs: Any) -> Callable[[], gym.Env]:
    """A thunk building env ``idx``: ``info["episode"]`` statistics, action space seeded ``seed + idx``."""

    def thunk() -> gym.Env:
        env = gym.make(env_id, **{"render_mode": None, **kwargs})
        env = gym.wrappers.RecordEpisodeStatistics(env)  # gymnasium 1.x: info["episode"] = {"r", "l", "t"}
        env.action_space.seed(seed + idx)
        return env

    return thunk


def train(args: Args) -> tuple[Any, Any, Any]:
    """Train A2C on the training data only; returns ``(model, training envs, monitor callback)``."""
    common.check_args(ALGO, args)
    common.require_rl()
    import torch
    from stable_baselines3 import A2C
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

    model = A2C(
        "MlpPolicy", envs, learning_rate=args.learning_rate, n_steps=args.n_steps, gamma=args.gamma,
        gae_lambda=args.gae_lambda, ent_coef=args.ent_coef, vf_coef=args.vf_coef, seed=args.seed, device="cpu",
        verbose=0,
    )
    monitor = common.train_monitor(args, desc=f"{ALGO} {args.env_id} seed {args.seed}")
    model.learn(total_timesteps=args.timesteps, callback=monitor)
    return model, envs, monitor


def run(args: Args) -> dict[str, Any]:
    """Train, save, evaluate beside the rule baselines, write ``result.json``; returns the result."""
    began = time.perf_counter()
    model, envs, monitor = train(args)
    train_seconds = time.perf_counter() - began
    from stable_baselines3 import A2C

    out = common.run_dir(args, ALGO)
    model.save(out / "model.zip")
    vecnormalize = common.save_normalization(envs, out)  # None without normalisation
    envs.close()

    # evaluate what was saved: the model from its zip, observations normalised by the saved, frozen statistics
    model = A2C.load(out / "model.zip", device="cpu")
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
