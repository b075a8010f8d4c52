"""What the stable-baselines3 baselines share: argument checks, which data each env sees, evaluation
beside the rule baselines, results, tables and run folders.

:mod:`finenvs.baselines.rl.train` trains any algorithm of the table in
:mod:`finenvs.baselines.rl.algos`; this module holds what must be identical across
them (and what ``finenvs train`` and the benchmarks call), so their results compare:

* :func:`check_args`: clear ``ValueError`` messages for any argument a run cannot use;
* :func:`train_env_kwargs` / :func:`eval_env_kwargs`: which data each env sees.
  Training envs read the ``train`` split (2024-01-02..2025-12-31) or synthetic
  paths, never ``eval`` or ``live``;
* what differs between families is the family's :class:`~finenvs.tasks.spec.RLSpec`
  (``task_of(env_id).rl``; None: no RL baseline): training defaults, how a synthetic
  market maps onto env arguments, how evaluation episodes are chosen, the wealth
  path and any extra scores. Which algorithms apply follows from the env's action
  space (:func:`action_kind`);
* :func:`evaluate`: the trained agent (deterministic actions, observations normalised by
  the saved VecNormalize statistics, frozen: :func:`load_frozen_normalization`) and every
  applicable rule baseline of :mod:`finenvs.baselines.registry` on the very same episodes
  of each evaluation split, scored with :mod:`finenvs.scoring` (CR, SR, MDD);
* :func:`make_result`, :func:`write_result`, :func:`run_dir`, :func:`summary_table`, :func:`markdown_table`.

Scores (per episode, then the mean over a split's episodes)
    From the wealth path ``W`` (``RLSpec.wealth``: ``info["equity"]`` unless the
    family says otherwise, e.g. a hedging book on a notional of one initial spot),
    simple returns ``r_t = W_t / W_{t-1} - 1`` give ``cumulative_return`` (CR),
    ``sharpe`` (SR, annualised with 252, ``ddof=1``; NaN when undefined, written as
    JSON ``null`` and left out of the mean) and ``max_drawdown`` (MDD, a positive
    fraction). A family adds its own task scores per episode and per split
    (``RLSpec.episode_scores`` and ``run_scores``, e.g. the hedging error's mean,
    std and RMSE).

Torch and stable-baselines3 load lazily; without them :func:`require_rl` raises
``ImportError`` naming the extra to install (:data:`RL_EXTRA`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import shutil
import sys
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

import finenvs
from finenvs.baselines.registry import applicable_policies, make_policy
from finenvs.baselines.rl.algos import ALGORITHMS, ALGOS
from finenvs.scoring import SHARPE_LABELS, cumulative_return, max_drawdown, returns_from_wealth, sharpe_ratio
from finenvs.tasks import task_of, tasks
from finenvs.tasks.spec import RLSpec
from finenvs.text.markdown import NA, fmt_number, md_table

#: How to install what the RL baselines need.
RL_EXTRA = "pip install torch==2.13.0 && pip install 'finenvs[rl]'"
#: Training data: the real ``train`` split, synthetic paths, or both (even env indices real, odd synthetic).
SOURCES = ("real", "synthetic", "both")
#: Evaluation splits: the real held-out ``eval`` and ``live`` windows, or fresh ``synthetic`` paths.
EVAL_SPLITS = ("eval", "live", "synthetic")
#: Env arguments a run sets itself (so a split can never leak into training).
RESERVED_ENV_KWARGS = ("split", "start", "end", "source", "synthetic", "data", "render_mode", "model_params")
#: Episodes per evaluation split when ``Args.eval_episodes`` is None and the split's episodes are drawn
#: by seed (synthetic paths, random real windows).
DEFAULT_SEEDED_EPISODES = 50
#: Keys of the JSON result of every run.
RESULT_KEYS = ("algo", "env_id", "seed", "timesteps", "args", "train", "splits", "files", "versions")
#: Keys of ``result["splits"][split]``.
SPLIT_KEYS = ("env_kwargs", "episodes", "dates", "policies")
#: Keys of ``result["splits"][split]["policies"][name]``.
POLICY_KEYS = ("cumulative_return", "sharpe", "max_drawdown", "mean_episode_reward", "n_episodes", "per_episode")
#: Metrics the tables show: (key, header, scale, format).
TABLE_METRICS = (("cumulative_return", "CR %", 100.0, 2, True), ("sharpe", SHARPE_LABELS["standard"], 1.0, 2, True),
                 ("max_drawdown", "MDD %", 100.0, 2, False))


# ---------------------------------------------------------------------------- dependencies and checks
def require_rl() -> None:
    """Import torch and stable-baselines3, or raise ``ImportError`` naming the extra to install."""
    for module in ("torch", "stable_baselines3"):
        try:
            __import__(module)
        except ImportError as exc:
            raise ImportError(f"the RL baselines need {module}, which is not installed: {RL_EXTRA}") from exc


def rl_env_ids() -> list[str]:
    """The registered envs these baselines train on: those whose task spec has an :class:`RLSpec`."""
    return [spec.env_id for spec in tasks() if spec.rl is not None]


def rl_spec(env_id: str) -> RLSpec:
    """The :class:`RLSpec` of ``env_id``'s family.

    Raises:
        KeyError: Not a finenvs env (lists the valid ids).
        ValueError: The family has no RL baseline (lists the envs that have one).
    """
    rl = task_of(env_id).rl
    if rl is None:
        raise ValueError(f"{env_id} has no RL baseline; the RL baselines train on {rl_env_ids()}")
    return rl


def action_kind(action_space: gym.Space) -> str:
    """``"discrete"`` (a ``Discrete`` space) or ``"box"`` (a ``Box``): which algorithms can act in it.

    Raises:
        ValueError: Any other space (no algorithm of the table acts in it).
    """
    if isinstance(action_space, gym.spaces.Discrete):
        return "discrete"
    if isinstance(action_space, gym.spaces.Box):
        return "box"
    raise ValueError(f"the RL baselines act in Discrete or Box action spaces, not {action_space}")


def _action_space(env_id: str, env_kwargs: dict[str, Any]) -> gym.Space | None:
    """The action space of ``env_id`` built with ``env_kwargs``, else with its registry defaults alone.

    Arguments that do not build an env are reported later, with the split they fail
    for (:func:`check_args` builds every env); None if neither builds.
    """
    for kwargs in (env_kwargs, {}):
        try:
            env = gym.make(env_id, **{**kwargs, "render_mode": None})
        except (ValueError, KeyError, TypeError):
            continue
        space = env.action_space
        env.close()
        return space
    return None


def _check_action_space(algo: str, env_id: str, action_space: gym.Space) -> None:
    kind = action_kind(action_space)
    handled = ALGORITHMS[algo].action_spaces
    if kind not in handled:
        hint = [a for a in ALGOS if kind in ALGORITHMS[a].action_spaces]
        space = "a continuous Box action" if kind == "box" else "a Discrete action"
        raise ValueError(
            f"{algo} cannot act in {env_id}: it has {space} space and {algo} handles only "
            f"{' or '.join(handled)} actions; use one of {hint}"
        )


def check_args(algo: str, args: Any, *, build_envs: bool = True) -> None:
    """Raise ``ValueError`` with a clear message for any argument a run cannot use.

    Which algorithms apply follows from the env's action space (:func:`action_kind`),
    read from one env built with ``env_kwargs``. With ``build_envs`` (default) it
    also builds the training and evaluation envs once, so bad env arguments (an
    unknown symbol, a window that does not fit a split) fail before any training
    time is spent.
    """
    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; valid algos: {list(ALGOS)}")
    rl_spec(args.env_id)  # KeyError naming the valid ids for a non-finenvs id; ValueError without an RL baseline
    if not isinstance(args.env_kwargs, dict):
        raise ValueError(f"env_kwargs={args.env_kwargs!r} must be a dict of env arguments")
    for name, kwargs in (("env_kwargs", args.env_kwargs), ("train_kwargs", args.train_kwargs or {})):
        if not isinstance(kwargs, dict):
            raise ValueError(f"{name}={kwargs!r} must be a dict of env arguments")
        reserved = sorted(set(kwargs) & set(RESERVED_ENV_KWARGS))
        if reserved:
            raise ValueError(
                f"{name} may not set {reserved}: a run chooses the split and the data itself "
                "(use source=real|synthetic|both, synthetic={...} and eval_splits)"
            )
    space = _action_space(args.env_id, args.env_kwargs)
    if space is not None:
        _check_action_space(algo, args.env_id, space)
    _positive_int("timesteps", args.timesteps)
    _positive_int("n_envs", args.n_envs)
    if isinstance(args.seed, bool) or not isinstance(args.seed, int) or args.seed < 0:
        raise ValueError(f"seed={args.seed!r} must be an integer >= 0")
    if args.source not in SOURCES:
        raise ValueError(f"source={args.source!r}; valid sources: {list(SOURCES)}")
    if args.source == "both" and args.n_envs < 2:
        raise ValueError("source='both' alternates real and synthetic envs; it needs n_envs >= 2")
    splits = tuple(args.eval_splits)
    bad = [s for s in splits if s not in EVAL_SPLITS]
    if bad or not splits:
        raise ValueError(f"eval_splits={list(splits)!r}; choose one or more of {list(EVAL_SPLITS)} "
                         "(training data is never an evaluation split)")
    if args.eval_episodes is not None:
        _positive_int("eval_episodes", args.eval_episodes)
    if args.baselines is not None:
        valid = baseline_names(args.env_id)
        unknown = [b for b in args.baselines if b not in valid]
        if unknown:
            raise ValueError(f"unknown baseline(s) {unknown} for {args.env_id}; valid: {valid}")
    if build_envs:
        _check_envs(algo, args)


def _check_envs(algo: str, args: Any) -> None:
    """Build every training and evaluation env once, so bad env arguments fail before training starts."""
    rl = rl_spec(args.env_id)
    builds = [(f"training env {i}", train_env_kwargs(args, i)) for i in range(min(args.n_envs, 2))]
    builds += [(f"split {split!r}", eval_env_kwargs(args, split)) for split in args.eval_splits]
    spaces: list[tuple[str, Any, Any]] = []
    for what, kwargs in builds:
        try:
            env = gym.make(args.env_id, **{"render_mode": None, **kwargs})
        except (ValueError, KeyError, TypeError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise ValueError(f"cannot build {args.env_id} for the {what} with {kwargs}: "
                             f"{rl.hint(str(message))}") from exc
        if not spaces:
            _check_action_space(algo, args.env_id, env.action_space)
        spaces.append((what, env.observation_space, env.action_space))
        for name in args.baselines or ():
            try:
                make_policy(name, args.env_id, env)
            except ValueError as exc:
                raise ValueError(f"baseline {name!r} cannot act in the {what}: {exc}") from exc
        env.close()
    first = spaces[0]
    for what, obs_space, act_space in spaces[1:]:
        if obs_space.shape != first[1].shape or act_space != first[2]:
            raise ValueError(
                f"the {what} has observation shape {obs_space.shape} and action space {act_space}, the "
                f"{first[0]} {first[1].shape} and {first[2]}: one policy cannot act in both (e.g. a synthetic "
                "FinHedging-v0 universe needs as many assets as the real one: synthetic={\"n_assets\": 8})"
            )


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be an integer >= 1")


def baseline_names(env_id: str, env: gym.Env | None = None) -> list[str]:
    """Every rule baseline that applies to ``env_id``, oracles (which read the future) left out.

    With ``env``, also those that cannot act in it (a rule needing more history
    than the env's observation window, e.g. ``momentum`` with ``window < 21``).
    """
    from finenvs.baselines.registry import policies_of

    out = []
    for name in applicable_policies(env_id):
        if getattr(policies_of(env_id)[name][0], "oracle", False):
            continue
        if env is not None:
            try:
                make_policy(name, env_id, env)
            except ValueError:
                continue
        out.append(name)
    return out


# ---------------------------------------------------------------------------- which data each env sees
def synthetic_env_kwargs(env_id: str, spec: dict[str, Any] | None) -> dict[str, Any]:
    """Env arguments of a synthetic market ``{"model": ..., "params": {...}}`` (None: the env's default).

    The family's ``RLSpec.synthetic`` maps it (by default the env takes it as
    ``source="synthetic", synthetic=spec``).
    """
    return rl_spec(env_id).synthetic_kwargs(spec)


def real_env_kwargs(split: str) -> dict[str, Any]:
    """Env arguments of the shipped data restricted to a named split."""
    return {"source": "real", "split": split}


def is_real_env(args: Any, idx: int) -> bool:
    """Whether training env ``idx`` reads real data (``source="both"``: the even indices)."""
    return args.source == "real" or (args.source == "both" and idx % 2 == 0)


def train_env_kwargs(args: Any, idx: int) -> dict[str, Any]:
    """Env arguments of training env ``idx``: the ``train`` split or synthetic paths, never eval/live."""
    data = real_env_kwargs("train") if is_real_env(args, idx) else synthetic_env_kwargs(args.env_id, args.synthetic)
    extra = rl_spec(args.env_id).train_kwargs if args.train_kwargs is None else args.train_kwargs
    return {**args.env_kwargs, **extra, **data}


def eval_env_kwargs(args: Any, split: str) -> dict[str, Any]:
    """Env arguments of an evaluation split (``train_kwargs`` do not apply: whole windows)."""
    data = synthetic_env_kwargs(args.env_id, args.synthetic) if split == "synthetic" else real_env_kwargs(split)
    return {**args.env_kwargs, **data}


def eval_episodes(env: gym.Env, args: Any, split: str) -> list[tuple[int, dict[str, Any]]]:
    """``(reset seed, reset options)`` of each evaluation episode of a split.

    A real split played in whole windows (the env has no ``episode_length``) follows
    the family's ``RLSpec.eval_episodes``: ``"universe"``, one episode per symbol of
    the env's universe (``eval_episodes`` cycles through them); ``"fixed"``, the
    window and universe are fixed, so one episode. Otherwise (synthetic paths, random
    real windows, ``"seeded"``) ``eval_episodes`` seeds (default
    :data:`DEFAULT_SEEDED_EPISODES`) from ``eval_seed``.
    """
    base: Any = env.unwrapped  # a finenvs env: its universe lists the symbols
    whole = split != "synthetic" and getattr(base, "episode_length", None) is None
    how = rl_spec(args.env_id).eval_episodes if whole else "seeded"
    if how == "universe":
        universe = list(base.universe)
        n = args.eval_episodes or len(universe)
        return [(args.eval_seed + i, {"symbol": universe[i % len(universe)]}) for i in range(n)]
    default = 1 if how == "fixed" else DEFAULT_SEEDED_EPISODES
    return [(args.eval_seed + i, {}) for i in range(args.eval_episodes or default)]


def load_frozen_normalization(path: str | Path, venv: Any) -> Any:
    """Wrap ``venv`` in the VecNormalize saved at ``path``, frozen: ``training=False, norm_reward=False``.

    Frozen statistics are never updated by the observations they normalise, so
    evaluation data cannot leak into them, and rewards come back unscaled.
    """
    from stable_baselines3.common.vec_env import VecNormalize

    frozen = VecNormalize.load(str(path), venv)
    frozen.training = False
    frozen.norm_reward = False
    return frozen


def run_dir(args: Any, algo: str) -> Path:
    """A new, empty run folder ``<out>/<env_id>__<algo>__s<seed>``, created; a run never writes into another's.

    When that folder exists, ``args.overwrite`` deletes it and creates it again; otherwise the run
    takes the first free ``<env_id>__<algo>__s<seed>-2``, ``-3``, ... Each candidate is created with
    ``mkdir`` (which fails on an existing folder), so concurrent runs of one seed never share a folder.
    """
    base = Path(args.out) / f"{args.env_id}__{algo}__s{args.seed}"
    base.parent.mkdir(parents=True, exist_ok=True)
    if getattr(args, "overwrite", False) and base.is_dir():
        shutil.rmtree(base)
    path, copy = base, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            copy += 1
            path = base.with_name(f"{base.name}-{copy}")


# ---------------------------------------------------------------------------- evaluation
class _Tape:
    """One episode's wealth path, rewards and identity, from its reset info and step infos."""

    def __init__(self, rl: RLSpec, seed: int, first: dict[str, Any]) -> None:
        self.rl = rl
        self.seed = seed
        self.first = first
        self.wealth = [rl.wealth_of(first, first)]
        self.reward = 0.0
        self.steps = 0
        self.last: dict[str, Any] = first

    def add(self, reward: SupportsFloat, info: dict[str, Any]) -> None:
        self.wealth.append(self.rl.wealth_of(self.first, info))
        self.reward += float(reward)
        self.steps += 1
        self.last = info

    def identity(self) -> dict[str, Any]:
        """What makes two policies' episodes the same episode (data window, symbol, first price)."""
        first = self.first
        return {
            "seed": self.seed,
            "symbol": first.get("symbol", "/".join(first.get("symbols", ())) or None),
            "start": first.get("date"),
            "end": self.last.get("date"),
            "steps": self.steps,
            "first_price": first.get("price", first.get("spot")),
        }

    def score(self) -> dict[str, Any]:
        returns = returns_from_wealth(np.asarray(self.wealth))
        out = {
            "cumulative_return": cumulative_return(returns),
            "sharpe": sharpe_ratio(returns),
            "max_drawdown": max_drawdown(returns),
            "reward": self.reward,
        }
        return {**out, **self.rl.scores_of_episode(self.first, self.last)}


def _play_rule(env: gym.Env, policy: Any, rl: RLSpec, seed: int, options: dict[str, Any]) -> _Tape:
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, info = env.reset(seed=seed, options=options or None)
    tape = _Tape(rl, seed, info)
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, info))
        tape.add(reward, info)
        if terminated or truncated:
            return tape


