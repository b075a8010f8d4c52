"""``finenvs run``: one episode of an env with a baseline policy.

The flags any family may accept are declared here (a family names those it accepts in its spec's
``run_options``); a family's own flags (FinQA-v0's ``--topic``) are declared by its spec's ``run_flags`` and
offered from every registered spec, so this command knows no family.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from finenvs.cli.checks import check_episodes

#: ``finenvs run`` flags any family may accept (its task spec's ``run_options``), and those that are env arguments.
RUN_OPTIONS = ("symbol", "symbols", "start", "end", "fee_bps", "fill", "chart", "instance")
ENV_OPTIONS = ("start", "end", "fee_bps", "fill")


def add_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run one episode of an env with a baseline policy")
    run.add_argument("--env", required=True, help="env id, e.g. FinTrading-v0")
    run.add_argument("--policy", required=True, help="baseline name (see `finenvs list`)")
    run.add_argument("--symbol", help="ticker (default: the plan's first, MSFT for the market envs)")
    run.add_argument("--symbols", nargs="+", help="FinHedging-v0 universe (default: its 8 stocks)")
    run.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    run.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    run.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--fee-bps", type=float, help="fee in basis points (default: the env's, 5)")
    run.add_argument("--fill", choices=["close", "next_open"], help="fill model (default: close)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--chart", type=Path, help="write the episode's equity/drawdown chart to this PNG")
    run.add_argument("--instance", type=int, help="index into the env's plan: audit instance, question, options task, "
                     "hedging path (default: 0)")
    for flag, env_ids in family_flags().values():
        try:
            run.add_argument(flag.flag, type=flag.type, metavar=flag.metavar,
                             help=f"{', '.join(env_ids)}: {flag.help}".replace("%", "%%"))
        except argparse.ArgumentError as exc:
            raise ValueError(f"the run flag {flag.flag} of {', '.join(env_ids)}: {exc}") from None
    run.set_defaults(handler=handle)


def family_flags() -> dict[str, tuple[Any, list[str]]]:
    """``{name: (RunFlag, env ids declaring it)}`` over the registered families, in registration order.

    Raises:
        ValueError: Two families declare one flag name with different types or metavars.
    """
    from finenvs.tasks import tasks

    out: dict[str, tuple[Any, list[str]]] = {}
    for task in tasks():
        for flag in task.run_flags:
            first, env_ids = out.setdefault(flag.name, (flag, []))
            if (first.type, first.metavar) != (flag.type, flag.metavar):
                raise ValueError(f"{env_ids[0]} and {task.env_id} declare the run flag {flag.flag} with different "
                                 "types or metavars")
            env_ids.append(task.env_id)
    return out


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def handle(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from finenvs.baselines.registry import make_policy
    from finenvs.evaluation.episodes import generic_run_output, play_episode
    from finenvs.tasks import Selection, task_of

    task = task_of(args.env)  # unknown env -> KeyError -> exit 2
    own = {flag.name: flag for flag in task.run_flags}
    accepted = (*task.run_options, *own)
    given = [name for name in (*RUN_OPTIONS, *family_flags()) if getattr(args, name, None) is not None]
    for name in given:
        if name not in accepted:
            raise ValueError(f"{_flag(name)} is not an option of {task.env_id} "
                             f"(its options: {', '.join(map(_flag, accepted)) or 'none'})")
    for name in given:
        for other in own[name].excludes if name in own else ():
            if other in given:
                raise ValueError(f"give {_flag(other)} or {_flag(name)}, not both")
    symbols = (args.symbol,) if args.symbol else tuple(args.symbols) if args.symbols else None
    selection = Selection(split=args.split, symbols=symbols,
                          instances=(args.instance,) if args.instance is not None else None, seeds=(args.seed,),
                          env_kwargs={k: getattr(args, k) for k in ENV_OPTIONS if getattr(args, k) is not None})
    episode = task.plan(selection)[0]
    check_episodes(task, [episode], build=False)  # unknown symbol, split or date: exit 2 before the env is built
    policies = task.load_baselines()
    if args.policy not in policies:
        raise KeyError(f"unknown policy {args.policy!r} for {task.env_id}; valid policies: {sorted(policies)}")
    kwargs = {**episode.env_kwargs, **(getattr(policies[args.policy][0], "env_kwargs", None) or {})}
    if args.chart:
        kwargs["render_mode"] = "rgb_array"
    env = gym.make(task.env_id, **kwargs)
    policy = make_policy(args.policy, task.env_id, env, seed=args.seed)
    options = episode.options
    for name in given:  # the family's own flags reach the episode through its reset options
        to_options = own[name].options if name in own else None
        if to_options is not None:
            options = to_options(options, getattr(args, name), args.seed)
    result = play_episode(env, policy, seed=episode.seed, options=options, policy_name=args.policy)
    printer = task.run_printer or generic_run_output
    lines, record = printer(env, result, {name: getattr(args, name) for name in given})
    if args.chart:
        _write_png(env.render(), args.chart)
        lines.append(f"  chart: {args.chart}")
    env.close()
    if args.json:
        print(json.dumps(record, indent=2, default=_json_default))
        return 0
    print("\n".join(lines))
    return 0


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def _write_png(rgb: Any, path: Path) -> None:
    from matplotlib.image import imsave

    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(path, rgb)
