"""FinQA-v0: env contract, splits, bad input, rewards, tools under the date lock, the text variant, baselines.

The banks' truths are checked independently in ``test_qa_bank.py``; this module checks the env around them:
gymnasium's contract, what each split holds, that no reply can crash a step, how replies are rewarded,
the ``calculate`` tool and the market/XBRL tools under the question's as-of date (including a
counterfactual: altering everything after the as-of date changes no observation and no tool output),
``FinQA-text-v0`` and the offline baselines.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import pickle
import shutil
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import finenvs  # noqa: F401  (registers FinQA-v0 and FinQA-text-v0)
from finenvs.data.asof import AsOfView
from finenvs.data.catalog import default_catalog
from finenvs.data.schema import PriceSeries
from finenvs.scoring.qa import score_part
from finenvs.tasks.qa import analysis, knowledge
from finenvs.tasks.qa.baselines import (
    MALFORMED,
    QA_POLICIES,
    FirstNumber,
    RandomQA,
    ScriptedQAAgent,
    run_qa,
    summarise,
)
from finenvs.tasks.qa.env import (
    EVAL_ANALYSIS_SEEDS,
    EVAL_KNOWLEDGE_SEEDS,
    MAX_ANSWER_CHARS,
    TRAIN_AS_OF,
    TRAIN_SEED_START,
    FinQAEnv,
)
from finenvs.tasks.qa.tools import MAX_EXPONENT, MAX_EXPRESSION, evaluate
from finenvs.tools import ToolBox
from finenvs.xbrl.corpus import Corpus, shipped_corpus, shipped_xbrl_dir

QA_TOOL_NAMES = ["calculate", "get_prices", "list_filings", "get_rate", "resolve_filing", "search_concepts",
                 "get_facts", "commit_action"]
EARLY_AS_OF = "2024-03-01"
LATER_BUNDLE = "aapl_10q_2025-03-29_0000320193-25-000057"  # released 2025-05-02
DEEP_JSON = '{"answer": ' + "[" * 3000 + "]" * 3000 + "}"  # 6,012 characters: within the reply limit


def _index(items, predicate) -> int:
    return next(i for i, item in enumerate(items) if predicate(item))


def _single(kind: str):
    return lambda item: len(item.parts) == 1 and item.parts[0].kind == kind


def _reason(info: dict) -> str:
    """The recorded reason: the reply's, else the first part's."""
    qa = info["qa"]
    return qa["reason"] or next((p["reason"] for p in qa["parts"] if p["reason"]), None) or ""


def _wrong(part):
    """A value of ``part``'s kind that is not its truth."""
    if part.kind == "number":
        return float(part.value) * 1.5 + 10.0
    if part.kind == "percent":
        return float(part.value) + 0.37
    if part.kind == "choice":
        return next(c for c in part.choices if c.upper() != str(part.value).upper())
    if part.kind == "bool":
        return not part.value
    if part.kind == "date":
        return "1999-01-04"
    if part.kind == "sequence":
        return [*part.value[1:], part.value[0]]
    raise AssertionError(f"no wrong value for kind {part.kind}")


#: These tests read answers (formats, units, parts): they grade analytical questions on the answer only, the
#: named variant; FAB++'s methodology/calculation/answer split (the default) is tested in test_qa_methods.py and
#: test_one_score.py.
ANSWER_ONLY = {"analysis_score": "answer"}


# ====================================================================== fixtures
@pytest.fixture(scope="module")
def env():
    """The registered eval env (150 questions); each test resets it as it needs."""
    return gym.make("FinQA-v0", **ANSWER_ONLY)


@pytest.fixture(scope="module")
def items(env):
    return env.unwrapped.items


@pytest.fixture(scope="module")
def published_env():
    return gym.make("FinQA-v0", **ANSWER_ONLY, split="published")


# ====================================================================== 1. gymnasium contract
@pytest.mark.parametrize("kwargs", [{}, {"section": "knowledge"}, {"section": "analysis"}, {"split": "published"},
                                    {"split": "train"}, {"split": "train", "section": "analysis"},
                                    {"section": "knowledge", "as_of": "2025-03-14"}],
                         ids=["all", "knowledge", "analysis", "published", "train", "train-analysis", "as-of"])
def test_check_env_without_warnings(kwargs):
    env = gym.make("FinQA-v0", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)


def test_spec_kwargs_round_trip():
    spec = gym.spec("FinQA-v0")
    assert json.loads(spec.to_json())["kwargs"] == {"section": "all", "split": "eval", "as_of": "2026-03-31"}
    again = EnvSpec.from_json(spec.to_json())
    assert again == spec and again.entry_point == "finenvs.tasks.qa.env:FinQAEnv"
    made = gym.make(again).unwrapped
    assert isinstance(made, FinQAEnv)
    assert (made.section, made.split, made.as_of) == ("all", "eval", knowledge.DEFAULT_AS_OF)
    text = gym.spec("FinQA-text-v0")
    assert EnvSpec.from_json(text.to_json()) == text and text.kwargs == {"base_id": "FinQA-v0"}


def test_pickle_before_reset_gives_the_same_episodes():
    env = gym.make("FinQA-v0", **ANSWER_ONLY)
    clone = pickle.loads(pickle.dumps(env))
    for seed in (3, 44):
        assert clone.reset(seed=seed) == env.reset(seed=seed)


@pytest.mark.parametrize("clone", [lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy], ids=["pickle", "deepcopy"])
def test_pickle_after_reset_continues_identically(clone):
    env = gym.make("FinQA-v0", **ANSWER_ONLY)
    obs, info = env.reset(seed=9)
    twin = clone(env)
    answer = {"answer": env.unwrapped.item.truth}
    assert twin.step(answer)[:4] == env.step(answer)[:4]
    assert twin.reset(seed=9) == (obs, info)


@pytest.mark.parametrize("kwargs", [{}, {"split": "train"}, {"split": "published"}], ids=["eval", "train", "published"])
def test_same_seed_same_question(kwargs):
    first, second = gym.make("FinQA-v0", **kwargs), gym.make("FinQA-v0", **kwargs)
    seen = set()
    for seed in (0, 7, 123, 2024):
        obs, info = first.reset(seed=seed)
        assert second.reset(seed=seed) == (obs, info)
        seen.add(info["task_id"])
    assert len(seen) >= 3  # the seed matters