def _play_agent(model: Any, venv: Any, rl: RLSpec, seed: int, options: dict[str, Any]) -> _Tape:
    """One deterministic episode of ``model`` in a one-env VecEnv (possibly a frozen VecNormalize)."""
    venv.seed(seed)
    if options:
        venv.set_options(options)
    obs = venv.reset()
    tape = _Tape(rl, seed, venv.unwrapped.reset_infos[0])
    while True:
        action, _ = model.predict(obs, deterministic=True)
        obs, rewards, dones, infos = venv.step(action)
        tape.add(float(rewards[0]), infos[0])  # the terminal step's info, before the auto-reset
        if dones[0]:
            return tape


def _aggregate(rl: RLSpec, tapes: list[_Tape]) -> dict[str, Any]:
    scores = [t.score() for t in tapes]

    def mean(key: str) -> float | None:
        values = [s[key] for s in scores if s[key] is not None and math.isfinite(s[key])]
        return float(np.mean(values)) if values else None

    out: dict[str, Any] = {
        "cumulative_return": mean("cumulative_return"),
        "sharpe": mean("sharpe"),
        "max_drawdown": mean("max_drawdown"),
        "mean_episode_reward": mean("reward"),
        "n_episodes": len(scores),
        "per_episode": scores,
    }
    return {**out, **(rl.scores_of_run(scores) if scores else {})}


