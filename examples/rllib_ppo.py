"""PPO on finenvs with Ray RLlib (new API stack), on one machine or on a Ray cluster.

For users who outgrow one process: RLlib spreads sampling over env runners (processes, or nodes of a
cluster) and learning over learners, while the environment stays the same finenvs env.

Three environments:

* ``--env trading``: ``FinTrading-v0`` (single agent, Discrete(3) SELL/HOLD/BUY), registered with
  RLlib through ``ray.tune.registry.register_env`` and an env creator that imports finenvs and calls
  ``gym.make("FinTrading-v0", **config)``.
* ``--env market``: the multi-agent market impact env (``finenvs.multiagent.parallel_env``, a
  PettingZoo ParallelEnv with agents ``trader_0 .. trader_{k-1}`` whose net order flow moves the
  price) wrapped in RLlib's ``ParallelPettingZooEnv``.
* ``--env pairs``: the cooperative pairs market (``finenvs.multiagent.pairs_parallel_env``, agents
  ``leg_0`` and ``leg_1`` share the book's P&L), wrapped the same way.

For the multi-agent envs ``--policies shared`` trains one policy for every agent (parameter sharing);
``--policies per-agent`` trains one policy per agent (``policy_mapping_fn`` maps an agent to its own).

Install (torch first, CPU wheel, then the extras; ``marl`` brings pettingzoo for market/pairs)::

    pip install torch==2.13.0
    pip install -e ".[distributed,marl]"

Run locally (starts a 2-CPU Ray instance in this process)::

    python examples/rllib_ppo.py --env trading --iterations 10
    python examples/rllib_ppo.py --env market --num-traders 3 --policies per-agent --iterations 10
    python examples/rllib_ppo.py --env pairs --policies shared --iterations 10

Run on a cluster: ``--address auto`` (or ``RAY_ADDRESS=...``) connects to a running cluster instead
of starting one; raise ``--num-env-runners`` to sample on more cores/nodes.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal

#: --env choice -> the name the env is registered under with RLlib
RLLIB_ENV_NAMES = {"trading": "finenvs-FinTrading-v0", "market": "finenvs-market-impact", "pairs": "finenvs-pairs-market"}
ENVS = tuple(RLLIB_ENV_NAMES)
POLICY_MODES = ("shared", "per-agent")
SHARED_POLICY = "shared_policy"
#: per-agent mean episode returns in a multi-agent result's "env_runners" dict
AGENT_RETURNS_KEY = "agent_episode_returns_mean"


@dataclass
class Args:
    """Command-line arguments (``tyro``: each field is a ``--flag``, underscores become dashes)."""

    env: Literal["trading", "market", "pairs"] = "trading"
    """which environment: "trading" (FinTrading-v0), "market" (k traders, market impact) or "pairs" (2 legs)"""
    iterations: int = 5
    """number of ``algo.train()`` calls"""
    seed: int = 0
    """seed of the env runners' environments and of the networks"""
    # -- environment --------------------------------------------------------------------------
    source: Literal["real", "synthetic"] = "real"
    """FinTrading-v0 data: "real" (shipped catalog, train split) or "synthetic" (a fresh GBM path per reset)"""
    symbol: str | None = None
    """FinTrading-v0 ticker; None draws one of the shipped symbols every episode"""
    exogenous: Literal["synthetic", "real", "flat"] = "synthetic"
    """market/pairs price path: "synthetic" (a fresh path every reset), "real" (shipped closes), "flat"
    (prices move only by the agents' own impact)"""
    episode_length: int = 64
    """decisions per episode (trading: a random sub-window of the train split)"""
    num_traders: int = 2
    """traders in the market env (agents trader_0 .. trader_{k-1})"""
    policies: Literal["shared", "per-agent"] = "shared"
    """multi-agent envs: "shared" (one policy for every agent) or "per-agent" (one policy per agent)"""
    # -- PPO ----------------------------------------------------------------------------------
    train_batch_size: int = 2048
    """env steps per training iteration (per learner)"""
    minibatch_size: int = 256
    """SGD minibatch size"""
    num_epochs: int = 5
    """passes over each train batch"""
    lr: float = 3e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    entropy_coeff: float = 0.01
    """entropy bonus"""
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    """hidden layer sizes of the policy and value networks"""
    # -- resources ----------------------------------------------------------------------------
    num_env_runners: int = 1
    """sampling processes (0 = sample in the driver process)"""
    num_envs_per_env_runner: int = 1
    """environments per env runner (vectorised inside the runner; trading env only)"""
    num_cpus: int = 2
    """CPUs of the local Ray instance (ignored with --address)"""
    address: str | None = None
    """Ray cluster to join ("auto", "head:6379"; "ray://head:10001" needs ray[client]); default: RAY_ADDRESS,
    else start a local instance"""
    checkpoint_dir: str | None = None
    """if set, save the trained algorithm there at the end"""


# -- environments ---------------------------------------------------------------------------------


def trading_env_creator(config: dict[str, Any]) -> Any:
    """RLlib env creator for FinTrading-v0 (runs inside every env runner process)."""
    import gymnasium as gym

    import finenvs  # noqa: F401  # registers FinTrading-v0 in this process

    return gym.make("FinTrading-v0", **config)