def test_every_observation_is_in_the_space(items, published_env):
    for env, questions in ((gym.make("FinQA-v0", **ANSWER_ONLY), items), (published_env, published_env.unwrapped.items)):
        for i, item in enumerate(questions):
            obs, info = env.reset(options={"index": i})
            assert isinstance(obs, str) and env.observation_space.contains(obs)
            assert obs == item.prompt() and obs.startswith(item.question) and "\nAnswer format: " in obs
            assert info["task_id"] == item.id and info["parts"] == [p.name for p in item.parts]
            assert info["look_ahead_attempts"] == 0 and info["as_of"] == item.as_of
    env = gym.make("FinQA-v0", split="published")  # graded as FAB++ grades analysis (the default): the prompt says so
    obs, _ = env.reset(options={"index": 0})
    assert obs.startswith(env.unwrapped.item.prompt()) and "\nGrading: graded as FAB++ grades analysis" in obs


def test_one_step_terminates(env, items):
    i = _index(items, lambda it: it.topic == "bull_spread")
    obs, _ = env.reset(options={"index": i})
    obs2, reward, terminated, truncated, info = env.step('{"answer": {"max_profit": 1}}')
    assert terminated is True and truncated is False and isinstance(reward, float)
    assert obs2 == obs and env.observation_space.contains(obs2)
    assert info["task_id"] == items[i].id and info["qa"]["truth"] == items[i].truth


def test_step_before_reset_and_after_the_end_raise():
    fresh = FinQAEnv(section="analysis")
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        fresh.step('{"answer": 1}')
    with pytest.raises(gym.error.ResetNeeded):
        fresh.text_state()
    with pytest.raises(RuntimeError, match="reset"):
        fresh.as_of_view()
    fresh.reset(seed=0)
    fresh.step('{"answer": 1}')
    with pytest.raises(gym.error.ResetNeeded, match="ended"):
        fresh.step('{"answer": 1}')
    fresh.reset(seed=0)  # a reset starts a new episode
    assert fresh.step('{"answer": 1}')[2] is True


def test_render_ansi_shows_the_part_verdicts(items):
    env = gym.make("FinQA-v0", **ANSWER_ONLY, render_mode="ansi")
    assert "reset" in env.render()
    i = _index(items, lambda it: it.topic == "bull_spread")
    env.reset(options={"index": i})
    assert env.render() == items[i].question
    truth = dict(items[i].truth)
    truth["breakeven"] = 1.0
    env.step({"answer": truth})
    text = env.render()
    assert "score: 0.667" in text and "breakeven: wrong" in text and "max_profit: ok" in text
    assert gym.make("FinQA-v0", **ANSWER_ONLY).render() is None  # no render mode


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"section": "nope"}, "section='nope'"),
    ({"section": None}, "section=None"),
    ({"split": "test"}, "split='test'"),
    ({"split": "published", "section": "knowledge"}, "published"),
    ({"items": []}, "empty items"),
    ({"render_mode": "human"}, "render_mode"),
    ({"as_of": "not-a-date"}, "not-a-date"),
    ({"as_of": "2026-02-30"}, "2026-02-30"),
])
def test_bad_constructor_args_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FinQAEnv(**kwargs)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"foo": 1}, ValueError, "unknown reset option"),
    ({"index": 150}, ValueError, r"\[0, 150\)"),
    ({"index": -1}, ValueError, r"options\['index'\]"),
    ({"index": True}, ValueError, r"options\['index'\]"),
    ({"index": 1.0}, ValueError, r"options\['index'\]"),
    ({"index": "1"}, ValueError, r"options\['index'\]"),
    ({"seed": -1}, ValueError, "non-negative integer"),
    ({"seed": True}, ValueError, "non-negative integer"),
    ({"seed": 2.5}, ValueError, "non-negative integer"),
    ({"topic": "nope"}, ValueError, "unknown topic 'nope'"),
    ({"topic": "fcff", "seed": -3}, ValueError, "non-negative integer"),
    ({"item": "analysis/fcff/3"}, TypeError, "QAItem"),
    ({"item": {"id": "analysis/fcff/3"}}, TypeError, "QAItem"),
])
def test_bad_reset_options_are_refused(env, options, error, match):
    with pytest.raises(error, match=match):
        env.reset(options=options)


def test_bad_reset_seed_is_refused(env):
    with pytest.raises(gym.error.Error, match="-1"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="fixed item list"):
        FinQAEnv(split="train").reset(options={"index": 0})


def test_reset_options_ask_one_question_directly(env):
    _, info = env.reset(options={"topic": "fcff", "seed": 12})
    assert info["task_id"] == "analysis/fcff/12" and info["section"] == "analysis"
    _, info = env.reset(options={"topic": "close_price", "seed": np.int64(4)})
    assert info["task_id"] == f"knowledge/close_price/{knowledge.DEFAULT_AS_OF}/4"
    _, info = env.reset(options={"index": np.int64(70)})
    assert info["task_id"] == env.unwrapped.items[70].id
    item = analysis.generate("gordon_growth", 77)
    obs, info = env.reset(options={"item": item})
    assert obs == item.prompt() and info["seed"] == 77


# ====================================================================== 2. splits
def test_eval_split_composition(items):
    assert len(items) == 150 and len({it.id for it in items}) == 150
    know, anal = items[:60], items[60:]
    assert all(it.section == "knowledge" for it in know) and all(it.section == "analysis" for it in anal)
    assert [it.seed for it in know] == list(EVAL_KNOWLEDGE_SEEDS) == list(range(60))
    assert {it.as_of for it in know} == {knowledge.DEFAULT_AS_OF}
    assert {(it.topic, it.seed) for it in anal} == set(itertools.product(analysis.TOPICS, EVAL_ANALYSIS_SEEDS))
    assert 0 not in {it.seed for it in anal}  # seed 0 is the published question, kept out
    assert {it.topic for it in know} == set(knowledge.TOPICS)


@pytest.mark.parametrize(("section", "n"), [("knowledge", 60), ("analysis", 90)])
def test_section_filters(items, section, n):
    env = gym.make("FinQA-v0", **ANSWER_ONLY, section=section)
    chosen = env.unwrapped.items
    assert len(chosen) == n and {it.section for it in chosen} == {section}
    assert [it.id for it in chosen] == [it.id for it in items if it.section == section]
    for seed in range(10):
        assert env.reset(seed=seed)[1]["section"] == section