def make_eval_env(args: Any, split: str) -> Any:
    """The agent's env on ``split``: a one-env ``make_vec_env``, action space seeded ``eval_seed``."""
    from stable_baselines3.common.env_util import make_vec_env

    kwargs = {"render_mode": None, **eval_env_kwargs(args, split)}
    return make_vec_env(args.env_id, n_envs=1, seed=args.eval_seed, env_kwargs=kwargs)


def evaluate(model: Any, args: Any, *, algo: str, vecnormalize_path: str | Path | None = None) -> dict[str, Any]:
    """Score ``model`` and the rule baselines on the same episodes of each of ``args.eval_splits``.

    The agent acts deterministically in the one-env VecEnv of :func:`make_eval_env`;
    with ``vecnormalize_path`` that env is wrapped in the saved
    statistics, frozen (:func:`load_frozen_normalization`). Rule baselines act in
    a plain env with the same arguments, reset with the same seeds and options;
    every episode's identity (symbol, dates, first price, length) is checked to
    match the agent's. By default every applicable rule baseline plays (oracles,
    and rules needing more history than the observation window, left out).

    Returns:
        ``{split: {"env_kwargs", "episodes", "dates", "policies": {name: scores}}}``
        with the agent under ``algo`` and each baseline under its registry name.
    """
    rl = rl_spec(args.env_id)
    out: dict[str, Any] = {}
    for split in args.eval_splits:
        kwargs = eval_env_kwargs(args, split)
        env = gym.make(args.env_id, **{"render_mode": None, **kwargs})
        names = list(args.baselines) if args.baselines is not None else baseline_names(args.env_id, env)
        episodes = eval_episodes(env, args, split)
        venv = make_eval_env(args, split)
        if vecnormalize_path is not None:
            venv = load_frozen_normalization(vecnormalize_path, venv)
        agent = [_play_agent(model, venv, rl, seed, options) for seed, options in episodes]
        venv.close()
        identities = [t.identity() for t in agent]
        policies = {algo: _aggregate(rl, agent)}
        for name in names:
            policy = make_policy(name, args.env_id, env, seed=args.seed)
            tapes = [_play_rule(env, policy, rl, seed, options) for seed, options in episodes]
            if [t.identity() for t in tapes] != identities:
                raise RuntimeError(f"baseline {name} did not replay the agent's episodes on split {split!r}")
            policies[name] = _aggregate(rl, tapes)
        env.close()
        dates = [d for i in identities for d in (i["start"], i["end"]) if d is not None]
        out[split] = {
            "env_kwargs": kwargs,
            "episodes": identities,
            "dates": [min(dates), max(dates)] if dates else None,
            "policies": policies,
        }
    return out


