"""The algorithm table of the stable-baselines3 baselines: one small ``Args`` dataclass per algorithm.

Each holds what the zoo's hyperparameter files hold: the SB3 class, the action
spaces it acts in, and its defaults (the shared fields of :class:`Args`, then
its own hyperparameters, passed to the SB3 constructor as they are). Every field
is a flag of ``python -m finenvs.baselines.rl.train --algo NAME`` (its docstring
is the help text).

| algo | SB3 class | action space | default env | default training data | envs |
|---|---|---|---|---|---|
| ``ppo`` | PPO | Discrete or Box | FinTrading-v0 | real ``train`` split | 4 |
| ``a2c`` | A2C | Discrete or Box | FinTrading-v0 | real ``train`` split | 4 |
| ``dqn`` | DQN | Discrete | FinTrading-v0 | real ``train`` split | 1 |
| ``sac`` | SAC | Box | FinDeltaHedge-v0 | synthetic GBM paths | 1 |
| ``td3`` | TD3 | Box | FinDeltaHedge-v0 | synthetic GBM paths | 1 |

Importing this module loads neither torch nor stable-baselines3.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np


@dataclass
class Args:
    """What every algorithm shares: the env, its data, seeding, evaluation and output."""

    algo: ClassVar[str]
    """the algorithm's name (``ppo``); the run folder, the result and the tables use it"""
    sb3_class: ClassVar[str]
    """the stable-baselines3 class (``PPO``)"""
    action_spaces: ClassVar[tuple[str, ...]]
    """the action spaces it acts in: ``discrete`` (Discrete) and/or ``box`` (Box)"""

    env_id: str = "FinTrading-v0"
    """env to train on: FinTrading-v0, FinHedging-v0 or FinDeltaHedge-v0, if the algorithm acts in its action space"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """env arguments of every split, e.g. {"window": 30, "fee_bps": 5, "reward": "dsr"}; never split/source (set here)"""
    train_kwargs: dict[str, Any] | None = None
    """extra env arguments of training episodes only; None = the family's (FinTrading-v0: {"episode_length": 63})"""
    source: str = "real"
    """training data: real (train split 2024-01-02..2025-12-31), synthetic (generated paths) or both (even envs real)"""
    synthetic: dict[str, Any] | None = None
    """synthetic market {"model": "gbm"|"heston"|"merton", "params": {...}} for synthetic training; None = env default"""
    timesteps: int = 100_000
    """total environment steps of training, over all envs"""
    seed: int = 0
    """seed of Python, numpy, torch and the envs (training env i's first reset uses seed + i)"""
    n_envs: int = 4
    """training envs, stepped in one DummyVecEnv (make_vec_env)"""
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

    def hyperparameters(self) -> dict[str, Any]:
        """The algorithm's own fields (those after :class:`Args`'), by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in SHARED_FIELDS}

    def sb3_kwargs(self, action_space: gym.Space) -> dict[str, Any]:
        """Arguments of the SB3 constructor: the hyperparameters, a replay buffer capped at ``timesteps``."""
        kwargs = self.hyperparameters()
        if "buffer_size" in kwargs:
            kwargs["buffer_size"] = min(kwargs["buffer_size"], self.timesteps)
        return kwargs


#: The fields every algorithm shares; the others are its hyperparameters.
SHARED_FIELDS = frozenset(f.name for f in dataclasses.fields(Args))


@dataclass
class PPOArgs(Args):
    """PPO (stable-baselines3 defaults unless noted)."""

    algo = "ppo"
    sb3_class = "PPO"
    action_spaces = ("discrete", "box")

    learning_rate: float = 3e-4
    """Adam learning rate"""
    n_steps: int = 512
    """steps per env per rollout (512 x 4 envs = SB3's default 2048 transitions per update)"""
    batch_size: int = 64
    """minibatch size"""
    n_epochs: int = 10
    """passes over each rollout"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_range: float = 0.2
    """PPO clipping parameter"""
    ent_coef: float = 0.0
    """entropy bonus coefficient"""


@dataclass
class A2CArgs(Args):
    """A2C (stable-baselines3 defaults)."""

    algo = "a2c"
    sb3_class = "A2C"
    action_spaces = ("discrete", "box")

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


@dataclass
class DQNArgs(Args):
    """DQN (stable-baselines3 defaults unless noted); one training env."""

    algo = "dqn"
    sb3_class = "DQN"
    action_spaces = ("discrete",)

    n_envs: int = 1
    """training envs, stepped in one DummyVecEnv (make_vec_env)"""
    learning_rate: float = 1e-4
    """Adam learning rate"""
    buffer_size: int = 50_000
    """replay buffer size, capped at timesteps (SB3's default is 1M)"""
    learning_starts: int = 100
    """transitions collected before learning starts"""
    batch_size: int = 32
    """minibatch size"""
    gamma: float = 0.99
    """discount factor"""
    train_freq: int = 4
    """env steps (per env) between gradient updates"""
    target_update_interval: int = 10_000
    """env steps between target network updates"""
    exploration_fraction: float = 0.1
    """fraction of training over which epsilon decays from 1 to exploration_final_eps"""
    exploration_final_eps: float = 0.05
    """final epsilon of the epsilon-greedy exploration"""


@dataclass
class _BoxArgs(Args):
    """Defaults of the Box-only algorithms: FinDeltaHedge-v0, trained on synthetic paths, one env."""

    env_id: str = "FinDeltaHedge-v0"
    """env to train on: FinDeltaHedge-v0 (a Box action in [-1, 1]: hedge ratio 1.5 * a)"""
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"maturity_days": 20})
    """env arguments of every split, e.g. {"cost_bps": 5, "option": "put"}; maturity_days <= 20 fits the live split's 22 closes"""
    source: str = "synthetic"
    """training data: synthetic (paths of the synthetic model), real (train split windows) or both (even envs real)"""
    synthetic: dict[str, Any] | None = None
    """synthetic model {"model": "gbm"|"heston"|"merton", "params": {"sigma": 0.2, ...}}; None = GBM, sigma 0.2"""
    timesteps: int = 20_000
    """total environment steps of training, over all envs"""
    n_envs: int = 1
    """training envs, stepped in one DummyVecEnv (make_vec_env)"""
    eval_episodes: int | None = None
    """episodes per split: seeded random windows (symbol and start day) of the split; None = 50"""