def test_published_split_holds_the_18_published_questions(published_env):
    assert len(published_env.unwrapped.items) == 18
    topics = set()
    for i in range(18):
        _, info = published_env.reset(options={"index": i})
        assert info["task_id"].endswith("/0") and info["section"] == "analysis" and info["split"] == "published"
        assert published_env.unwrapped.item.published is not None
        topics.add(info["topic"])
    assert topics == set(analysis.TOPICS)
    with pytest.raises(ValueError):
        published_env.reset(options={"index": 18})


def test_train_split_draws_fresh_seeds_and_train_dates(items):
    env = gym.make("FinQA-v0", **ANSWER_ONLY, split="train")
    lo, hi = TRAIN_AS_OF
    assert (lo, hi) == ("2024-06-03", "2025-12-31")
    eval_ids = {it.id for it in items}
    sections = []
    for seed in range(60):
        _, info = env.reset(seed=seed)
        sections.append(info["section"])
        assert info["seed"] >= TRAIN_SEED_START and info["split"] == "train"
        assert info["task_id"] not in eval_ids
        if info["section"] == "knowledge":
            assert lo <= info["as_of"] <= hi and info["task_id"].startswith(f"knowledge/{info['topic']}/{info['as_of']}/")
        else:
            assert info["as_of"] is None
    assert set(sections) == {"knowledge", "analysis"}
    know = gym.make("FinQA-v0", **ANSWER_ONLY, split="train", section="knowledge")
    dates = {know.reset(seed=s)[1]["as_of"] for s in range(15)}
    assert len(dates) > 5 and all(lo <= d <= hi for d in dates)


def test_as_of_argument_sets_the_knowledge_date():
    env = FinQAEnv(section="knowledge", as_of="2025-03-14")
    assert {it.as_of for it in env.items} == {"2025-03-14"}
    assert all(it.question.startswith("As of 2025-03-14: ") for it in env.items)
    _, info = env.reset(options={"index": 5})
    assert info["date"] == "2025-03-14" and str(env.as_of_view().as_of) == "2025-03-14"


# ====================================================================== 3. bad input never crashes
@pytest.fixture(scope="module")
def number_item(items):
    return _index(items, _single("number"))


def _value(items, i):
    return items[i].parts[0].value


BAD_REPLIES = [
    # (id, reply builder from the truth, nothing readable?, reason fragment)
    ("empty", lambda v: "", True, "empty"),
    ("blank", lambda v: "  \n\t ", True, "empty"),
    ("none", lambda v: None, True, "NoneType"),
    ("bytes", lambda v: json.dumps({"answer": v}).encode(), True, "bytes"),
    ("list", lambda v: [v], True, "list"),
    ("float", lambda v: v, True, "float"),
    ("huge", lambda v: json.dumps({"answer": v}) + " " * MAX_ANSWER_CHARS, True, "limit is 16384"),
    ("nul", lambda v: f"Answer: {v}\x00", True, "non-printable"),
    ("escape", lambda v: f"\x1b[1mAnswer: {v}\x1b[0m", True, "non-printable"),
    ("two-json", lambda v: json.dumps({"answer": v}) + " " + json.dumps({"answer": v + 1}), True, "conflicting"),
    ("two-lines", lambda v: f"Answer: {v}\nAnswer: {v * 2}", True, "conflicting"),
    ("free-text", lambda v: f"The close was {v}, I believe.", True, "no final answer"),
    ("no-number", lambda v: '{"answer": "about six hundred dollars"}', False, "holds no number"),
    ("two-numbers", lambda v: json.dumps({"answer": f"{v} or {v + 5}"}), False, "different numbers"),
    ("percent-unit", lambda v: json.dumps({"answer": f"{v}%"}), False, "percentage"),
    ("thousand-slip", lambda v: json.dumps({"answer": v * 1000}), False, "wrong unit"),
    ("null", lambda v: '{"answer": null}', False, "missing"),
    ("list-answer", lambda v: json.dumps({"answer": [v, v]}), False, "not a number"),
]


@pytest.mark.parametrize(("build", "unreadable", "fragment"), [b[1:] for b in BAD_REPLIES],
                         ids=[b[0] for b in BAD_REPLIES])
def test_bad_replies_score_zero_with_the_reason(env, items, number_item, build, unreadable, fragment):
    reply = build(_value(items, number_item))
    env.reset(options={"index": number_item})
    obs, reward, terminated, truncated, info = env.step(reply)
    assert reward == 0.0 and terminated and not truncated
    assert fragment in _reason(info), info["qa"]
    assert all(not p["correct"] for p in info["qa"]["parts"])
    if unreadable:
        assert info["invalid_action"] and info["invalid_action"] == info["qa"]["reason"]
    else:
        assert info["invalid_action"] is None and info["qa"]["parts"][0]["reason"]


def test_a_bare_number_on_a_percent_part_is_a_wrong_unit(env, items):
    i = _index(items, _single("percent"))
    truth = _value(items, i)
    env.reset(options={"index": i})
    _, reward, *_, info = env.step(json.dumps({"answer": round(100 * truth, 6)}))
    assert reward == 0.0 and "wrong unit" in _reason(info)
    env.reset(options={"index": i})
    assert env.step(json.dumps({"answer": f"{100 * truth:.6f}%"}))[1] == 1.0  # with its unit it is right


@pytest.mark.parametrize(("kind", "reply", "fragment"), [
    ("sequence", '{"answer": 5}', "not an ordering"),
    ("sequence", '{"answer": ["A", "A", "B"]}', "each exactly once"),
    ("date", '{"answer": {"date": "yesterday", "close": 1}}', "not a date"),
    ("choice", '{"answer": {"better_option": "maybe", "difference": 1}}', "not one of"),
])
def test_non_numeric_parts_refuse_the_wrong_kind(env, items, kind, reply, fragment):
    i = _index(items, lambda it: it.parts[0].kind == kind)
    env.reset(options={"index": i})
    _, reward, *_, info = env.step(reply)
    assert reward < 1.0 and fragment in _reason(info)
    assert not info["qa"]["parts"][0]["correct"]


