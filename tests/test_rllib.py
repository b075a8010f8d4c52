"""Ray RLlib integration: ``examples/rllib_ppo.py`` trains PPO (new API stack) for one iteration.

Skipped unless Ray RLlib is installed (``pip install torch==2.13.0 && pip install -e ".[distributed,marl]"``):
ray[rllib] pins gymnasium exactly and pulls a large dependency tree, so it stays out of ``all`` and of
default CI. The training tests share one local 2-CPU Ray instance (as the example starts it) and use
one remote env runner, so the env creator, the env config and finenvs itself travel to another
process as they would to a cluster node.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

SKIP_REASON = "Ray RLlib integration needs pip install 'finenvs[distributed]'; kept out of default CI"
ray = pytest.importorskip("ray", reason=SKIP_REASON)
pytest.importorskip("ray.rllib", reason=SKIP_REASON)
pytest.importorskip("torch", reason="RLlib's PPO needs torch: pip install torch==2.13.0 (CPU wheel) before the extras")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"
TRAIN_BATCH = 128
EPISODE_LENGTH = 16
NUM_TRADERS = 2


@pytest.fixture(scope="module")
def example():
    """The example script imported as a module (``examples/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("finenvs_example_rllib_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # The env creators live in this module, which env-runner processes cannot import by name:
    # ship them by value, as they would be from a script's __main__.
    ray.cloudpickle.register_pickle_by_value(module)
    yield module
    ray.cloudpickle.unregister_pickle_by_value(module)
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module, as ``main()`` starts it (``num_cpus=2``)."""
    ray.init(address="local", num_cpus=2, include_dashboard=False)  # never a cluster `ray start` left running
    yield
    ray.shutdown()


def tiny_args(example, **overrides):
    """Args for one small, fast iteration: a short episode, a tiny batch, one remote env runner."""
    fields = dict(
        iterations=1,
        seed=0,
        episode_length=EPISODE_LENGTH,
        train_batch_size=TRAIN_BATCH,
        minibatch_size=64,
        num_epochs=1,
        hidden=[16],
        num_env_runners=1,
    )
    fields.update(overrides)
    return example.Args(**fields)


def assert_trained_one_iteration(result: dict, module_ids: set[str]) -> None:
    """What one real PPO iteration leaves in RLlib's result dict."""
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= TRAIN_BATCH
    assert runners["num_episodes"] > 0  # episodes of EPISODE_LENGTH steps completed inside the batch
    ret = runners["episode_return_mean"]
    assert math.isfinite(ret)
    assert runners["episode_return_min"] <= ret <= runners["episode_return_max"]
    assert runners["episode_len_mean"] <= EPISODE_LENGTH
    learners = result["learners"]
    assert module_ids <= set(learners)
    for module_id in module_ids:
        assert math.isfinite(learners[module_id]["total_loss"])


def test_parse_args_round_trip(example):
    argv = "--env market --policies per-agent --num-traders 3 --hidden 32 32 --iterations 7"
    args = example.parse_args(argv.split())
    assert args == example.Args(env="market", policies="per-agent", num_traders=3, hidden=[32, 32], iterations=7)
    with pytest.raises(SystemExit):
        example.parse_args(["--env", "nonsense"])


def test_multiagent_policy_mapping(example):
    shared = example.build_config(tiny_args(example, env="market", num_traders=3, policies="shared"))
    assert set(shared.policies) == {example.SHARED_POLICY}
    per_agent = example.build_config(tiny_args(example, env="market", num_traders=3, policies="per-agent"))
    assert set(per_agent.policies) == {"trader_0", "trader_1", "trader_2"}
    assert per_agent.policy_mapping_fn("trader_2", None) == "trader_2"
    pairs = example.build_config(tiny_args(example, env="pairs", policies="per-agent"))
    assert set(pairs.policies) == {"leg_0", "leg_1"}


def test_ppo_one_iteration_fintrading(example, local_ray, capsys):
    results = example.train(tiny_args(example, env="trading"))
    assert len(results) == 1
    assert_trained_one_iteration(results[0], {"default_policy"})
    assert "iter   1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("env", "policies", "agents"),
    [
        ("market", "shared", {"trader_0", "trader_1"}),
        ("market", "per-agent", {"trader_0", "trader_1"}),
        ("pairs", "shared", {"leg_0", "leg_1"}),
    ],
)
def test_ppo_one_iteration_multiagent(example, local_ray, env, policies, agents):
    pytest.importorskip("pettingzoo", reason="the multi-agent markets need finenvs[marl]")
    args = tiny_args(example, env=env, num_traders=NUM_TRADERS, policies=policies)
    results = example.train(args)
    modules = {example.SHARED_POLICY} if policies == "shared" else agents
    assert_trained_one_iteration(results[0], modules)
    per_agent = results[0]["env_runners"][example.AGENT_RETURNS_KEY]
    assert set(per_agent) == agents
    assert all(math.isfinite(v) for v in per_agent.values())
