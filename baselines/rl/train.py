"""Train a stable-baselines3 baseline on a finenvs market, then score it beside the rule baselines.

One script for every algorithm of the table in :mod:`finenvs.baselines.rl.algos`
(the SB3 rl-zoo shape): ``--algo`` picks the algorithm's ``Args`` dataclass,
whose fields are the flags (read by ``tyro``). A run goes: seeding -> training
envs from ``make_vec_env`` on the ``train`` split (real 2024-01-02..2025-12-31
and/or synthetic paths) wrapped in ``VecNormalize`` -> train -> save the model
and the normalisation statistics -> evaluate the saved model deterministically
on the held-out ``eval`` and ``live`` splits, beside every rule baseline on the
very same episodes (:func:`finenvs.baselines.rl.common.evaluate`) -> JSON::

    python -m finenvs.baselines.rl.train --algo ppo --env-id FinTrading-v0 --timesteps 100000 --seed 0
    python -m finenvs.baselines.rl.train --algo sac --help
    finenvs train --algo ppo --env FinTrading-v0 --timesteps 100000 --seeds 0,1,2

Writes a new folder ``<out>/<env_id>__<algo>__s<seed>/`` (``-2``, ``-3``, ... when
taken; ``--overwrite`` replaces it): ``model.zip``, ``vecnormalize.pkl`` (with
``--normalize-obs``, the default) and ``result.json`` (keys in
``finenvs.baselines.rl.common.RESULT_KEYS``). Needs ``finenvs[rl]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import finenvs  # noqa: F401  (registers the envs)
from finenvs.baselines.rl import common
from finenvs.baselines.rl.algos import ALGORITHMS, ALGOS, Args
from finenvs.errors import FinEnvsError


def make_train_envs(args: Args) -> Any:
    """The training envs: ``make_vec_env`` over the ``train`` split (or synthetic paths), then ``VecNormalize``.

    Env ``i`` reads :func:`~finenvs.baselines.rl.common.train_env_kwargs` ``(args, i)`` (with
    ``source="both"`` the even envs are real, the odd synthetic), its action space is seeded
    ``seed + i`` and its first reset uses ``seed + i``; SB3's ``Monitor`` puts ``info["episode"]``.
    """
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    per_env = iter([{"render_mode": None, **common.train_env_kwargs(args, i)} for i in range(args.n_envs)])
    # make_vec_env builds env 0, 1, ... in order, each from one call of this factory
    envs = make_vec_env(lambda: gym.make(args.env_id, **next(per_env)), n_envs=args.n_envs, seed=args.seed)
    if args.normalize_obs or args.normalize_reward:
        envs = VecNormalize(envs, norm_obs=args.normalize_obs, norm_reward=args.normalize_reward,
                            gamma=args.hyperparameters()["gamma"])
    return envs


def train_monitor(args: Args) -> Any:
    """An SB3 callback: a tqdm progress bar, the real training envs' dates, and episode returns.

    Episode returns come from ``info["episode"]`` (SB3's ``Monitor``, added by ``make_vec_env``).
    Dates are the ``info["date"]`` of every step of the envs that read real data.
    """
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    real = {i for i in range(args.n_envs) if common.is_real_env(args, i)}

    class TrainMonitor(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.bar: Any = None
            self.returns: list[float] = []
            self.dates: list[str] = []  # the first and last real date seen

        def _on_training_start(self) -> None:
            if args.progress:
                self.bar = tqdm(total=args.timesteps, desc=f"{args.algo} {args.env_id} seed {args.seed}",
                                unit="step", file=sys.stderr, mininterval=0.5, dynamic_ncols=True)

        def _on_step(self) -> bool:
            infos = self.locals.get("infos") or ()
            for i, info in enumerate(infos):
                day = info.get("date") if i in real else None
                if day is not None:
                    self.dates = [min(self.dates[0], day), max(self.dates[1], day)] if self.dates else [day, day]
                if "episode" in info:
                    self.returns.append(float(info["episode"]["r"]))
                    if self.bar is not None:
                        self.bar.set_postfix(episodes=len(self.returns),
                                             ret=f"{np.mean(self.returns[-100:]):+.4f}", refresh=False)
            if self.bar is not None:
                self.bar.update(max(0, min(len(infos), args.timesteps - self.bar.n)))
            return True

        def _on_training_end(self) -> None:
            if self.bar is not None:
                self.bar.close()

        def summary(self) -> dict[str, Any]:
            last_100 = float(np.mean(self.returns[-100:])) if self.returns else None
            return {"episodes": len(self.returns), "mean_return_last_100": last_100,
                    "real_dates": self.dates or None, "timesteps_done": int(self.num_timesteps)}

    return TrainMonitor()


def train(args: Args) -> tuple[Any, Any, Any]:
    """Train ``args.algo`` on the training data only; returns ``(model, training envs, monitor callback)``."""
    common.check_args(args.algo, args)
    common.require_rl()
    import stable_baselines3
    import torch

    # seeding: Python, numpy, torch; the envs through make_vec_env (and SB3's seed=)
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (SB3 draws minibatches from the global generator)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    torch.backends.cudnn.deterministic = True

    envs = make_train_envs(args)
    algorithm = getattr(stable_baselines3, args.sb3_class)
    model = algorithm("MlpPolicy", envs, **args.sb3_kwargs(envs.action_space), seed=args.seed, device="cpu", verbose=0)
    monitor = train_monitor(args)
    model.learn(total_timesteps=args.timesteps, callback=monitor)
    return model, envs, monitor


def run(args: Args) -> dict[str, Any]:
    """Train, save, evaluate beside the rule baselines, write ``result.json``; returns the result."""
    began = time.perf_counter()
    model, envs, monitor = train(args)
    train_seconds = time.perf_counter() - began

    out = common.run_dir(args, args.algo)
    model.save(out / "model.zip")
    vecnormalize = None
    if args.normalize_obs or args.normalize_reward:  # the training envs are a VecNormalize
        vecnormalize = out / "vecnormalize.pkl"
        envs.save(str(vecnormalize))
    envs.close()

    # evaluate what was saved: the model from its zip, observations normalised by the saved, frozen statistics
    model = type(model).load(out / "model.zip", device="cpu")
    splits = common.evaluate(model, args, algo=args.algo, vecnormalize_path=vecnormalize)

    files = {"model": out / "model.zip", "vecnormalize": vecnormalize, "result": out / "result.json"}
    result = common.make_result(args.algo, args, {**monitor.summary(), "seconds": train_seconds}, splits, files)
    common.write_result(out / "result.json", result)
    return result


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """``--algo NAME`` chooses the algorithm; its ``Args`` fields are the other flags (``tyro``).

    Dicts are JSON (``--env-kwargs '{"fee_bps": 10}'``, ``--synthetic null``), tuples are
    space-separated (``--eval-splits eval live``), booleans ``--flag`` / ``--no-flag``.
    """
    import tyro
    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec

    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "python -m finenvs.baselines.rl.train"
    chooser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0], add_help=False,
                                      allow_abbrev=False, epilog=f"'{prog} --algo NAME --help' lists its flags")
    chooser.add_argument("--algo", choices=ALGOS, help="the algorithm (required)")
    chooser.add_argument("-h", "--help", action="store_true", help="show this help message and exit")
    chosen, rest = chooser.parse_known_args(argv)
    if chosen.algo is None:
        if chosen.help:
            chooser.print_help()
            raise SystemExit(0)
        chooser.error("the following arguments are required: --algo")

    registry = ConstructorRegistry()

    @registry.primitive_rule
    def json_object(info: Any) -> PrimitiveConstructorSpec | None:
        optional = info.type == (dict[str, Any] | None)
        if info.type != dict[str, Any] and not optional:
            return None

        def parse(texts: list[str]) -> dict[str, Any] | None:
            value = json.loads(texts[0])
            if not isinstance(value, dict) and not (optional and value is None):
                raise ValueError(f"expected a JSON object{' or null' if optional else ''}, got {texts[0]!r}")
            return value

        return PrimitiveConstructorSpec(
            nargs=1, metavar="JSON", instance_from_str=parse, str_from_instance=lambda value: [json.dumps(value)],
            is_instance=lambda value: isinstance(value, dict) or (optional and value is None))

    return tyro.cli(ALGORITHMS[chosen.algo], args=[*rest, *(["--help"] if chosen.help else [])],
                    prog=f"{prog} --algo {chosen.algo}", registry=registry)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, check (exit code 2 and one line on a bad argument), run, print the summary table."""
    args = parse_args(argv)
    try:  # every bad argument fails here, in one line, before any training
        common.check_args(args.algo, args)
        common.require_rl()
    except (ValueError, KeyError, ImportError, FinEnvsError) as exc:
        print(f"{args.algo}: error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 2
    result = run(args)
    print(common.summary_table([result]))
    print(f"\nmodel, statistics and result.json in {Path(result['files']['result']).parent}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