REPLIES = st.one_of(
    st.text(max_size=400),
    st.text(alphabet='{}[]":,0123456789.-%$ answerAnswer\n', max_size=200),
    st.binary(max_size=50),
    st.integers(),
    st.floats(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=10), st.one_of(st.text(max_size=20), st.floats(), st.integers(), st.none()),
                    max_size=4),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=REPLIES)
def test_no_reply_crashes_a_step(env, items, reply):
    i = _index(items, lambda it: it.topic == "bull_spread")
    env.reset(options={"index": i})
    _, reward, terminated, truncated, info = env.step(reply)
    assert 0.0 <= reward <= 1.0 and terminated and not truncated
    assert reward == info["qa"]["score"]
    if reward < 1.0:
        assert _reason(info)


def test_deeply_nested_json_reply_scores_zero(env, items):
    env.reset(options={"index": 0})
    _, reward, terminated, _, info = env.step(DEEP_JSON)
    assert reward == 0.0 and terminated and _reason(info)


# ====================================================================== 4. rewards
def _truth_replies(item):
    truth = item.truth
    out = [{"answer": truth}, json.dumps({"answer": truth}), f"Let me compute.\n```json\n{json.dumps({'answer': truth})}\n```"]
    if len(item.parts) == 1:
        out += [{"answer": next(iter(truth.values()))}, json.dumps({"answer": next(iter(truth.values()))})]
    return out


@pytest.mark.parametrize("split", ["eval", "published"])
def test_the_truth_scores_one_for_every_item(split):
    env = gym.make("FinQA-v0", **ANSWER_ONLY, split=split)
    failures = []
    for i, item in enumerate(env.unwrapped.items):
        for reply in _truth_replies(item):
            env.reset(options={"index": i})
            _, reward, *_, info = env.step(reply)
            if reward != 1.0 or info["invalid_action"] is not None or not all(p["correct"] for p in info["qa"]["parts"]):
                failures.append((item.id, reply, info["qa"]))
    assert failures == []


def test_multi_part_answers_earn_the_share_of_right_parts(env, items):
    multi = [i for i, it in enumerate(items) if len(it.parts) > 1]
    assert len(multi) >= 20 and {len(items[i].parts) for i in multi} == {2, 3}
    for i in multi:
        item = items[i]
        total = sum(p.weight for p in item.parts)
        for k, part in enumerate(item.parts):
            wrong = _wrong(part)
            assert not score_part(wrong, part).correct  # the test's wrong value really is wrong
            answer = {**item.truth, part.name: wrong}
            env.reset(options={"index": i})
            _, reward, *_, info = env.step({"answer": answer})
            assert reward == pytest.approx((total - part.weight) / total), item.id
            assert [p["correct"] for p in info["qa"]["parts"]] == [j != k for j in range(len(item.parts))]
            assert info["qa"]["parts"][k]["reason"]
        env.reset(options={"index": i})
        assert env.step({"answer": {p.name: _wrong(p) for p in item.parts}})[1] == 0.0


def test_rewards_lie_in_the_unit_interval(env, items):
    rng = np.random.default_rng(5)
    policy = RandomQA(seed=1)
    for i in rng.choice(len(items), size=60, replace=False):
        obs, info = env.reset(options={"index": int(i)})
        reward = env.step(policy(obs, info))[1]
        assert 0.0 <= reward <= 1.0


# ====================================================================== 5. tools
@pytest.fixture()
def tools(env):
    env.reset(options={"index": 0})
    return ToolBox(env)


def test_toolbox_lists_the_finqa_tools(env):
    box = ToolBox(env)
    assert box.names == QA_TOOL_NAMES
    assert [s["function"]["name"] for s in box.specs()] == QA_TOOL_NAMES
    assert "symbol" in box.tools["get_prices"].parameters["required"]
    fresh = ToolBox(FinQAEnv(section="analysis"))
    result = fresh.call("calculate", {"expression": "1+1"})
    assert not result.ok and "reset" in result.error