# ---------------------------------------------------------------------------- results
def versions() -> dict[str, str]:
    """Versions of what a result depends on."""
    out = {"finenvs": finenvs.__version__, "gymnasium": gym.__version__, "numpy": np.__version__,
           "python": platform.python_version()}
    for module in ("stable_baselines3", "torch"):
        mod = sys.modules.get(module)
        if mod is not None:
            out[module] = mod.__version__
    return out


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return _finite_or_none(float(value))  # NaN (undefined, e.g. a flat episode's SR) -> null
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, Path):
        return str(value)
    return value


def make_result(algo: str, args: Any, train: dict[str, Any], splits: dict[str, Any],
                files: dict[str, Any]) -> dict[str, Any]:
    """The JSON result of one run (keys :data:`RESULT_KEYS`), NaN written as null."""
    return _jsonable({
        "algo": algo,
        "env_id": args.env_id,
        "seed": args.seed,
        "timesteps": args.timesteps,
        "args": dataclasses.asdict(args),
        "train": train,
        "splits": splits,
        "files": files,
        "versions": versions(),
    })


def write_result(path: str | Path, result: dict[str, Any]) -> Path:
    """Write a result as strict JSON (NaN is null)."""
    path = Path(path)
    path.write_text(json.dumps(_jsonable(result), indent=2, allow_nan=False) + "\n")
    return path


