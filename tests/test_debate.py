"""FAB++'s adversarial debate (finenvs.wrappers.debate): two turns, FAB++'s multipliers, counter-arguments that argue
for a wrong alternative, and the same env contract otherwise."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import finenvs  # noqa: F401
from finenvs.tasks.options.core import reference_answer
from finenvs.tasks.options.debate import CORRECT_SCORE, POSITION_MONEY, debate_round
from finenvs.text.debate import OUTCOMES, debate_outcome
from finenvs.wrappers.debate import Debate


def test_outcomes_are_fabpps_multipliers():
    assert debate_outcome(True, True) == (1.2, "correct answer held")
    assert debate_outcome(False, True) == (1.0, "wrong answer corrected")
    assert debate_outcome(True, False)[0] == debate_outcome(False, False)[0] == 0.8
    assert set(OUTCOMES) == {(a, b) for a in (True, False) for b in (True, False)}


def _options(seed):
    env = Debate(gym.make("FinOptions-v0", split="eval", action_mode="text"), builder=debate_round)
    env.reset(seed=seed)
    return env


def _follow_counter(answer: dict, env) -> dict:
    """The reference answer with the figure the counter-argument disputes rescaled as it argues."""
    task = env.unwrapped.task
    asked = {i for items in task["ask"].values() for i in items}
    m = task["market"]["multiplier"]
    out = dict(answer)
    for key in POSITION_MONEY:
        if key in asked and isinstance(out.get(key), (int, float)) and out[key]:
            out[key] = out[key] / m
            return out
    for key, value in sorted(out.items()):
        if key in asked and isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            out[key] = value * m
            return out
    return out


@pytest.mark.parametrize("seed", range(10))
def test_options_debate_rewards_holding_a_right_answer_and_punishes_following_the_counter(seed):
    env = _options(seed)
    right = reference_answer(env.unwrapped.task)
    obs, reward, terminated, truncated, info = env.step(json.dumps(right))
    debate = info["debate"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert debate["first_score"] == 100.0 and debate["first_correct"] and debate["counter_argument"]
    _, reward, terminated, _, info = env.step(json.dumps(right))
    assert terminated and reward == 100.0
    assert (info["debate"]["multiplier"], info["debate"]["debated_score"]) == (1.2, 100.0)  # capped at the max
    # the same task, the agent gives in to the counter-argument: its alternative is wrong
    env = _options(seed)
    env.step(json.dumps(right))
    _, reward, _, _, info = env.step(json.dumps(_follow_counter(right, env)))
    assert reward < 100.0
    if reward < CORRECT_SCORE:
        assert info["debate"]["outcome"] == "correct answer abandoned" and info["debate"]["multiplier"] == 0.8


def test_a_wrong_first_answer_corrected_keeps_its_first_score():
    """The debate scales the first answer's score (FAB++'s structure): a correction is not a second attempt."""
    env = _options(3)
    right = reference_answer(env.unwrapped.task)
    _, _, _, _, info = env.step("{}")
    assert not info["debate"]["first_correct"]
    _, reward, _, _, info = env.step(json.dumps(right))
    assert reward == 100.0 and info["debate"]["multiplier"] == 1.0 and info["debate"]["debated_score"] == 0.0
    assert info["debate"]["debate_rule"] == "finenvs"


def test_the_spec_names_the_builder_and_hostile_answers_never_raise():
    env = Debate(gym.make("FinOptions-v0", split="eval", action_mode="text"))
    env.reset(seed=0)
    for text in ("", "{" * 5000, "9" * 60_000):
        env.reset(seed=0)
        _, _, terminated, _, info = env.step(text)
        assert not terminated and info["debate"]["first_score"] == 0.0
        _, reward, terminated, _, info = env.step(text)
        assert terminated and reward == 0.0 and info["debate"]["outcome"] == "wrong answer kept"
    with pytest.raises(ValueError, match="no debate round"):
        Debate(gym.make("FinTrading-v0", split="eval"))


def test_bench_debate_gives_each_baseline_its_multiplier_and_the_aggregate_applies_it():
    from finenvs.evaluation.bench import section_aggregate
    from finenvs.evaluation.debate_runs import debate_markdown, run_debate
    from finenvs.tasks import task_of

    options = task_of("FinOptions-v0")
    debate = run_debate(options, "eval", 0, instances=(0, 1, 25))
    policies = debate["policies"]
    assert policies["engine_reference"]["multiplier"] == 1.2
    assert policies["engine_reference"]["outcomes"] == {"correct answer held": 3}
    assert policies["keyword_stuffer"]["multiplier"] == pytest.approx(0.8)
    assert {r["task_id"] for r in policies["engine_reference"]["rows"]} >= {"opt_pricing_001"}
    ids = [r["task_id"] for r in policies["engine_reference"]["rows"]]
    sections = {"options": {"tasks": {p: [{"section": "options", "task_id": t, "score": 50.0, "error": None}
                                          for t in [*ids, "not debated"]]
                                      for p in set(options.bench.profiles.values())}}}
    out = section_aggregate([options], sections, [], "fabpp", [], debates={"FinOptions-v0": debate})
    # each debated task's debated score replaces its plain score; a task the debate did not play keeps its own
    assert out["profiles"]["reference"]["overall_debate"] == pytest.approx((3 * 100.0 + 50.0) / 4)
    naive = [r["task_score"] for r in policies["keyword_stuffer"]["rows"]]
    assert out["profiles"]["naive"]["overall_debate"] == pytest.approx((sum(naive) + 50.0) / 4)
    assert all(r["task_score"] == pytest.approx(0.8 * r["first_score"]) for r in policies["keyword_stuffer"]["rows"])
    assert any("engine_reference | 3 | 1.200" in re.sub(" +", " ", line)
               for line in debate_markdown({"FinOptions-v0": debate}))


def test_finqa_debate_argues_the_topics_mistake_and_holding_the_truth_scores_1_2():
    from finenvs.tasks.qa.methods import reference_structured_answer

    env = Debate(gym.make("FinQA-v0", split="eval"))  # the spec names finenvs.tasks.qa.debate:debate_round
    held = wrong = 0
    for index in range(75, 150, 5):  # analytical questions of the eval split
        env.reset(options={"index": index})
        item = env.unwrapped.item
        right = reference_structured_answer(item)
        obs, reward, terminated, _, info = env.step(right)
        assert not terminated and info["debate"]["first_correct"]
        assert "A reviewer disagrees" in obs and info["debate"]["counter_argument"] in obs
        _, reward, terminated, _, info = env.step(right)
        assert terminated and reward == 1.0 and info["debate"]["multiplier"] == 1.2
        held += 1
        env.reset(options={"index": index})
        _, _, _, _, info = env.step("Answer: 0")
        _, _, _, _, info = env.step("Answer: 0")
        wrong += info["debate"]["outcome"] == "wrong answer kept"
    assert held == wrong == 15


def test_finqa_fabpp_scoring_splits_methodology_calculation_answer():
    from finenvs.tasks.qa.methods import reference_structured_answer

    for mode, bare_reward in (("answer", 1.0), ("fabpp", 0.4)):
        env = gym.make("FinQA-v0", split="eval", analysis_score=mode)
        env.reset(options={"index": 100})
        item = env.unwrapped.item
        truth = item.truth
        bare = json.dumps({"answer": truth if len(truth) > 1 else next(iter(truth.values()))})
        _, reward, _, _, info = env.step(bare)
        assert reward == pytest.approx(bare_reward)
        split = info["qa"]["method_split"]
        assert (split["methodology"], split["calculation"], split["answer"]) == (0.0, 0.0, 1.0)
        env.reset(options={"index": 100})
        _, reward, _, _, info = env.step(reference_structured_answer(item))
        assert reward == 1.0 and info["qa"]["method_split"]["total"] == 1.0
    with pytest.raises(ValueError, match="analysis_score"):
        gym.make("FinQA-v0", analysis_score="vibes")