CALCULATIONS = [
    ("2^10", 2**10),
    ("2 ^ 0.5", 2**0.5),
    ("(1 + 0.05) ^ 10", 1.05**10),
    ("1,234.5 * 2", 1234.5 * 2),
    ("1,000,000 / 4 - 3", 1_000_000 / 4 - 3),
    ("(180000/150000) - 1", (180000 / 150000) - 1),
    ("100*exp(-0.05*1)", 100 * math.exp(-0.05 * 1)),
    ("log(100) / ln(10)", math.log(100) / math.log(10)),
    ("log10(1000) + sqrt(16)", math.log10(1000) + math.sqrt(16)),
    ("sqrt(2) * sqrt(8)", math.sqrt(2) * math.sqrt(8)),
    ("-3 ** 2", -(3**2)),
    ("7 // 2 + 7 % 3", 7 // 2 + 7 % 3),
    ("min(3, 1, 2) + max(4.5, 5)", 1 + 5),
    ("round(2.567, 2) + abs(-4.5)", round(2.567, 2) + abs(-4.5)),
    ("e ** 2 - pi", math.e**2 - math.pi),
    ("26.5 * (1 - 0.21) / (0.09 - 0.04)", 26.5 * (1 - 0.21) / (0.09 - 0.04)),
]


@pytest.mark.parametrize(("expression", "expected"), CALCULATIONS, ids=[c[0] for c in CALCULATIONS])
def test_calculate_matches_python(tools, expression, expected):
    result = tools.call("calculate", {"expression": expression})
    assert result.ok, result.error
    assert result.data == {"expression": expression, "value": pytest.approx(expected, rel=1e-12)}
    assert isinstance(result.data["value"], float) and result.look_ahead == 0


REFUSED = [
    ("x + 1", "Name is not allowed"),
    ("(1).real", "Attribute is not allowed"),
    ("__import__('os').system('true')", "Call is not allowed"),
    ("open('/etc/passwd')", "Call is not allowed"),
    ("lambda: 1", "Lambda is not allowed"),
    ("[1, 2]", "List is not allowed"),
    ("'1' + '2'", "Constant is not allowed"),
    ("True + 1", "Constant is not allowed"),
    ("1 if 2 else 3", "IfExp is not allowed"),
    ("2 ** 10000", f"larger than {MAX_EXPONENT}"),
    ("2 ^ -5000", f"larger than {MAX_EXPONENT}"),
    ("1/0", "division by zero"),
    ("5 % 0", "modulo by zero"),
    ("sqrt(-1)", "math domain error"),
    ("log(0)", "math domain error"),
    ("exp(1000)", "cannot evaluate"),
    ("1e308 * 10", "no finite real value"),
    ("(-8) ** 0.5", "no finite real value"),
    ("2 +", "not an arithmetic expression"),
    ("1" * (MAX_EXPRESSION + 1), f"at most {MAX_EXPRESSION} characters"),
]


@pytest.mark.parametrize(("expression", "fragment"), REFUSED, ids=[f"r{i}" for i in range(len(REFUSED))])
def test_calculate_refuses_with_a_message(tools, expression, fragment):
    result = tools.call("calculate", {"expression": expression})
    assert not result.ok and result.data == {"error": result.error}
    assert fragment in result.error, result.error
    assert "internal error" not in result.error


def test_calculate_argument_checks(tools):
    for arguments, fragment in (({}, "required field 'expression'"), ({"expression": ""}, "at least 1"),
                                ({"expression": 5}, "type string"), ({"expression": "1", "x": 1}, "unknown field"),
                                ("{not json", "not valid JSON")):
        result = tools.call("calculate", arguments)
        assert not result.ok and fragment in result.error


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=120), st.text(alphabet="0123456789+-/%().,e _xpilogsqrt", max_size=80)))
def test_evaluate_raises_nothing_but_value_error_on_text(text):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # ast.parse warns on e.g. "1e" before refusing it
            value = evaluate(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert isinstance(value, float) and math.isfinite(value)


_LITERAL = st.builds(lambda a, b: f"{a}.{b:03d}", st.integers(0, 99_999), st.integers(0, 999))
_EXPR = st.recursive(
    _LITERAL,
    lambda inner: st.one_of(
        st.builds(lambda a, op, b: f"({a} {op} {b})", inner, st.sampled_from(["+", "-", "*", "/", "**", "//", "%"]),
                  inner),
        st.builds(lambda a: f"-{a}", inner),
        st.builds(lambda f, a: f"{f}({a})", st.sampled_from(["sqrt", "exp", "log", "abs", "log10"]), inner),
    ),
    max_leaves=12,
)
_PYTHON = {"__builtins__": {}, "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "abs": abs, "log10": math.log10}


@settings(max_examples=300, deadline=None)
@given(expression=_EXPR)
def test_evaluate_agrees_with_python_on_float_arithmetic(expression):
    try:
        expected = eval(expression, _PYTHON)  # noqa: S307 - the test's own generated arithmetic
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):  # TypeError: math of a complex
        expected = None
    if isinstance(expected, complex) or (expected is not None and not math.isfinite(expected)):
        expected = None
    try:
        got = evaluate(expression)
    except ValueError as exc:
        # refused: Python refuses too, or the exponent cap (the only extra refusal) applies
        assert expected is None or "exponent" in str(exc), (expression, expected, str(exc))
    else:
        assert expected is not None and got == expected, (expression, got, expected)


@pytest.mark.parametrize("expression", ["10 ** 1000", "10**300 * 10**300", "9" * 400])
def test_evaluate_refuses_integer_overflow_with_value_error(tools, expression):
    with pytest.raises(ValueError):
        evaluate(expression)
    result = tools.call("calculate", {"expression": expression})
    assert not result.ok and "internal error" not in result.error


def test_evaluate_cannot_run_away():
    code = ("from finenvs.tasks.qa.tools import evaluate\n"
            "try:\n    evaluate('((10**1000)**1000)**100')\nexcept ValueError:\n    print('refused')\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:  # refused within seconds, start-up included; a runaway never ends
        pytest.fail("evaluate ran for more than 300 s")
    assert proc.stdout.strip() == "refused", proc.stderr[-500:]


def test_calculate_keeps_arguments_after_a_decimal_apart():
    assert evaluate("max(0.5,100,2)") == 100.0


# --------------------------------------------------------------------- the date lock through the tools
@pytest.fixture(scope="module")
def early_item():
    item = knowledge.generate(3, knowledge.make_view(EARLY_AS_OF))
    assert item.as_of == EARLY_AS_OF
    return item


def _early_env(how: str, early_item):
    if how == "item":
        env = FinQAEnv()
        env.reset(options={"item": early_item})
    else:
        env = FinQAEnv(section="knowledge", as_of=EARLY_AS_OF)
        env.reset(options={"index": 3})
        assert env.item == early_item
    return env


def test_get_prices_past_the_as_of_is_clipped_and_counted(env, items):
    i = _index(items, lambda it: it.topic == "close_price")
    obs, info = env.reset(options={"index": i})
    as_of = info["as_of"]
    box = ToolBox(env)
    before = box.call("get_prices", {"symbol": "AAPL", "start": "2026-03-02", "end": as_of})
    assert before.ok and before.look_ahead == 0
    later = box.call("get_prices", {"symbol": "AAPL", "start": "2026-03-02", "end": "2026-09-30"})
    assert later.ok and later.look_ahead == 1
    assert later.data["rows"] == before.data["rows"] and all(r[0] <= as_of for r in later.data["rows"])
    assert default_catalog().series("AAPL").dates[-1] > np.datetime64(as_of)  # there was later data to see
    ahead = box.call("get_prices", {"symbol": "AAPL", "start": "2026-06-01"})
    assert ahead.ok and ahead.data["rows"] == [] and ahead.look_ahead == 1
    assert env.unwrapped._info()["look_ahead_attempts"] == 2
    _, _, _, _, final = env.step({"answer": items[i].truth})
    assert final["look_ahead_attempts"] == 2
    assert env.reset(options={"index": i})[1]["look_ahead_attempts"] == 0  # a new episode, a new counter


@pytest.mark.parametrize("how", ["item", "as_of"])
def test_resolve_filing_lists_only_filings_released_by_the_as_of(early_item, how):
    env = _early_env(how, early_item)
    result = ToolBox(env).call("resolve_filing", {})
    assert result.ok and result.look_ahead == 0
    listed = {f["bundle"]: f["released"] for f in result.data["filings"]}
    corpus = shipped_corpus()
    expected = {n for n in corpus.names if corpus.filing(n).filed < EARLY_AS_OF}
    assert set(listed) == expected and all(day < EARLY_AS_OF for day in listed.values())
    assert LATER_BUNDLE not in listed and len(expected) < len(corpus.names)
    if early_item.topic == "xbrl_metric":
        assert early_item.inputs["bundle"] in listed
    tsla = ToolBox(env).call("resolve_filing", {"ticker": "TSLA"})
    assert tsla.ok and tsla.data["filings"] == []  # TSLA's 10-Q was released 2024-07-24


@pytest.mark.parametrize("how", ["item", "as_of"])
def test_xbrl_reads_of_a_later_filing_are_refused_and_counted(early_item, how):
    env = _early_env(how, early_item)
    box = ToolBox(env)
    facts = box.call("get_facts", {"bundle": LATER_BUNDLE, "concept": "us-gaap:Revenues"})
    assert not facts.ok and facts.look_ahead == 1
    absent = box.call("get_facts", {"bundle": "no_such_bundle", "concept": "us-gaap:Revenues"})
    assert absent.error == facts.error.replace(LATER_BUNDLE, "no_such_bundle") and absent.look_ahead == 0
    search = box.call("search_concepts", {"bundle": LATER_BUNDLE, "query": "revenue"})
    assert not search.ok and search.look_ahead == 1
    visible = box.call("get_facts", {"bundle": "nflx_10k_2023-12-31", "concept": "us-gaap:Revenues"})
    assert visible.ok and visible.look_ahead == 0 and visible.data["rows"]
    _, _, _, _, info = env.step({"answer": 0})
    assert info["look_ahead_attempts"] == 2


def test_unknown_bundle_error_names_no_later_filing(early_item):
    env = _early_env("item", early_item)
    result = ToolBox(env).call("get_facts", {"bundle": "no_such_bundle", "concept": "us-gaap:Revenues"})
    assert not result.ok
    corpus = shipped_corpus()
    later = [n for n in corpus.names if corpus.filing(n).filed >= EARLY_AS_OF]
    assert later and not [n for n in later if n in result.error]


def test_tool_results_are_json(env, items):
    env.reset(options={"index": 0})
    box = ToolBox(env)
    for name, arguments in (("calculate", {"expression": "1+1"}), ("get_prices", {"symbol": "SPY", "lookback": 3}),
                            ("list_filings", {"symbol": "AAPL"}), ("get_rate", {"series": "DGS10"}),
                            ("search_concepts", {"bundle": "nflx_10k_2023-12-31", "query": "revenue"}),
                            ("get_facts", {"bundle": "nflx_10k_2023-12-31", "concept": "us-gaap:Revenues"})):
        result = box.call(name, arguments)
        assert result.ok, (name, result.error)
        assert json.loads(json.dumps(result.data, allow_nan=False)) == result.data


def test_resolve_filing_result_is_json(env):
    env.reset(options={"index": 0})
    result = ToolBox(env).call("resolve_filing", {})
    assert result.ok
    assert json.loads(json.dumps(result.data, allow_nan=False))["as_of"] == knowledge.DEFAULT_AS_OF


# --------------------------------------------------------------------- counterfactual future invariance
CF_AS_OF = "2025-03-14"
CF_CALLS = [
    ("get_prices", {"symbol": "AAPL", "start": "2025-02-03", "end": "2025-12-31"}),
    ("get_prices", {"symbol": "SPY", "lookback": 40}),
    ("get_prices", {"symbol": "NVDA", "start": "2025-06-02"}),
    ("get_rate", {}),
    ("get_rate", {"series": "DGS10"}),
    ("list_filings", {"symbol": "AAPL"}),
    ("list_filings", {"symbol": "MSFT", "form": "10-Q"}),
    ("resolve_filing", {}),
    ("search_concepts", {"bundle": "nflx_10q_2024-09-30", "query": "revenue"}),
    ("get_facts", {"bundle": "nflx_10q_2024-09-30", "concept": "us-gaap:Revenues"}),
    ("get_facts", {"bundle": LATER_BUNDLE, "concept": "us-gaap:Revenues"}),
    ("calculate", {"expression": "2^8"}),
]


class _CounterfactualQA(FinQAEnv):
    """FinQAEnv reading a world altered after ``cutoff``: prices x3, rates +5 points, a new XBRL filing."""

    def __init__(self, cutoff: str, corpus: Corpus, **kwargs):
        self._cutoff = np.datetime64(cutoff)
        self._corpus = corpus
        self._series: dict[str, PriceSeries] = {}
        super().__init__(**kwargs)

    def _lookup(self, symbol: str) -> PriceSeries:
        if symbol not in self._series:
            s = default_catalog().series(symbol)
            k = np.where(s.dates > self._cutoff, 3.0, 1.0)
            self._series[symbol] = PriceSeries.from_arrays(symbol, s.dates, s.open * k, s.high * k, s.low * k,
                                                           s.close * k, s.volume, validate=False)
        return self._series[symbol]

    def _rates(self, series: str):
        dates, values = default_catalog().rates(series)
        return dates, np.where(dates >= self._cutoff, values + 5.0, values)

    def view_at(self, as_of: str) -> knowledge.QAView:
        catalog = default_catalog()
        market = AsOfView(self._lookup, as_of, rate_lookup=self._rates, news=catalog.news(),
                          filings=catalog.filings(), symbols=catalog.symbols())
        return knowledge.QAView(market, self._corpus)


@pytest.fixture(scope="module")
def counterfactual_corpus(tmp_path_factory):
    """The shipped bundles plus a copy of one, released the first trading day after CF_AS_OF."""
    root = tmp_path_factory.mktemp("xbrl") / "xbrl"
    root.mkdir()
    for name in shipped_corpus().names:
        (root / name).symlink_to(shipped_xbrl_dir() / name, target_is_directory=True)
    future = root / "aapl_10q_counterfactual"
    shutil.copytree(shipped_xbrl_dir() / LATER_BUNDLE, future)
    index = json.loads((future / "filing.json").read_text())
    index.update(bundle=future.name, filed="2025-03-17")
    (future / "filing.json").write_text(json.dumps(index))
    return Corpus(root)


def test_counterfactual_future_invariance(counterfactual_corpus):
    real = FinQAEnv(section="knowledge", as_of=CF_AS_OF)
    altered = _CounterfactualQA(CF_AS_OF, counterfactual_corpus, section="knowledge", as_of=CF_AS_OF)
    # the alterations are there, and visible once the clock passes the cutoff (the check is not vacuous)
    day = "2025-06-02"
    seen = altered.view_at("2025-12-31").prices("AAPL", start=day, end=day).close
    assert seen == pytest.approx(3 * real.view_at("2025-12-31").prices("AAPL", start=day, end=day).close)
    assert "aapl_10q_counterfactual" in altered.view_at("2025-12-31").visible()
    assert [it.record() for it in altered.items] == [it.record() for it in real.items]
    real_box, altered_box = ToolBox(real, max_chars=200_000), ToolBox(altered, max_chars=200_000)
    agents = ScriptedQAAgent(real), ScriptedQAAgent(altered)
    for i in range(0, len(real.items), 3):
        obs, info = real.reset(options={"index": i})
        assert altered.reset(options={"index": i}) == (obs, info)
        attempts = 0
        for name, arguments in CF_CALLS:
            a, b = real_box.call(name, arguments), altered_box.call(name, arguments)
            assert (a.ok, a.data, a.error, a.look_ahead) == (b.ok, b.data, b.error, b.look_ahead), (i, name)
            attempts += a.look_ahead
        replies = [agent(obs, info) for agent in agents]
        assert replies[0] == replies[1]
        steps = real.step(replies[0]), altered.step(replies[1])
        assert steps[0][1] == steps[1][1] == 1.0
        assert attempts == 3  # end past the as-of, start past it, the later bundle: each counted once
        assert steps[0][4]["look_ahead_attempts"] == steps[1][4]["look_ahead_attempts"] == attempts


# ====================================================================== 6. the text variant
@pytest.fixture()
def text_env():
    return gym.make("FinQA-text-v0", **ANSWER_ONLY)


def test_text_reset_prompt_has_question_tools_and_format(text_env, items):
    for i in (0, _index(items, lambda it: it.topic == "bull_spread")):
        prompt, info = text_env.reset(options={"index": i})
        item = items[i]
        assert text_env.observation_space.contains(prompt) and info["format_errors"] == 0
        assert f"Question: {item.question}" in prompt
        assert item.prompt().split("\n")[1].removeprefix("Answer format: ") in prompt
        assert "## Tools" not in prompt  # the tools are described by their schemas, beside the prompt
        assert [s["function"]["name"] for s in text_env.tool_specs()] == QA_TOOL_NAMES
        assert '{"answer": ...}' in prompt.split("## Answer", 1)[1]
        assert f"As of: {item.as_of or '-'}" in prompt


@pytest.mark.parametrize("call", [
    lambda truth: {"name": "commit_action", "arguments": {"answer": truth, "reasoning": "computed"}},
    lambda truth: {"name": "commit_action", "arguments": json.dumps({"answer": truth})},
    lambda truth: {"type": "function", "function": {"name": "commit_action", "arguments": json.dumps({"answer": truth})}},
], ids=["dict", "json-string", "chat-completions"])
def test_text_commit_through_the_commit_tool(text_env, items, call):
    i = _index(items, lambda it: it.topic == "bull_spread")
    text_env.reset(options={"index": i})
    _, reward, terminated, truncated, info = text_env.step(call(items[i].truth))
    assert reward == 1.0 and terminated and not truncated
    assert info["action_via"] == "tool" and info["invalid_action"] is None and info["format_errors"] == 0


def test_text_reply_with_json_or_an_answer_line(text_env, items):
    i = _index(items, lambda it: it.topic == "bull_spread")
    text_env.reset(options={"index": i})
    reply = "Max profit is the strike gap less the net premium.\n" + json.dumps({"answer": items[i].truth})
    _, reward, _, _, info = text_env.step(reply)
    assert reward == 1.0 and info["action_via"] == "json"
    j = _index(items, _single("number"))
    text_env.reset(options={"index": j})
    assert text_env.step(f"Checked with the tools.\nAnswer: {_value(items, j)}")[1] == 1.0


def test_text_tool_calls_are_counted_and_commit_tool_alone_does_not_step(text_env, items):
    i = _index(items, lambda it: it.topic == "bull_spread")
    text_env.reset(options={"index": i})
    assert text_env.call_tool("calculate", {"expression": "260 - 220 - (17 - 3.5)"}).data["value"] == 26.5
    preview = text_env.call_tool("commit_action", {"answer": items[i].truth})
    assert preview.ok and preview.data == {"accepted": True, "action": "ANSWER"}
    _, reward, _, _, info = text_env.step({"name": "commit_action", "arguments": {"answer": items[i].truth}})
    assert reward == 1.0 and info["tool_calls"] == 2 and info["tool_calls_total"] == 2


@pytest.mark.parametrize(("action", "fragment"), [
    ({"name": "commit_action", "arguments": {"reasoning": "no answer"}}, 'needs {"answer"'),
    ({"name": "commit_action", "arguments": "{broken"}, "not JSON"),
    ({"name": "commit_action", "arguments": [1, 2]}, "JSON object"),
    ({"name": "get_prices", "arguments": {"symbol": "SPY"}}, "not a commit"),
    ("", "empty"),
    (None, "NoneType"),
])
def test_text_bad_commits_score_zero_and_count_as_format_errors(text_env, action, fragment):
    text_env.reset(options={"index": 70})
    _, reward, terminated, _, info = text_env.step(action)
    assert reward == 0.0 and terminated
    assert info["invalid_action"] and fragment in info["invalid_action"] and info["format_errors"] == 1


@pytest.mark.parametrize("build", [lambda v: json.dumps({"answer": v}) + "\x07", lambda v: None, lambda v: [v]],
                         ids=["non-printable", "none", "list-of-number"])
def test_text_unreadable_reply_scores_zero(text_env, items, number_item, build):
    text_env.reset(options={"index": number_item})
    _, reward, _, _, info = text_env.step(build(_value(items, number_item)))
    assert reward == 0.0 and info["invalid_action"] and info["format_errors"] == 1


@pytest.mark.parametrize("build", [lambda v: json.dumps({"answer": v}) + " " * 20_000,
                                   lambda v: json.dumps({"answer": v}).encode(),
                                   lambda v: [json.dumps({"answer": v})]], ids=["over-long", "bytes", "list"])
def test_text_over_long_or_non_text_reply_scores_zero(text_env, items, number_item, build):
    reply = build(_value(items, number_item))
    base = gym.make("FinQA-v0", **ANSWER_ONLY)
    base.reset(options={"index": number_item})
    assert base.step(reply)[1] == 0.0  # the base env refuses it
    text_env.reset(options={"index": number_item})
    _, reward, _, _, info = text_env.step(reply)
    assert info["invalid_action"] and info["format_errors"] == 1
    assert reward == 0.0


def test_text_commit_with_deeply_nested_arguments_is_a_format_error(text_env):
    text_env.reset(options={"index": 70})
    _, reward, _, _, info = text_env.step({"name": "commit_action", "arguments": DEEP_JSON})
    assert reward == 0.0 and info["format_errors"] == 1


@pytest.mark.parametrize("name", ["calculate", "commit_action"])
def test_toolbox_call_with_deeply_nested_arguments_never_raises(tools, name):
    result = tools.call(name, DEEP_JSON)
    assert not result.ok and result.error


# ====================================================================== 7. baselines
def test_scripted_agent_answers_every_eval_question(env, items):
    rows = run_qa(env, ScriptedQAAgent.from_env(env))
    assert len(rows) == 150 and [r["task_id"] for r in rows] == [it.id for it in items]
    assert all(r["score"] == 1.0 and r["error"] is None and r["reason"] is None for r in rows)
    assert all(r["look_ahead_attempts"] == 0 and r["tool_calls"] >= 1 for r in rows)
    summary = summarise(rows)
    assert summary["n"] == 150 and summary["errors"] == 0
    assert summary["sections"] == {"analysis": {"n": 90, "score": 100.0}, "knowledge": {"n": 60, "score": 100.0}}


def test_scripted_agent_answers_60_train_draws():
    env = gym.make("FinQA-v0", **ANSWER_ONLY, split="train")
    agent = ScriptedQAAgent.from_env(env)
    sections = set()
    for seed in range(60):
        obs, info = env.reset(seed=seed)
        sections.add(info["section"])
        before = agent.calls
        _, reward, _, _, final = env.step(agent(obs, info))
        assert reward == 1.0, (info["task_id"], final["qa"])
        assert agent.calls > before and final["look_ahead_attempts"] == 0
    assert sections == {"knowledge", "analysis"}


def test_scripted_agent_answers_the_published_questions(published_env):
    rows = run_qa(published_env, ScriptedQAAgent.from_env(published_env))
    assert len(rows) == 18 and all(r["score"] == 1.0 for r in rows)
    assert all(r["tool_calls"] >= 1 and r["look_ahead_attempts"] == 0 for r in rows)


@pytest.mark.parametrize("policy", [FirstNumber, RandomQA])
def test_naive_baselines_score_near_zero(env, policy):
    rows = run_qa(env, policy.from_env(env, 0))
    assert len(rows) == 150 and all(r["error"] is None for r in rows)
    assert float(np.mean([r["score"] for r in rows])) < 0.1
    assert all(r["score"] == 1.0 or r["reason"] for r in rows)  # every miss says why


def test_random_baseline_sends_malformed_replies(env, items):
    policy = RandomQA(seed=0)
    obs, info = env.reset(options={"index": 0})
    replies = [policy(obs, info) for _ in range(200)]
    assert set(MALFORMED) & set(replies) and any(r not in MALFORMED for r in replies)
    policy.reset(3)
    first = [policy(obs, info) for _ in range(5)]
    policy.reset(3)
    assert [policy(obs, info) for _ in range(5)] == first


def test_qa_policies_registry(env):
    assert set(QA_POLICIES) == {"scripted_agent", "first_number", "random", "reference"}
    for cls, description in QA_POLICIES.values():
        assert callable(cls.from_env(env, 0)) and description


class _Raises:
    def __call__(self, obs, info):
        raise ValueError("cannot answer this one")


def test_run_qa_records_a_raising_policy_as_an_errored_row(env, items):
    rows = run_qa(env, _Raises(), indices=[0, 64, 149])
    assert [r["task_id"] for r in rows] == [items[i].id for i in (0, 64, 149)]
    assert all(r["score"] == 0.0 and r["error"] == "ValueError: cannot answer this one" for r in rows)
    summary = summarise(rows)
    assert summary["errors"] == 3 and summary["sections"]["analysis"] == {"n": 2, "score": 0.0}
    obs, info = env.reset(options={"index": 1})  # the env is still usable
    assert env.step({"answer": items[1].truth})[1] == 1.0


class _LooksAheadThenRaises(ScriptedQAAgent):
    def __call__(self, obs, info):
        self.call("get_prices", symbol="AAPL", start="2026-03-02", end="2026-09-30")
        raise ValueError("gave up")


def test_run_qa_errored_row_keeps_look_ahead_attempts(env):
    rows = run_qa(env, _LooksAheadThenRaises(env), indices=[0])
    assert rows[0]["error"] == "ValueError: gave up"
    assert rows[0]["look_ahead_attempts"] == 1


def test_run_qa_errored_row_keeps_tool_calls(env):
    rows = run_qa(env, _LooksAheadThenRaises(env), indices=[0])
    assert rows[0]["tool_calls"] == 1


def test_summarise_gives_per_section_means_on_0_100():
    rows = [{"section": "knowledge", "topic": "close_price", "score": 1.0, "error": None},
            {"section": "knowledge", "topic": "max_close", "score": 0.5, "error": None},
            {"section": "knowledge", "topic": "max_close", "score": 0.0, "error": "ValueError: x"},
            {"section": "analysis", "topic": "fcff", "score": 2 / 3, "error": None}]
    summary = summarise(rows)
    assert summary["n"] == 4 and summary["errors"] == 1
    assert summary["sections"]["knowledge"] == {"n": 3, "score": pytest.approx(50.0)}
    assert summary["sections"]["analysis"] == {"n": 1, "score": pytest.approx(200 / 3)}
    assert summary["topics"]["max_close"] == {"n": 2, "score": pytest.approx(25.0)}
    assert all(0.0 <= s["score"] <= 100.0 for s in summary["topics"].values())