# ---------------------------------------------------------------------------- tables
def _metrics(results: list[dict[str, Any]], split: str) -> tuple[tuple[str, str, float, int, bool], ...]:
    """(key, header, scale, digits, sign) of CR/SR/MDD, then of the family's own columns (``RLSpec.columns``) that
    the agent's scores have."""
    policy = results[0]["splits"][split]["policies"][results[0]["algo"]]
    own = tuple((c.key, c.label, c.scale, c.digits, False) for c in rl_spec(results[0]["env_id"]).columns)
    return TABLE_METRICS + tuple(m for m in own if m[0] in policy)


def _cells(results: list[dict[str, Any]], split: str, policy: str) -> list[str]:
    cells = []
    for key, _, scale, digits, sign in _metrics(results, split):
        values = [r["splits"][split]["policies"][policy].get(key) for r in results]
        values = [scale * v for v in values if v is not None]
        if not values:
            cells.append(NA)
        elif len(results) == 1:
            cells.append(fmt_number(values[0], digits=digits, sign=sign))
        else:
            std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
            cells.append(f"{fmt_number(float(np.mean(values)), digits=digits, sign=sign)} ± {fmt_number(std)}")
    return cells


def _policies(results: list[dict[str, Any]], split: str) -> list[str]:
    names: list[str] = []
    for r in results:
        for name in r["splits"][split]["policies"]:
            if name not in names:
                names.append(name)
    return names


