"""``finenvs train``: a stable-baselines3 baseline trained per seed and scored beside the rule baselines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from finenvs.cli.common import json_object
from finenvs.text.plural import counted

#: ``finenvs train --algo`` choices; the scripts of finenvs.baselines.rl (kept here so the parser stays light).
RL_ALGOS = ("ppo", "a2c", "dqn", "sac", "td3")


def add_parser(sub: argparse._SubParsersAction) -> None:
    train = sub.add_parser(
        "train",
        help="train a stable-baselines3 baseline and score it beside the rule baselines (needs finenvs[rl])",
        description="Train PPO, A2C or DQN (FinTrading-v0, FinHedging-v0) or SAC or TD3 (FinDeltaHedge-v0) on the "
        "train split (real and/or synthetic), then evaluate the saved model deterministically on the eval and live "
        "splits beside every rule baseline on the same episodes, and print CR/SR/MDD per split. Each seed writes a "
        "new folder <out>/<env>__<algo>__s<seed>/ with model.zip, vecnormalize.pkl and result.json. A run never "
        "overwrites another: when that folder exists the run writes <env>__<algo>__s<seed>-2/ (then -3, ...) "
        "beside it, unless --overwrite replaces it.",
    )
    train.add_argument("--algo", required=True, choices=RL_ALGOS, help="algorithm")
    train.add_argument("--env", default="FinTrading-v0", help="env id (default: FinTrading-v0)")
    train.add_argument("--timesteps", required=True, type=int, help="training env steps per seed")
    train.add_argument("--seed", type=int, default=0, help="seed of one run (default: 0)")
    train.add_argument("--seeds", type=_seed_list, help="comma-separated seeds, one run each, e.g. 0,1,2 (overrides --seed)")
    train.add_argument("--source", choices=["real", "synthetic", "both"],
                       help="training data (default: real; synthetic for sac/td3)")
    train.add_argument("--synthetic", help="synthetic market as JSON, e.g. '{\"model\": \"gbm\", \"params\": {\"mu\": 0.1}}'")
    train.add_argument("--env-kwargs", help="env arguments of every split as JSON, e.g. '{\"fee_bps\": 10, \"window\": 20}'")
    train.add_argument("--n-envs", type=int, help="parallel training envs (default: the script's, 4 or 1)")
    train.add_argument("--eval-splits", help="comma-separated: eval, live, synthetic (default: eval,live)")
    train.add_argument("--eval-episodes", type=int, help="episodes per evaluation split (default: one per symbol)")
    train.add_argument("--normalize-obs", action=argparse.BooleanOptionalAction, default=None,
                       help="VecNormalize observations, frozen at evaluation (default: on)")
    train.add_argument("--out", type=Path, default=Path("runs/rl"), help="parent folder of the runs (default: runs/rl)")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing <out>/<env>__<algo>__s<seed>/ (default: keep it and write the "
                       "new run to <env>__<algo>__s<seed>-2/, -3, ...)")
    train.add_argument("--quiet", action="store_true",
                       help="no progress bar and no tables: only the last line (where the results are) and any problems")
    train.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    train.set_defaults(handler=handle)


def _seed_list(text: str) -> list[int]:
    """``0,1,2`` -> ``[0, 1, 2]`` (argparse type of ``--seeds``)."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers, e.g. 0,1,2") from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more seeds >= 0, e.g. 0,1,2")
    return seeds


def handle(args: argparse.Namespace) -> int:
    """``finenvs train``: one run of a finenvs.baselines.rl script per seed, then the summary table."""
    import dataclasses

    from finenvs.baselines.rl import load_algo
    from finenvs.baselines.rl.common import check_args, require_rl, summary_table

    script = load_algo(args.algo)
    overrides: dict[str, Any] = {"env_id": args.env, "timesteps": args.timesteps, "out": str(args.out),
                                 "overwrite": args.overwrite, "progress": not args.quiet}
    for key in ("source", "n_envs", "eval_episodes", "normalize_obs"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    if args.eval_splits is not None:
        overrides["eval_splits"] = tuple(s.strip() for s in args.eval_splits.split(",") if s.strip())
    synthetic = json_object("--synthetic", args.synthetic)
    if synthetic is not None:
        overrides["synthetic"] = synthetic
    env_kwargs = json_object("--env-kwargs", args.env_kwargs)
    defaults = script.Args()
    if env_kwargs is not None:
        overrides["env_kwargs"] = {**defaults.env_kwargs, **env_kwargs}
    runs = [dataclasses.replace(defaults, seed=seed, **overrides) for seed in (args.seeds or [args.seed])]
    check_args(args.algo, runs[0])  # every bad argument fails here, before any training
    for run_args in runs[1:]:
        check_args(args.algo, run_args, build_envs=False)
    require_rl()
    results = [script.run(run_args) for run_args in runs]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    folders = [Path(result["files"]["result"]).parent for result in results]
    if not args.quiet:
        print(summary_table(results))
        print()
        for result, folder in zip(results, folders, strict=True):
            print(f"seed {result['seed']}: {folder}/ (trained {result['train']['seconds']:.1f} s)")
    print(f"{counted(len(results), 'run')} of {args.algo} on {args.env} written to {', '.join(f'{f}/' for f in folders)}")
    return 0