@dataclass
class SACArgs(_BoxArgs):
    """SAC (stable-baselines3 defaults unless noted)."""

    algo = "sac"
    sb3_class = "SAC"
    action_spaces = ("box",)

    learning_rate: float = 3e-4
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
    train_freq: int = 1
    """env steps (per env) between gradient updates"""
    gradient_steps: int = 1
    """gradient steps per update"""


@dataclass
class TD3Args(_BoxArgs):
    """TD3 (stable-baselines3 defaults unless noted; Gaussian exploration noise)."""

    algo = "td3"
    sb3_class = "TD3"
    action_spaces = ("box",)

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

    def sb3_kwargs(self, action_space: gym.Space) -> dict[str, Any]:
        """As :meth:`Args.sb3_kwargs`, with ``action_noise`` turned into SB3's ``NormalActionNoise``."""
        from stable_baselines3.common.noise import NormalActionNoise

        assert isinstance(action_space, gym.spaces.Box)  # TD3 acts only in Box spaces (checked before training)
        half_range = (action_space.high - action_space.low) / 2.0
        noise = NormalActionNoise(mean=np.zeros_like(half_range), sigma=self.action_noise * half_range)
        return {**super().sb3_kwargs(action_space), "action_noise": noise}


#: The algorithm table: name -> its Args (SB3 class, action spaces, defaults).
ALGORITHMS: dict[str, type[Args]] = {cls.algo: cls for cls in (PPOArgs, A2CArgs, DQNArgs, SACArgs, TD3Args)}
#: The algorithm names, in table order.
ALGOS: tuple[str, ...] = tuple(ALGORITHMS)

__all__ = ["ALGORITHMS", "ALGOS", "A2CArgs", "Args", "DQNArgs", "PPOArgs", "SACArgs", "SHARED_FIELDS", "TD3Args"]