def summary_table(results: list[dict[str, Any]]) -> str:
    """A terminal table per split: the agent beside the rule baselines, CR/SR/MDD (mean ± std over seeds)."""
    if not results:
        return ""
    first = results[0]
    seeds = ",".join(str(r["seed"]) for r in results)
    lines = [f"{first['env_id']}  {first['algo']}  {first['timesteps']:,} timesteps  source={first['args']['source']}"
             f"  seeds {seeds}" + ("  (mean ± std over seeds)" if len(results) > 1 else "")]
    spans = [r["train"]["real_dates"] for r in results if r["train"].get("real_dates")]
    if spans:
        lines.append(f"trained on real dates {min(s[0] for s in spans)}..{max(s[1] for s in spans)} (train split)")
    for split, block in first["splits"].items():
        n = block["policies"][first["algo"]]["n_episodes"]
        span = f", {block['dates'][0]}..{block['dates'][1]}" if block["dates"] else ""
        lines.append("")
        lines.append(f"split {split} ({n} episode{'s' if n != 1 else ''}{span}; mean over episodes)")
        lines.append(md_table(["policy", *(m[1] for m in _metrics(results, split))],
                              [[name, *_cells(results, split, name)] for name in _policies(results, split)]))
    return "\n".join(lines)


def markdown_table(results: list[dict[str, Any]], split: str, label: str | None = None) -> list[str]:
    """Markdown rows (header included) of one split: the agent, then each rule baseline."""
    return md_table(["policy", *(m[1] for m in _metrics(results, split))],
                    [[f"**{label or name}**" if name == results[0]["algo"] else name, *_cells(results, split, name)]
                     for name in _policies(results, split)]).splitlines()


__all__ = [
    "DEFAULT_SEEDED_EPISODES",
    "EVAL_SPLITS",
    "POLICY_KEYS",
    "RESULT_KEYS",
    "RL_EXTRA",
    "SOURCES",
    "SPLIT_KEYS",
    "action_kind",
    "baseline_names",
    "check_args",
    "eval_env_kwargs",
    "eval_episodes",
    "evaluate",
    "load_frozen_normalization",
    "make_eval_env",
    "make_result",
    "markdown_table",
    "real_env_kwargs",
    "require_rl",
    "rl_env_ids",
    "rl_spec",
    "run_dir",
    "summary_table",
    "synthetic_env_kwargs",
    "train_env_kwargs",
    "write_result",
]
