"""Every registered env honours Gymnasium's and SB3's conventions, and the shipped JSON is strict.

Parametrised over the task registry, so a new task is checked without editing this file: ``check_env``
with no warning, ``gym.make_vec`` (sync and async) through autoresets, SB3's ``make_vec_env``, a pickle
round trip after reset. Per-env behaviour (accounting, scoring, look-ahead) is tested in each env's own file.
"""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from finenvs.data.manifest import shipped_data_dir
from finenvs.tasks import tasks

BASE_IDS = [spec.env_id for spec in tasks()]
TEXT_IDS = [spec.text_env_id for spec in tasks() if spec.text_env_id]
#: Arguments that make an episode a few steps long (the ids not listed end after one step).
SHORT_EPISODE: dict[str, dict[str, Any]] = {
    "FinTrading-v0": {"episode_length": 5},
    "FinHedging-v0": {"episode_length": 5},
    "FinReport-v0": {"episode_weeks": 2},
    "FinDeltaHedge-v0": {"maturity_days": 3},
}
#: The one warning a text env may give: it is a wrapper by design, and check_env warns about any wrapper.
WRAPPER_WARNING = "is different from the unwrapped version"
#: Episodes each sub-env must finish: the second and third start by autoreset.
EPISODES = 3
MAX_VECTOR_STEPS = 100


def _short(env_id: str) -> dict[str, Any]:
    return dict(SHORT_EPISODE.get(env_id.replace("-text-v0", "-v0"), {}))


def _is_text(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Text)


# ---------------------------------------------------------------------------- check_env
@pytest.mark.parametrize("env_id", BASE_IDS + TEXT_IDS)
def test_check_env_gives_no_warning(env_id):
    env = gym.make(env_id)
    text = env_id in TEXT_IDS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # check_env's render check makes the env again in each render mode from its spec; a text env is a
        # wrapper whose spec makes the base env, so its render check is the base env's (run above)
        check_env(env if text else env.unwrapped, skip_render_check=text)
    messages = [str(w.message) for w in caught if not (text and WRAPPER_WARNING in str(w.message))]
    assert messages == []


# ---------------------------------------------------------------------------- vector envs
def _run_vector(vec: gym.vector.VectorEnv) -> np.ndarray:
    """Step sampled actions until every sub-env has finished ``EPISODES`` episodes; the episodes finished."""
    vec.action_space.seed(0)
    vec.reset(seed=0)
    finished = np.zeros(vec.num_envs, dtype=int)
    for _ in range(MAX_VECTOR_STEPS):
        _, rewards, terminated, truncated, infos = vec.step(vec.action_space.sample())
        assert np.all(np.isfinite(rewards)) and isinstance(infos, dict)
        finished += np.asarray(terminated | truncated, dtype=int)
        if finished.min() >= EPISODES:
            break
    vec.close()
    return finished


@pytest.mark.parametrize("env_id", BASE_IDS + TEXT_IDS)
def test_sync_vector_env_steps_through_autoresets(env_id):
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **_short(env_id))
    assert (_run_vector(vec) >= EPISODES).all()


def test_async_vector_env_steps_through_autoresets():
    vec = gym.make_vec("FinDeltaHedge-v0", num_envs=2, vectorization_mode="async", maturity_days=3)
    assert (_run_vector(vec) >= EPISODES).all()


@pytest.mark.parametrize("env_id", BASE_IDS)
def test_stable_baselines3_make_vec_env_steps_through_autoresets(env_id):
    env_util = pytest.importorskip("stable_baselines3.common.env_util", reason="needs finenvs[rl]")
    probe = gym.make(env_id)
    if _is_text(probe.observation_space) or _is_text(probe.action_space):
        pytest.skip(f"{env_id} is a text task (text observation and action); SB3 takes no text spaces")
    # SB3's default env_kwargs ask for render_mode="rgb_array": every env SB3 can train declares and implements it
    vec = env_util.make_vec_env(env_id, n_envs=2, seed=0, env_kwargs=_short(env_id))
    vec.action_space.seed(0)
    vec.reset()
    finished = np.zeros(2, dtype=int)
    for _ in range(MAX_VECTOR_STEPS):
        _, rewards, dones, _ = vec.step(np.array([vec.action_space.sample() for _ in range(2)]))
        assert np.all(np.isfinite(rewards))
        finished += dones.astype(int)
        if finished.min() >= EPISODES:
            break
    vec.close()
    assert (finished >= EPISODES).all()


def test_sb3_check_env_on_every_non_text_env():
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker", reason="needs finenvs[rl]")
    for env_id in BASE_IDS:
        env = gym.make(env_id)
        if _is_text(env.observation_space):
            continue  # a text task: SB3 takes no text spaces
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sb3_checker.check_env(env.unwrapped, warn=True)
        assert [str(w.message) for w in caught] == [], env_id


# ---------------------------------------------------------------------------- pickle
@pytest.mark.parametrize("env_id", BASE_IDS)
def test_pickle_after_reset_steps_identically(env_id):
    env = gym.make(env_id, **_short(env_id))
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    env.action_space.seed(0)
    for _ in range(4):
        action = env.action_space.sample()
        a, b = env.step(action), clone.step(action)
        np.testing.assert_equal(b, a)
        if a[2] or a[3]:
            break


# ---------------------------------------------------------------------------- shipped JSON
def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (RFC 8259 has no NaN or Infinity)")


SHIPPED_JSON = sorted(shipped_data_dir().rglob("*.json")) + sorted(
    (Path(__file__).resolve().parents[1] / "finenvs" / "tasks").rglob("*.json"))


def test_shipped_json_files_are_found():
    names = {p.name for p in SHIPPED_JSON}
    assert {"MANIFEST.json", "options.json", "options_answer.schema.json"} <= names


@pytest.mark.parametrize("path", SHIPPED_JSON, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_json_is_strict(path):
    json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse)