def market_env_creator(config: dict[str, Any]) -> Any:
    """RLlib env creator for the market impact env: a PettingZoo ParallelEnv in RLlib's wrapper."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    from finenvs.multiagent import parallel_env

    return ParallelPettingZooEnv(parallel_env(**config))


def pairs_env_creator(config: dict[str, Any]) -> Any:
    """RLlib env creator for the cooperative pairs market, wrapped like the market env."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    from finenvs.multiagent import pairs_parallel_env

    return ParallelPettingZooEnv(pairs_parallel_env(**config))


ENV_CREATORS = {"trading": trading_env_creator, "market": market_env_creator, "pairs": pairs_env_creator}


def env_config(args: Args) -> dict[str, Any]:
    """JSON-serialisable kwargs for the env creator (RLlib ships them to every env runner)."""
    if args.env == "trading":
        return {"symbol": args.symbol, "split": "train", "source": args.source, "episode_length": args.episode_length}
    config: dict[str, Any] = {"steps": args.episode_length, "exogenous": args.exogenous}
    if args.env == "market":
        config["n_agents"] = args.num_traders
    return config


def agent_ids(args: Args) -> list[str]:
    """Agent ids of a multi-agent env (as the env names them)."""
    if args.env == "market":
        return [f"trader_{i}" for i in range(args.num_traders)]
    if args.env == "pairs":
        return ["leg_0", "leg_1"]
    raise ValueError(f"--env {args.env!r} is single-agent")


def shared_policy_mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
    """Every agent acts with (and trains) the one shared policy."""
    return SHARED_POLICY


def per_agent_policy_mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
    """Each agent has its own policy, named after the agent."""
    return agent_id


# -- algorithm ------------------------------------------------------------------------------------


def build_config(args: Args) -> Any:
    """The PPOConfig (new API stack: RLModule + Learner + EnvRunner)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env

    if args.env not in ENVS:
        raise ValueError(f"--env {args.env!r}: choose one of {ENVS}")
    if args.policies not in POLICY_MODES:
        raise ValueError(f"--policies {args.policies!r}: choose one of {POLICY_MODES}")

    env_name = RLLIB_ENV_NAMES[args.env]
    register_env(env_name, ENV_CREATORS[args.env])

    config = (
        PPOConfig()
        .environment(env_name, env_config=env_config(args))
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner if args.env == "trading" else 1,
        )
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=min(args.minibatch_size, args.train_batch_size),
            num_epochs=args.num_epochs,
            lr=args.lr,
            gamma=args.gamma,
            entropy_coeff=args.entropy_coeff,
        )
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(args.hidden), vf_share_layers=False))
        .debugging(seed=args.seed)
    )
    if args.env != "trading":
        if args.policies == "shared":
            config = config.multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=shared_policy_mapping)
        else:
            config = config.multi_agent(policies=set(agent_ids(args)), policy_mapping_fn=per_agent_policy_mapping)
    return config


def episode_return_mean(result: dict[str, Any]) -> float:
    """Mean return of the episodes completed in the reporting window (NaN before the first one ends)."""
    return float(result.get("env_runners", {}).get("episode_return_mean", math.nan))


def env_steps_sampled(result: dict[str, Any]) -> int:
    """Env steps sampled since the start of training."""
    runners = result.get("env_runners", {})
    return int(runners.get("num_env_steps_sampled_lifetime", result.get("num_env_steps_sampled_lifetime", 0)))


def train(args: Args) -> list[dict[str, Any]]:
    """Build PPO, train ``args.iterations`` iterations, print one line each, return the results.

    Expects Ray to be initialised (``main`` does it; tests share one instance).
    """
    algo = build_config(args).build_algo()
    results: list[dict[str, Any]] = []
    try:
        for iteration in range(1, args.iterations + 1):
            result = algo.train()
            results.append(result)
            line = (
                f"iter {iteration:3d}  env_steps {env_steps_sampled(result):7d}  "
                f"episode_return_mean {episode_return_mean(result):+.4f}"
            )
            per_agent = result.get("env_runners", {}).get(AGENT_RETURNS_KEY)
            if args.env != "trading" and per_agent:
                line += "  " + "  ".join(f"{aid} {ret:+.4f}" for aid, ret in sorted(per_agent.items()))
            print(line, flush=True)
        if args.checkpoint_dir:
            path = algo.save_to_path(os.path.abspath(args.checkpoint_dir))
            print(f"checkpoint: {path}")
    finally:
        algo.stop()
    return results


# -- entry point ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> Args:
    """The Args of a command line, read by ``tyro`` (each field's docstring is its help)."""
    import tyro

    return tyro.cli(Args, args=argv, description=__doc__.splitlines()[0])


def init_ray(args: Args) -> None:
    """Join the cluster named by --address / RAY_ADDRESS, or start a local instance of --num-cpus CPUs."""
    import ray

    address = args.address or os.environ.get("RAY_ADDRESS")
    if address:
        # Env runners on other nodes build the catalog in their own FINENVS_DATA cache on first use.
        ray.init(address=address)
    else:
        # address="local": always a fresh instance, even when `ray start` left a cluster running here
        # (plain ray.init() would join that one and refuse num_cpus).
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Parse the arguments, start or join Ray, train, shut Ray down."""
    args = parse_args(argv)  # first, so --help works before Ray is imported
    import ray

    init_ray(args)
    started = time.perf_counter()
    try:
        results = train(args)
    finally:
        ray.shutdown()
    print(f"{args.iterations} iterations in {time.perf_counter() - started:.1f}s")
    return results


if __name__ == "__main__":
    main()
