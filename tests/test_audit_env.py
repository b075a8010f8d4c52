"""FinAudit-v0: answer scoring, env contract, XBRL tools, date lock, baselines, task files and the CLI.

Parser and ground-truth unit tests live in ``test_xbrl.py``; this module checks the env around them.
"""

from __future__ import annotations

import csv
import json
import math
import pickle
import re
import shutil
import warnings
from decimal import Decimal
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import finenvs  # noqa: F401  (registers FinAudit-v0)
from finenvs.cli import main
from finenvs.scoring.audit import (
    CLASSES,
    AnswerFormatError,
    AuditTruth,
    audit_rates,
    classify,
    parse_answer,
    parse_number,
)
from finenvs.tasks.audit.baselines import (
    AUDIT_POLICIES,
    MALFORMED,
    ExtractOnly,
    OracleAuditor,
    RandomAuditor,
    audit_markdown,
    run_audit,
    run_audit_section,
    summarise,
)
from finenvs.tasks.audit.env import MAX_ANSWER_CHARS, FinAuditEnv
from finenvs.tools import ToolBox
from finenvs.tools.xbrl import calculation_children, fact_records
from finenvs.xbrl.corpus import shipped_corpus, shipped_xbrl_dir
from finenvs.xbrl.tasks import EVAL_SEEDS, INJECTIONS, eval_instances

RATES = ("ACC", "SER", "EER", "CER")
AUDIT_TOOL_NAMES = ("resolve_filing", "search_concepts", "get_facts", "get_calculation", "get_concept",
                    "get_taxonomy_calculation")
HERCULEAN_HEADER = ["id", "query", "filing_name", "ticker", "issue_time", "usgaap_concept", "period",
                    "gt_answer"]
MSFT_BUNDLE = "msft_10k_2015-06-30"
FUTURE_BUNDLE = "aapl_10k_2029-09-30"  # sorts among the shipped names, so corpus.names shifts too


def _answer(reported: float, calculated: float) -> str:
    return json.dumps({"reported_value": reported, "calculated_value": calculated})


def _rate_sum(rates: dict) -> float:
    return sum(rates[name] for name in RATES)


def _most_precise(facts: list[dict]) -> dict:
    """The fact a careful reader takes: the one with the most decimals ("INF" beats every integer)."""
    with_value = [f for f in facts if f["value"] is not None]
    return max(with_value, key=lambda f: math.inf if f["decimals"] == "INF" else int(f["decimals"] or 0))


def _spellings(value: float) -> list[str]:
    """Ways a number could be written into a text (plain, with separators, unsigned)."""
    out = []
    for v in (value, abs(value)):
        out += [f"{v:.0f}", f"{v:,.0f}", repr(float(v))]
    return out


# ====================================================================== fixtures
@pytest.fixture(scope="module")
def env():
    """The registered eval env (100 instances); each test resets it as it needs."""
    return gym.make("FinAudit-v0")


@pytest.fixture(scope="module")
def instances(env):
    return env.unwrapped.instances


@pytest.fixture(scope="module")
def train_env():
    return FinAuditEnv(split="train")


def _index_of(instances, kind: str, bundle: str | None = None) -> int:
    return next(i for i, inst in enumerate(instances)
                if inst.injection.kind == kind and (bundle is None or inst.bundle == bundle))


# ====================================================================== 1. scoring
TRUTH = AuditTruth(-14_721_000.0, -14_721_000.0, 500.0, 500.0)  # decimals=-3
SPLIT_TRUTH = AuditTruth(1_200_000_000.0, -3_200.0, 0.5, 0.5)  # decimals=0
TOL_TRUTH = AuditTruth(1_000_000.0, 3_000_000.0, 500_000.0, 500_000.0)  # decimals=-6

STRUCTURAL = [
    ("The reported value is 14.7 million and it adds up.", "not parseable JSON"),
    ("[1, 2]", "JSON list"),
    ('"-14,721,000"', "JSON str"),
    ('{"reported_value": -14721000}', "missing field"),
    ('{"calculated_value": -14721000}', "missing field"),
    ('{"reported_value": "abc", "calculated_value": -14721000}', "reported_value"),
    ('{"reported_value": -14721000, "calculated_value": "abc"}', "calculated_value"),
    ('{"reported_value": NaN, "calculated_value": -14721000}', "finite"),
    ('{"reported_value": Infinity, "calculated_value": -14721000}', "finite"),
    ('{"reported_value": true, "calculated_value": -14721000}', "not a number"),
    ('{"reported_value": null, "calculated_value": -14721000}', "not a number"),
    ('{"reported_value": [1], "calculated_value": -14721000}', "not a number"),
    ('{"reported_value": "5 apples", "calculated_value": -14721000}', "unknown unit"),
    ('{"reported_value": "-(5)", "calculated_value": -14721000}', "two negative signs"),
    ('{"reported_value": 1, "calculated_value": 2} {"reported_value": 3, "calculated_value": 4}',
     "2 JSON objects"),
    ('Either {"reported_value": 1, "calculated_value": 2} or {"reported_value": 3, "calculated_value": 4}.',
     "2 JSON objects"),
    ('{"reported_value": 1, "extracted_value": 1, "calculated_value": 1}', "given twice"),
    ('{"reported_value": 1, "REPORTED_VALUE": 1, "calculated_value": 1}', "given twice"),
    ("", "empty"),
    ("   \n ", "empty"),
    (None, "not a JSON object"),
    (42, "not a JSON object"),
    (["reported_value", 1], "not a JSON object"),
    (b"\xff\xfe", "UTF-8"),
    ({"reported_value": float("nan"), "calculated_value": 1.0}, "finite"),
    ({"reported_value": float("inf"), "calculated_value": 1.0}, "finite"),
    ({"reported_value": True, "calculated_value": 1.0}, "not a number"),
    ({"reported_value": 1.0}, "missing field"),
]


@pytest.mark.parametrize(("action", "reason"), STRUCTURAL, ids=[f"s{i}" for i in range(len(STRUCTURAL))])
def test_structural_answers(action, reason):
    outcome = classify(action, TRUTH)
    assert outcome.label == "structural" and not outcome.passed
    assert reason in outcome.reason, outcome.reason
    assert outcome.answer is None and outcome.record()["answer"] is None
    with pytest.raises(AnswerFormatError):
        parse_answer(action)


PASSING = [
    (TRUTH, {"reported_value": -14721000, "calculated_value": -14721000.0}),
    (TRUTH, '{"reported_value": -14721000, "calculated_value": -14721000}'),
    (TRUTH, '{"reported_value": "-14,721,000", "calculated_value": "(14,721,000)"}'),
    (TRUTH, '{"reported_value": "\u221214,721,000", "calculated_value": "-$14,721,000"}'),
    (TRUTH, '{"reported_value": "-14.721 million", "calculated_value": "-14721k"}'),
    (TRUTH, '{"reported_value": "-14 721 000", "calculated_value": "-1.4721e7"}'),
    (TRUTH, 'Here is my answer:\n```json\n{"reported_value": -14721000, "calculated_value": -14721000}\n```'),
    (TRUTH, '```JSON\n{"reported_value": 1, "calculated_value": 1}\n```\nCorrected:\n'
            '```json\n{"reported_value": -14721000, "calculated_value": -14721000}\n```'),
    (TRUTH, 'The filing says {"reported_value": -14721000, "calculated_value": -14721000} after checking.'),
    (TRUTH, '{"Reported_Value": -14721000, "CALCULATED_VALUE": -14721000}'),
    (TRUTH, '{" reported_value ": -14721000, "calculated_value": -14721000, "reasoning": "sum of children"}'),
    (TRUTH, '{"extracted_value": "-14,721,000", "calculated_value": "-14,721,000"}'),
    (TRUTH, {"Extracted_Value": -14721000, "calculated_value": "(14,721,000)"}),
    (TRUTH, b'{"reported_value": -14721000, "calculated_value": -14721000}'),
    (TRUTH, {"reported_value": -14721400, "calculated_value": -14720600}),  # within the 500 tolerance
    (SPLIT_TRUTH, '{"reported_value": "$1.2 billion", "calculated_value": "(3,200)"}'),
    (SPLIT_TRUTH, '{"reported_value": "1.2bn", "calculated_value": "($3,200.00)"}'),
    (SPLIT_TRUTH, '{"reported_value": "USD 1,200,000,000", "calculated_value": -3200}'),
]


@pytest.mark.parametrize(("truth", "action"), PASSING, ids=[f"p{i}" for i in range(len(PASSING))])
def test_passing_answers(truth, action):
    outcome = classify(action, truth)
    assert outcome.label == "pass" and outcome.passed, outcome.reason
    assert outcome.answer is not None
    assert outcome.answer.reported_value == pytest.approx(truth.reported_value, abs=truth.reported_tolerance)


def test_extraction_and_calculation_classes():
    wrong_reported = classify({"reported_value": -14_722_000, "calculated_value": -14_721_000}, TRUTH)
    assert wrong_reported.label == "extraction"
    assert "reported_value -14,722,000 != the filing's -14,721,000" in wrong_reported.reason
    # a wrong reported value is an extraction error whatever the calculated value
    assert classify({"reported_value": 1, "calculated_value": 2}, TRUTH).label == "extraction"
    # the sign matters: the unsigned amount is a different number
    unsigned = {"reported_value": 14_721_000, "calculated_value": -14_721_000}
    assert classify(unsigned, TRUTH).label == "extraction"
    wrong_calculated = classify({"reported_value": "-14,721,000", "calculated_value": "14,721,000"}, TRUTH)
    assert wrong_calculated.label == "calculation"
    assert "calculated_value 14,721,000 != -14,721,000" in wrong_calculated.reason
    assert wrong_calculated.answer is not None and wrong_calculated.answer.calculated_value == 14_721_000
    # a structural error is reported before any wrong value
    assert classify('{"reported_value": 1}', TRUTH).label == "structural"


@pytest.mark.parametrize(
    ("reported", "calculated", "label"),
    [
        (1_500_000, 3_000_000, "pass"),       # exactly +tolerance
        (500_000, 3_000_000, "pass"),         # exactly -tolerance
        (1_500_001, 3_000_000, "extraction"),
        (499_999, 3_000_000, "extraction"),
        (1_000_000, 3_500_000, "pass"),
        (1_000_000, 2_500_000, "pass"),
        (1_000_000, 3_500_001, "calculation"),
        (1_000_000, 2_499_999, "calculation"),
        (1_500_000, 3_500_000, "pass"),
        ("1.5 million", "3.5 million", "pass"),
        ("1,500,001", "3.5 million", "extraction"),
    ],
)
def test_tolerance_boundaries(reported, calculated, label):
    assert classify({"reported_value": reported, "calculated_value": calculated}, TOL_TRUTH).label == label


def test_tolerance_boundaries_on_a_real_instance(env):
    env.reset(options={"index": 0})
    truth = env.unwrapped.truth.truth
    r, c, tol = truth.reported_value, truth.calculated_value, truth.reported_tolerance
    assert tol > 0 and float(r).is_integer() and float(tol).is_integer()
    assert classify(_answer(r + tol, c - tol), truth).label == "pass"
    assert classify(_answer(r + tol + 1, c), truth).label == "extraction"
    assert classify(_answer(r, c - tol - 1), truth).label == "calculation"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-14,721,000", -14_721_000.0), ("(3,200)", -3_200.0), ("$1.2 billion", 1.2e9), ("\u22125", -5.0),
        ("383.3 billion", 383.3e9), ("1 234 567", 1_234_567.0), ("+5", 5.0), (".5", 0.5),
        ("12,345.67", 12_345.67),
        ("2.5bn", 2.5e9), ("7 mn", 7e6), ("3k", 3e3), ("1 trillion", 1e12), ("($1,000)", -1_000.0),
        ("-$1,000", -1_000.0), (" 42 ", 42.0), (7, 7.0), (-2.5, -2.5),
    ],
)
def test_parse_number_reads_agent_spellings(text, value):
    assert parse_number(text) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("bad", ["abc", "1.2.3", "1,23", "", "0x10", "five", "-(5)", "5 apples", True, None,
                                 float("nan"), float("-inf"), [1], {"v": 1}])
def test_parse_number_rejects(bad):
    with pytest.raises(AnswerFormatError):
        parse_number(bad)


@settings(deadline=None, max_examples=200)
@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_parse_number_round_trips_separated_integers(x):
    assert parse_number(f"{x:,}") == x
    assert parse_number(f"({abs(x):,})") == -abs(x)
    assert parse_number(str(x)) == x


_LABELS = st.lists(st.sampled_from(CLASSES), max_size=60)


@settings(deadline=None, max_examples=200)
@given(_LABELS.flatmap(lambda labels: st.tuples(
    st.just(labels), st.lists(st.sampled_from("abc"), min_size=len(labels), max_size=len(labels)))))
def test_rates_sum_to_one_overall_and_per_group(pair):
    labels, groups = pair
    result = audit_rates(labels, groups)
    assert result["n"] == len(labels)
    if labels:
        assert _rate_sum(result) == pytest.approx(1.0)
        assert result["ACC"] == labels.count("pass") / len(labels)
    assert set(result["by"]) == set(groups)
    assert sum(g["n"] for g in result["by"].values()) == len(labels)
    for group in result["by"].values():
        assert group["n"] >= 1 and _rate_sum(group) == pytest.approx(1.0)
        assert all(0.0 <= group[name] <= 1.0 for name in RATES)


def test_audit_rates_edge_cases():
    empty = audit_rates([])
    assert empty["n"] == 0 and all(math.isnan(empty[name]) for name in RATES)
    assert audit_rates([], [])["by"] == {}
    with pytest.raises(ValueError, match="unknown audit class"):
        audit_rates(["pass", "correct"])
    with pytest.raises(ValueError, match="unknown audit class"):
        audit_rates(["PASS"])
    with pytest.raises(ValueError, match="2 groups for 3 labels"):
        audit_rates(["pass", "pass", "structural"], ["a", "b"])
    result = audit_rates(["pass", "structural", "extraction", "calculation"], ["x", "x", "y", "y"])
    assert result["ACC"] == result["SER"] == result["EER"] == result["CER"] == 0.25
    assert result["by"]["x"]["ACC"] == 0.5 and result["by"]["y"]["CER"] == 0.5


_NUMBER_TEXT = st.from_regex(r"\A[-+(]?\$?\d{1,3}(,\d{3}){0,4}(\.\d{1,3})?\)?( ?(k|m|bn|million|billion))?\Z")
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**300), max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30), _NUMBER_TEXT,
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
_KEYS = st.one_of(st.sampled_from(["reported_value", "calculated_value", "extracted_value", "Reported_Value",
                                   "CALCULATED_VALUE", "reasoning"]), st.text(max_size=20))
_DICTS = st.dictionaries(_KEYS, _VALUES, max_size=5)


@settings(deadline=None, max_examples=300)
@given(st.one_of(st.text(max_size=300), _DICTS, _DICTS.map(json.dumps),
                 _DICTS.map(lambda d: f"Answer:\n```json\n{json.dumps(d)}\n```"),
                 _DICTS.map(lambda d: f"I think {json.dumps(d)} is right")))
def test_classify_never_raises_and_always_labels(action):
    outcome = classify(action, TRUTH)
    assert outcome.label in CLASSES
    assert (outcome.answer is None) == (outcome.label == "structural")
    assert isinstance(outcome.reason, str) and outcome.reason
    json.dumps(outcome.record(), allow_nan=False)


@settings(deadline=None, max_examples=100)
@given(st.floats(min_value=-1e13, max_value=1e13), st.floats(min_value=-1e13, max_value=1e13))
def test_classify_numbers_lands_by_distance(reported, calculated):
    label = classify({"reported_value": reported, "calculated_value": calculated}, TOL_TRUTH).label
    if abs(reported - TOL_TRUTH.reported_value) > TOL_TRUTH.reported_tolerance:
        assert label == "extraction"
    elif abs(calculated - TOL_TRUTH.calculated_value) > TOL_TRUTH.calculated_tolerance:
        assert label == "calculation"
    else:
        assert label == "pass"


OVERFLOW = [
    '{"reported_value": "1e400", "calculated_value": 1}',
    '{"reported_value": 1' + "0" * 400 + ', "calculated_value": 1}',
    {"reported_value": 10**400, "calculated_value": 1},
]


@pytest.mark.parametrize("action", OVERFLOW, ids=["string_exponent", "json_big_int", "dict_big_int"])
def test_classify_out_of_range_number_is_structural(action):
    assert classify(action, TRUTH).label == "structural"


# ====================================================================== 2. env contract
CHECK_KWARGS = [{"split": "eval"}, {"split": "train"}, {"split": "eval", "render_mode": "ansi"}]


@pytest.mark.parametrize("kwargs", CHECK_KWARGS, ids=["eval", "train", "eval_ansi"])
def test_check_env_without_warnings(kwargs):
    env = gym.make("FinAudit-v0", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check="render_mode" not in kwargs)


def test_spaces_and_spec():
    base = gym.make("FinAudit-v0").unwrapped
    obs, _ = base.reset(seed=0)
    assert base.observation_space.contains(obs) and isinstance(obs, str)
    assert base.action_space.contains(_answer(1, 2))
    spec = gym.spec("FinAudit-v0")
    assert EnvSpec.from_json(spec.to_json()) == spec
    assert spec.entry_point == "finenvs.tasks.audit.env:FinAuditEnv"


def test_same_seed_same_episode():
    first, second = gym.make("FinAudit-v0"), gym.make("FinAudit-v0")
    for seed in (0, 7, 123):
        o1, i1 = first.reset(seed=seed)
        o2, i2 = second.reset(seed=seed)
        assert o1 == o2 and i1 == i2
        answer = _answer(1_000_000, 2_000_000)
        assert first.step(answer) == second.step(answer)
    assert first.reset(seed=7) == first.reset(seed=7)


def test_train_seeds_give_different_instances(train_env):
    observations = set()
    for seed in range(10):
        obs, info = train_env.reset(seed=seed)
        assert info["split"] == "train" and train_env.instance.split == "train"
        assert train_env.instance.seed not in EVAL_SEEDS
        observations.add(obs)
    assert len(observations) >= 8
    assert train_env.reset(seed=3) == train_env.reset(seed=3)


def test_index_option_picks_eval_instance(env, instances):
    assert len(instances) == len(EVAL_SEEDS) == 100
    assert tuple(instances) == eval_instances()
    for i in (0, 1, 42, 99):
        obs, info = env.reset(seed=5, options={"index": i})
        assert env.unwrapped.instance == instances[i]
        assert info["task_id"] == f"gen-{i}" and info["concept"] == instances[i].concept
        assert info["period"] == instances[i].period and instances[i].concept in obs
    # seed= draws one of the fixed list
    env.reset(seed=11)
    assert env.unwrapped.instance in instances


def test_seed_and_instance_options(env, instances):
    _, info = env.reset(options={"seed": 3})
    assert env.unwrapped.instance == instances[3] and info["task_id"] == "gen-3"
    _, info = env.reset(options={"seed": 1003})
    assert info["split"] == "train" and info["task_id"] == "gen-1003"
    _, info = env.reset(options={"instance": instances[17]})
    assert env.unwrapped.instance is instances[17]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"foo": 1}, "foo"),
        ({"index": 100}, "index"),
        ({"index": -1}, "index"),
        ({"index": True}, "index"),
        ({"index": 1.0}, "index"),
        ({"index": "3"}, "index"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_reset_options_raise_naming_the_option(env, options, match):
    with pytest.raises(ValueError, match=match):
        env.reset(options=options)


def test_other_bad_options(env, train_env):
    with pytest.raises(TypeError, match="AuditInstance"):
        env.reset(options={"instance": "gen-3"})
    with pytest.raises(ValueError, match="index"):
        train_env.reset(options={"index": 0})
    with pytest.raises(ValueError, match="split"):
        FinAuditEnv(split="test")
    with pytest.raises(ValueError, match="render"):
        FinAuditEnv(render_mode="human")


@pytest.mark.parametrize("seed", [True, 2.5, None], ids=["bool", "float", "none"])
def test_bad_seed_option_raises_naming_seed(env, seed):
    with pytest.raises(ValueError, match="seed"):
        env.reset(options={"seed": seed})


def test_step_before_reset_and_after_the_answer():
    fresh = gym.make("FinAudit-v0")
    with pytest.raises(gym.error.ResetNeeded):
        fresh.step(_answer(1, 1))
    fresh.reset(seed=0)
    _, _, terminated, truncated, _ = fresh.step(_answer(1, 1))
    assert terminated and not truncated
    with pytest.raises(gym.error.ResetNeeded):
        fresh.step(_answer(1, 1))
    with pytest.raises(RuntimeError):
        FinAuditEnv().as_of_view()
    with pytest.raises(RuntimeError):
        FinAuditEnv().facts()


def test_reward_and_termination_per_class(env, instances):
    i = _index_of(instances, "sign_flip")
    env.reset(options={"index": i})
    t = env.unwrapped.truth.truth
    cases = {
        "pass": _answer(t.reported_value, t.calculated_value),
        "calculation": _answer(t.reported_value, t.reported_value),
        "extraction": _answer(t.calculated_value, t.calculated_value),
        "structural": "I could not find it.",
    }
    for label, answer in cases.items():
        env.reset(options={"index": i})
        obs, reward, terminated, truncated, info = env.step(answer)
        assert info["audit"]["label"] == label
        assert type(reward) is float and reward == (1.0 if label == "pass" else 0.0)
        assert terminated is True and truncated is False
        assert isinstance(obs, str) and env.unwrapped.observation_space.contains(obs)
        assert info["invalid_action"] == (info["audit"]["reason"] if label == "structural" else None)


def test_reset_hides_the_injection_and_step_reveals_it(env, instances):
    for i, inst in enumerate(instances):
        obs, info = env.reset(options={"index": i})
        assert not {"kind", "injection", "audit", "truth"} & set(info), sorted(info)
        truth = env.unwrapped.truth.truth
        secrets = [truth.reported_value, truth.calculated_value]
        if inst.injection.kind != "none":
            secrets += [v for v in (inst.injection.before, inst.injection.after) if v is not None]
        shown = obs + json.dumps(info, default=str)
        for value in secrets:
            assert abs(value) >= 1_000, (i, value)  # long enough that no date or name contains it
            for spelling in _spellings(value):
                assert spelling not in shown, (i, spelling)
        assert inst.injection.kind not in info.values()
        _, _, _, _, final = env.step(_answer(truth.reported_value, truth.calculated_value))
        assert final["kind"] == inst.injection.kind and final["injection"] == inst.injection.describe()
        audit = final["audit"]
        assert audit["label"] == "pass" and audit["reason"]
        assert audit["truth"]["reported_value"] == truth.reported_value
        assert audit["truth"]["calculated_value"] == truth.calculated_value
        assert {"reported_tolerance", "calculated_tolerance"} <= set(audit["truth"])
        assert isinstance(audit["calculation"], dict) and audit["calculation"]
        json.dumps(final, allow_nan=False)


def test_kinds_are_balanced_in_the_eval_split(instances):
    kinds = [inst.injection.kind for inst in instances]
    assert {k: kinds.count(k) for k in INJECTIONS} == dict.fromkeys(INJECTIONS, 20)
    assert {inst.bundle for inst in instances} == set(shipped_corpus().names)


def test_pickle_round_trip(env):
    base = env.unwrapped
    obs, info = base.reset(seed=9)
    clone = pickle.loads(pickle.dumps(base))
    t = base.truth.truth
    answer = _answer(t.reported_value, t.calculated_value)
    assert clone.step(answer) == base.step(answer)  # mid-episode: the clone runs the same episode
    assert clone.reset(seed=9) == (obs, info)
    assert pickle.loads(pickle.dumps(env)).reset(seed=9) == (obs, info)


def test_render_ansi_mentions_the_verdict():
    env = gym.make("FinAudit-v0", render_mode="ansi")
    assert "reset" in env.render()
    env.reset(seed=0, options={"index": 4})
    assert env.render() == env.unwrapped.instance.query
    env.step("no idea")
    text = env.render()
    assert "verdict: structural" in text and "truth: reported" in text
    env.reset(options={"index": 4})
    t = env.unwrapped.truth.truth
    env.step(_answer(t.reported_value, t.calculated_value))
    assert "verdict: pass" in env.render()
    assert gym.make("FinAudit-v0").render() is None


def test_over_long_and_non_printable_answers_are_structural(env, instances):
    env.reset(options={"index": 0})
    t = env.unwrapped.truth.truth
    good = _answer(t.reported_value, t.calculated_value)
    long = good + " " * (MAX_ANSWER_CHARS + 10)
    assert not env.unwrapped.action_space.contains(long)
    _, reward, _, _, info = env.step(long)
    assert reward == 0.0 and info["audit"]["label"] == "structural"
    assert str(MAX_ANSWER_CHARS) in info["audit"]["reason"] and info["invalid_action"]
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step(good + "\x07")  # readable JSON, but a control character in the reply
    assert reward == 0.0 and info["audit"]["label"] == "structural"
    assert "non-printable" in info["audit"]["reason"] and info["invalid_action"]
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step(good[:-1] + ', "x": "\x00"}')
    assert reward == 0.0 and info["audit"]["label"] == "structural" and info["audit"]["reason"]
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step(12345)
    assert reward == 0.0 and info["audit"]["label"] == "structural"
    env.reset(options={"index": 0})  # exactly at the limit is still read
    at_limit = good + " " * (MAX_ANSWER_CHARS - len(good))
    assert len(at_limit) == MAX_ANSWER_CHARS and env.step(at_limit)[1] == 1.0


def test_dict_and_string_actions(env, instances):
    i = _index_of(instances, "child_scaled")
    env.reset(options={"index": i})
    t = env.unwrapped.truth.truth
    as_dict = {"reported_value": t.reported_value, "calculated_value": t.calculated_value}
    _, reward, _, _, info = env.step(as_dict)
    assert reward == 1.0 and info["audit"]["label"] == "pass"
    env.reset(options={"index": i})
    _, reward, _, _, info = env.step({"reported_value": f"{t.reported_value:,.0f}",
                                      "calculated_value": f"{t.calculated_value:,.0f}", "reasoning": "tools"})
    assert reward == 1.0
    env.reset(options={"index": i})
    fenced = f"Checked the children.\n```json\n{_answer(t.reported_value, t.calculated_value)}\n```"
    assert env.step(fenced)[1] == 1.0
    env.reset(options={"index": i})
    assert env.step({"reported_value": t.reported_value})[4]["audit"]["label"] == "structural"


def test_step_with_out_of_range_number_is_structural(env):
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step('{"reported_value": "1e400", "calculated_value": 1}')
    assert reward == 0.0 and info["audit"]["label"] == "structural"


# ====================================================================== 3. tools
@pytest.fixture()
def tools(env):
    return ToolBox(env, max_chars=200_000)


def test_toolbox_lists_the_audit_tools_and_commit_schema(env, tools):
    env.reset(options={"index": 0})
    assert tools.names == [*AUDIT_TOOL_NAMES, "commit_action"]
    specs = {s["function"]["name"]: s["function"] for s in tools.specs()}
    commit = specs["commit_action"]["parameters"]
    assert commit["required"] == ["reported_value", "calculated_value"]
    assert set(commit["properties"]) == {"reported_value", "calculated_value", "reasoning"}
    t = env.unwrapped.truth.truth
    ok = tools.call("commit_action", {"reported_value": t.reported_value, "calculated_value": "1,000"})
    assert ok.ok and ok.commit is not None and ok.commit.valid
    bad = tools.call("commit_action", {"reported_value": 1})
    assert not bad.ok and "missing field" in bad.error
    bad = tools.call("commit_action", '{"reported_value": "abc", "calculated_value": 1}')
    assert not bad.ok and "reported_value" in bad.error
    assert env.unwrapped._done is False  # commit_action does not step the env


def test_each_tool_answers_on_an_eval_instance(env, instances, tools):
    i = _index_of(instances, "parent_mismatch")
    inst = instances[i]
    _, info = env.reset(options={"index": i})
    expected = {
        "resolve_filing": ({}, {"as_of", "filings", "note"}),
        "search_concepts": ({"query": inst.concept.split(":")[1]},
                            {"bundle", "query", "matches", "concepts"}),
        "get_facts": ({"concept": inst.concept, "period": inst.period}, {"columns", "rows"}),
        "get_calculation": ({"concept": inst.concept}, {"roles"}),
        "get_concept": ({"concept": inst.concept},
                        {"balance", "period_type", "non_negative", "non_negative_reason", "labels"}),
        "get_taxonomy_calculation": ({"concept": "us-gaap:Assets"}, {"concept", "taxonomy", "relationships"}),
    }
    for name, (arguments, fields) in expected.items():
        result = tools.call(name, arguments)
        assert result.ok, (name, result.error)
        assert result.error is None and result.look_ahead == 0 and not result.truncated
        assert fields <= set(result.data), (name, sorted(result.data))
        json.loads(result.text())
    data = tools.call("resolve_filing").data
    assert data["as_of"] == info["issued"] == inst.issued
    assert [f["bundle"] for f in data["filings"] if f["this_task"]] == [inst.bundle]
    hits = tools.call("search_concepts", {"query": inst.concept.split(":")[1]}).data
    assert inst.concept in [h["concept"] for h in hits["concepts"]]
    assert len(tools.call("search_concepts", {"query": "", "limit": 3}).data["concepts"]) == 3
    calc = tools.call("get_calculation", {"concept": inst.concept}).data
    weights = [w for kids in calculation_children(calc).values() for _, w in kids]
    assert weights and all(w in (1.0, -1.0) for w in weights)
    # each role once, children's roles then parents' (a set's order varies by process), with its title and rows
    filing = env.unwrapped.as_of_view().get(None)
    children, parents = filing.children(inst.concept), filing.parents(inst.concept)
    assert list(calc["roles"]) == list(dict.fromkeys([*children, *parents]))
    for role, entry in calc["roles"].items():
        assert entry["title"] == filing.roles.get(role, "")
        assert entry.get("children", []) == [[c, w, filing.label(c)] for c, w in children.get(role, [])]
        assert entry.get("parents", []) == [[p, w] for p, w in parents.get(role, [])]
    # nothing the call gave is echoed (bundle, concept), nor the rule its description states
    assert "bundle" not in calc and "rule" not in calc
    # a period named by the call is not a column; the facts are non-dimensional, so no dimensions column either
    answer = tools.call("get_facts", {"concept": inst.concept, "period": inst.period}).data
    assert answer["columns"] == ["value", "decimals", "unit", "context"] and answer["rows"]
    every = fact_records(tools.call("get_facts", {"concept": inst.concept}).data)
    assert {f["context"] for f in every if f["period"] == inst.period} == {f["context"] for f in fact_records(answer)}
    dimensional = tools.call("get_facts", {"concept": inst.concept, "dimensional": True}).data
    assert dimensional["columns"] == ["value", "decimals", "unit", "period", "context", "dimensions"]
    assert len(dimensional["rows"]) >= len(every)


def test_get_facts_rows_keep_what_a_fact_says(env, instances, tools):
    """Nil, non-numeric and numeric facts as rows: a number as written (no trailing .0), null for a nil fact, the
    text of a fact that is not a number (its own column, only when the answer has one)."""
    i = next(i for i, inst in enumerate(instances) if inst.bundle == "aapl_10k_2023-09-30")
    env.reset(options={"index": i})
    filing = env.unwrapped.as_of_view().get(None)
    nil = fact_records(tools.call("get_facts", {"concept": "us-gaap:CommitmentsAndContingencies"}).data)
    assert nil and all(f["value"] is None and f["unit"] for f in nil)
    assert "text" not in nil[0]
    year = tools.call("get_facts", {"concept": "dei:DocumentFiscalYearFocus"}).data
    assert year["columns"][-1] == "text"
    assert [(f["value"], f["decimals"], f["unit"], f["text"]) for f in fact_records(year)] == [(None, None, None, "2023")]
    nil_text = next(f for f in filing.facts if f.nil and f.unit is None)
    rows = fact_records(tools.call("get_facts", {"concept": nil_text.concept, "dimensional": True}).data)
    assert [f["text"] for f in rows if f["context"] == nil_text.context] == [None]
    assets = tools.call("get_facts", {"concept": "us-gaap:Assets", "period": "2023-09-30"})
    assert '"rows":[[352583000000,-6,' in assets.text()


def test_get_facts_of_several_concepts_answers_each_as_its_own_call(env, instances, tools):
    """concepts: one answer holding, per concept, the rows its own call answers (one columns list for all; a name
    given twice once; null for a concept not in the filing, while the others still answer)."""
    i = _index_of(instances, "parent_mismatch")
    inst = instances[i]
    env.reset(options={"index": i})
    kids = [c for c, _ in next(iter(calculation_children(
        tools.call("get_calculation", {"concept": inst.concept}).data).values()))]
    names = [inst.concept, *kids, "us-gaap:NoSuchConceptAtAll", inst.concept, "dei:DocumentFiscalYearFocus"]
    for period in (inst.period, None):
        extra = {"period": period} if period else {}
        both = tools.call("get_facts", {"concepts": names, **extra})
        assert both.ok and not both.truncated, both.error
        assert list(both.data["facts"]) == list(dict.fromkeys(names))
        assert both.data["facts"]["us-gaap:NoSuchConceptAtAll"] is None
        if period is None:  # the fiscal year is a text: its column is in every row, null for the numbers
            assert both.data["columns"][-1] == "text"
        for name in dict.fromkeys(names):
            if name == "us-gaap:NoSuchConceptAtAll":
                assert fact_records(both.data, name) == []
                continue
            one = tools.call("get_facts", {"concept": name, **extra}).data
            mine = [{k: v for k, v in f.items() if k != "text" or v is not None} for f in fact_records(both.data, name)]
            assert mine == fact_records(one), name
        assert fact_records(both.data, inst.concept)


def test_get_facts_returns_the_injected_reported_value(env, instances, tools):
    """Over all eval instances: the most precise non-dimensional fact is the truth's reported value."""
    for i, inst in enumerate(instances):
        env.reset(options={"index": i})
        truth = env.unwrapped.truth.truth
        result = tools.call("get_facts", {"concept": inst.concept, "period": inst.period})
        assert result.ok, (i, result.error)
        assert _most_precise(fact_records(result.data))["value"] == truth.reported_value, i
        inj = inst.injection
        if inj.kind in ("sign_flip", "parent_mismatch", "child_scaled"):  # the changed fact, as seen
            changed = [f["value"] for f in fact_records(tools.call("get_facts", {"concept": inj.concept}).data)
                       if f["context"] == inj.context]
            assert inj.after in changed and inj.before not in changed, i
            if inj.kind != "child_scaled":
                assert truth.reported_value == inj.after
        elif inj.kind == "child_duplicated":
            kids = calculation_children(tools.call("get_calculation", {"concept": inj.concept}).data)[inj.role]
            assert [child for child, _ in kids].count(inj.child) == 2, i
        # naming the episode's own bundle reads the same (injected) filing
        named = tools.call("get_facts", {"concept": inst.concept, "period": inst.period,
                                         "bundle": inst.bundle})
        assert named.data == result.data


@pytest.mark.parametrize(
    ("name", "arguments", "match"),
    [
        ("get_facts", {"concept": "us-gaap:NoSuchConceptAtAll"}, "is not in filing"),
        ("get_facts", {"concept": "us-gaap:Assets", "period": "yesterday"}, "period"),
        ("get_facts", {"concept": "us-gaap:Assets", "period": "2015/06/30"}, "period"),
        ("get_facts", {"concept": "us-gaap:Assets", "bundle": "no_such_bundle"}, "the bundle argument names no filing"),
        ("get_facts", {"concept": 5}, "concept must be of type string"),
        ("get_facts", {}, "give exactly one of them"),
        ("get_facts", {"concept": "us-gaap:Assets", "concepts": ["us-gaap:Assets"]}, "give exactly one of them"),
        ("get_facts", {"concepts": []}, "at least 1 item"),
        ("get_facts", {"concepts": ["us-gaap:Assets"] * 51}, "at most 50 items"),
        ("get_facts", {"concepts": [5]}, "concepts[0] must be of type string"),
        ("get_facts", {"concepts": ["x" * 301]}, "concepts[0]"),
        ("get_facts", {"concepts": "us-gaap:Assets"}, "must be of type array"),
        ("get_facts", {"concepts": ["us-gaap:Assets"], "period": "yesterday"}, "period"),
        ("get_facts", {"concept": "us-gaap:Assets", "colour": "red"}, "unknown field"),
        ("get_facts", "{not json", "not valid JSON"),
        ("get_facts", [1, 2], "must be a JSON object"),
        ("get_facts", {"concept": "us-gaap:Assets", "dimensional": "yes"}, "dimensional"),
        ("get_calculation", {"concept": "us-gaap:NoSuchConceptAtAll"}, "is not in filing"),
        ("get_concept", {"concept": "xx"}, "at least 3 characters"),
        ("search_concepts", {"limit": 0}, "limit"),
        ("search_concepts", {"bundle": 7}, "bundle"),
        ("resolve_filing", {"ticker": ["MSFT"]}, "ticker"),
        ("get_taxonomy_calculation", {}, "concept"),
        ("no_such_tool", {}, "unknown tool"),
    ],
)
def test_tool_errors_are_results_not_exceptions(env, tools, name, arguments, match):
    env.reset(options={"index": 15})
    result = tools.call(name, arguments)
    assert not result.ok and result.error and match in result.error, result.error
    assert result.data == {"error": result.error} and result.look_ahead == 0


def test_tools_before_reset_answer_with_an_error():
    tools = ToolBox(FinAuditEnv())
    result = tools.call("get_facts", {"concept": "us-gaap:Assets"})
    assert not result.ok and "reset" in result.error


def test_commit_action_with_out_of_range_number_never_raises(env, tools):
    env.reset(options={"index": 0})
    result = tools.call("commit_action", {"reported_value": "1e400", "calculated_value": 1})
    assert not result.ok and result.error


# ====================================================================== 4. date lock
def test_resolve_filing_lists_only_released_bundles(env, instances, tools):
    corpus = shipped_corpus()
    released = {name: corpus.filing(name).filed for name in corpus.names}
    for i, inst in enumerate(instances):
        env.reset(options={"index": i})
        data = tools.call("resolve_filing").data
        listed = {f["bundle"] for f in data["filings"]}
        assert listed == {n for n, filed in released.items() if filed <= inst.issued} | {inst.bundle}, i
        assert all(f["released"] <= data["as_of"] for f in data["filings"])


def test_msft_2015_sees_only_itself_and_is_refused_later_bundles(env, instances, tools):
    i = next(i for i, inst in enumerate(instances) if inst.bundle == MSFT_BUNDLE)
    _, info = env.reset(options={"index": i})
    assert info["issued"] == "2015-07-31" and info["look_ahead_attempts"] == 0
    rows = tools.call("resolve_filing").data["filings"]
    assert [r["bundle"] for r in rows] == [MSFT_BUNDLE] and rows[0]["released"] == "2015-07-31"
    assert tools.call("resolve_filing", {"ticker": "aapl"}).data["filings"] == []
    counter = env.unwrapped.as_of_view().counter
    later = [n for n in shipped_corpus().names if n != MSFT_BUNDLE]
    for k, bundle in enumerate(later, start=1):
        result = tools.call("get_facts", {"concept": "us-gaap:Assets", "bundle": bundle})
        # a later bundle answers like one that does not exist: the same text, naming visible bundles only
        assert not result.ok and result.error == ("the bundle argument names no filing released by the audit date "
                                                  f"2015-07-31; bundles released by then: ['{MSFT_BUNDLE}']")
        assert result.look_ahead == 1 and counter.attempts == k
    for name, arguments in [("search_concepts", {}), ("get_calculation", {"concept": "us-gaap:Assets"}),
                            ("get_concept", {"concept": "us-gaap:Assets"})]:
        result = tools.call(name, {**arguments, "bundle": later[0]})
        assert not result.ok and result.look_ahead == 1
    attempts = counter.attempts
    assert attempts == len(later) + 3
    _, _, _, _, final = env.step("done")
    assert final["look_ahead_attempts"] == attempts
    env.reset(options={"index": i})  # a new episode starts from zero
    assert env.unwrapped.as_of_view().counter.attempts == 0


def test_earlier_bundles_are_readable_as_filed(env, instances, tools):
    i = _index_of(instances, "sign_flip", "aapl_10q_2025-03-29_0000320193-25-000057")
    inst = instances[i]
    env.reset(options={"index": i})
    rows = tools.call("resolve_filing", {"ticker": "AAPL", "form": "10K"}).data["filings"]
    listed = {f["bundle"] for f in rows}
    assert listed == {"aapl_10k_2023-09-30"}
    result = tools.call("get_facts", {"concept": "us-gaap:Assets", "period": "2023-09-30",
                                      "bundle": "aapl_10k_2023-09-30"})
    assert result.ok and result.look_ahead == 0
    assert _most_precise(fact_records(result.data))["value"] == 352_583_000_000.0  # as filed
    assert env.unwrapped.as_of_view().counter.attempts == 0 and inst.issued >= "2023-11-03"


def _make_corpus(root: Path, *, future: bool) -> Path:
    """A copy of the shipped bundles; with ``future``, plus a bundle released after every instance whose
    monetary facts are all doubled (so any leak of it would change numbers)."""
    shutil.copytree(shipped_xbrl_dir(), root, ignore=shutil.ignore_patterns("__pycache__"))
    if future:
        new = root / FUTURE_BUNDLE
        shutil.copytree(root / "aapl_10k_2023-09-30", new)
        meta = json.loads((new / "filing.json").read_text())
        meta.update(bundle=FUTURE_BUNDLE, period_end="2029-09-30", filed="2030-01-01")
        (new / "filing.json").write_text(json.dumps(meta, indent=2))
        instance = new / meta["files"]["instance"]
        fact = re.compile(r'(<[^>]*unitRef="[^"]*"[^>]*>)(-?\d+(?:\.\d+)?)(</)')
        text, n = fact.subn(lambda m: m[1] + str(2 * Decimal(m[2])) + m[3], instance.read_text())
        assert n > 500
        instance.write_text(text)
    return root


@pytest.fixture(scope="module")
def counterfactual_envs(tmp_path_factory):
    base = _make_corpus(tmp_path_factory.mktemp("corpus") / "xbrl", future=False)
    future = _make_corpus(tmp_path_factory.mktemp("corpus_future") / "xbrl", future=True)
    return FinAuditEnv(split="eval", corpus=str(base)), FinAuditEnv(split="eval", corpus=str(future))


def _episode_record(env: FinAuditEnv, inst) -> dict:
    obs, info = env.reset(options={"instance": inst})
    tools = ToolBox(env, max_chars=200_000)
    calls = [("resolve_filing", {}), ("resolve_filing", {"ticker": "AAPL"}),
             ("get_facts", {"concept": inst.concept}),
             ("get_facts", {"concept": inst.concept, "period": inst.period}),
             ("get_calculation", {"concept": inst.concept}), ("get_concept", {"concept": inst.concept}),
             ("search_concepts", {"query": inst.concept.split(":")[1]})]
    outputs = []
    for name, arguments in calls:
        result = tools.call(name, arguments)
        assert result.ok and result.look_ahead == 0, (inst.id, name, result.error)
        outputs.append(result.data)
    t = env.truth.truth
    _, reward, _, _, final = env.step(_answer(t.reported_value, t.calculated_value))
    return {"obs": obs, "info": info, "tools": outputs, "facts": env.facts(), "reward": reward,
            "final": final}


def test_future_bundle_changes_nothing_for_earlier_instances(counterfactual_envs):
    base, future = counterfactual_envs
    assert FUTURE_BUNDLE in future.corpus.names and FUTURE_BUNDLE not in base.corpus.names
    # the new bundle really holds other numbers
    old = {f.context: f.value for f in future.corpus.filing("aapl_10k_2023-09-30").facts_of("us-gaap:Assets")}
    new = {f.context: f.value for f in future.corpus.filing(FUTURE_BUNDLE).facts_of("us-gaap:Assets")}
    assert new and all(new[c] == 2 * old[c] for c in new)
    shipped = eval_instances()
    assert all(inst.bundle != FUTURE_BUNDLE for inst in shipped)
    for inst in shipped:
        a, b = _episode_record(base, inst), _episode_record(future, inst)
        assert a == b, inst.id
        assert a["reward"] == 1.0


def test_future_bundle_is_refused_and_counted(counterfactual_envs):
    _, future = counterfactual_envs
    inst = eval_instances()[0]  # aapl_10k_2023-09-30, released 2023-11-03
    future.reset(options={"instance": inst})
    tools = ToolBox(future)
    assert FUTURE_BUNDLE not in {f["bundle"] for f in tools.call("resolve_filing").data["filings"]}
    result = tools.call("get_facts", {"concept": "us-gaap:Assets", "bundle": FUTURE_BUNDLE})
    assert not result.ok and result.look_ahead == 1
    assert "2030-01-01" not in result.error and FUTURE_BUNDLE not in result.error  # named as the argument only
    absent = tools.call("get_facts", {"concept": "us-gaap:Assets", "bundle": "no_such_bundle"})
    assert absent.error == result.error and absent.look_ahead == 0  # the same words: nothing tells them apart
    assert future.as_of_view().counter.attempts == 1
    # generated eval instances of the user corpus cover its bundles, the future one too
    assert {inst.bundle for inst in future.instances} == set(future.corpus.names)


# ====================================================================== 5. baselines
@pytest.fixture(scope="module")
def section():
    return run_audit_section(seed=0)


def test_oracle_passes_every_eval_instance(env):
    rows = run_audit(env, OracleAuditor.from_env(env))
    summary = summarise(rows)
    assert summary["n"] == 100 and summary["ACC"] == 1.0, [r for r in rows if r["label"] != "pass"][:3]
    assert all(summary["by"][k]["ACC"] == 1.0 and summary["by"][k]["n"] == 20 for k in INJECTIONS)
    assert all(r["reward"] == 1.0 and r["look_ahead_attempts"] == 0 for r in rows)


def test_oracle_passes_train_instances(train_env, instances):
    oracle = OracleAuditor.from_env(train_env)
    labels, kinds, keys = [], [], set()
    for seed in range(1000, 1100):
        obs, info = train_env.reset(options={"seed": seed})
        inst = train_env.instance
        assert inst.split == "train" and inst.seed == seed
        keys.add((inst.bundle, inst.concept, inst.period))
        _, reward, _, _, final = train_env.step(oracle(obs, info))
        assert final["look_ahead_attempts"] == 0
        labels.append(final["audit"]["label"])
        kinds.append(final["kind"])
    result = audit_rates(labels, kinds)
    failed = [(s, k) for s, k, lab in zip(range(1000, 1100), kinds, labels, strict=True) if lab != "pass"]
    assert result["ACC"] == 1.0, failed
    assert set(result["by"]) == set(INJECTIONS)
    # train and eval never audit the same (bundle, concept, period)
    assert not keys & {(inst.bundle, inst.concept, inst.period) for inst in instances}


def test_extract_only_misses_exactly_the_injected_errors(env):
    rows = run_audit(env, ExtractOnly.from_env(env))
    summary = summarise(rows)
    share_none = sum(r["kind"] == "none" for r in rows) / len(rows)
    assert summary["ACC"] == share_none == 0.2
    assert {r["label"] for r in rows if r["kind"] == "none"} == {"pass"}
    assert {r["label"] for r in rows if r["kind"] != "none"} == {"calculation"}
    assert summary["CER"] == pytest.approx(1 - share_none) and summary["SER"] == summary["EER"] == 0.0
    assert all(r["look_ahead_attempts"] == 0 for r in rows)


def test_random_agent(env):
    rows = run_audit(env, RandomAuditor.from_env(env, seed=0), seed=0)
    summary = summarise(rows)
    assert summary["ACC"] == 0.0 and 0.3 <= summary["SER"] <= 0.7
    assert _rate_sum(summary) == pytest.approx(1.0)
    assert all(r["look_ahead_attempts"] == 0 for r in rows)
    assert run_audit(env, RandomAuditor.from_env(env, seed=0), seed=0) == rows  # seeded


def test_every_malformed_reply_is_a_structural_error():
    outcomes = [classify(reply, TRUTH) for reply in MALFORMED]
    assert all(o.label == "structural" and o.reason for o in outcomes)
    assert len({o.reason for o in outcomes}) >= 4  # several kinds of format error, not one


def test_run_audit_section_rates(section):
    assert section["n"] == 100 and set(section["policies"]) == set(AUDIT_POLICIES)
    assert set(section) == {"n", "policies"}  # grading and tasks_file are recorded only when not the defaults
    for name, s in section["policies"].items():
        assert s["n"] == 100 and _rate_sum(s) == pytest.approx(1.0), name
        assert set(s["by"]) == set(INJECTIONS)
        for kind, rates in s["by"].items():
            assert rates["n"] == 20 and _rate_sum(rates) == pytest.approx(1.0), (name, kind)
        assert len(s["rows"]) == 100 and all(r["look_ahead_attempts"] == 0 for r in s["rows"])
    assert section["policies"]["oracle"]["ACC"] == 1.0
    assert section["policies"]["extract_only"]["ACC"] == 0.2
    assert section["policies"]["random"]["ACC"] == 0.0
    md = "\n".join(audit_markdown(section))
    assert "### FinAudit-v0" in md and "| oracle | 100.0 | 0.0 | 0.0 | 0.0 |" in re.sub(" +", " ", md)


# ====================================================================== 6. split="file"
def _write_tasks(path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(HERCULEAN_HEADER)
        writer.writerow(["audit-ok", "", "10k", "aapl", "2023-09-30", "us-gaap:Assets", "2023-09-30",
                         "{'extracted_value': '352,583,000,000', 'calculated_value': '352,583,000,000'}"])
        writer.writerow(["audit-missing-bundle", "", "10k", "zzzz", "2023-09-30", "us-gaap:Assets",
                         "2023-09-30", ""])
    return path


def test_file_split_runs_the_answerable_task(tmp_path):
    env = FinAuditEnv(split="file", tasks_file=str(_write_tasks(tmp_path / "tasks.csv")))
    assert [inst.id for inst in env.instances] == ["audit-ok"]
    obs, info = env.reset(seed=0)
    assert info["task_id"] == "audit-ok" and info["source"] == "herculean" and info["split"] == "file"
    assert info["bundle"] == "aapl_10k_2023-09-30" and "us-gaap:Assets" in obs
    assert [e["id"] for e in info["excluded"]] == ["audit-missing-bundle"]
    assert "zzzz" in info["excluded"][0]["reason"]
    published = {"extracted_value": "352,583,000,000", "calculated_value": "352,583,000,000"}
    assert env.instance.published == published
    assert env.reset(options={"index": 0})[1]["task_id"] == "audit-ok"
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"index": 1})
    oracle = OracleAuditor.from_env(env)
    obs, info = env.reset(seed=1)
    _, reward, terminated, _, final = env.step(oracle(obs, info))
    assert reward == 1.0 and terminated and final["audit"]["label"] == "pass" and final["kind"] == "none"
    assert final["audit"]["truth"]["reported_value"] == 352_583_000_000.0
    assert final["excluded"] == info["excluded"]


def test_file_split_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="tasks_file"):
        FinAuditEnv(split="file")
    tasks = str(_write_tasks(tmp_path / "tasks.csv"))
    with pytest.raises(ValueError, match="tasks_file"):
        FinAuditEnv(split="eval", tasks_file=tasks)
    with pytest.raises(ValueError, match="tasks_file"):
        FinAuditEnv(split="train", tasks_file=tasks)
    only_bad = tmp_path / "bad.csv"
    with open(only_bad, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(HERCULEAN_HEADER)
        writer.writerow(["x", "", "10k", "aapl", "2023-09-30", "us-gaap:NoSuchConceptAtAll", "2023-09-30",
                         ""])
    with pytest.raises(ValueError, match="no answerable task"):
        FinAuditEnv(split="file", tasks_file=str(only_bad))


def test_file_task_audit_date_is_the_filing_release_date(tmp_path):
    env = FinAuditEnv(split="file", tasks_file=str(_write_tasks(tmp_path / "tasks.csv")))
    obs, info = env.reset(seed=0)
    assert info["as_of"] == "2023-11-03"
    assert "released 2023-11-03" in obs


# ====================================================================== 7. CLI
def test_cli_runs_an_audit_instance_as_json(capsys):
    assert main(["run", "--env", "FinAudit-v0", "--policy", "oracle", "--instance", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["label"] == "pass" and out["reward"] == 1.0 and out["task_id"] == "gen-2"
    assert out["kind"] == eval_instances()[2].injection.kind and out["concept"] == eval_instances()[2].concept
    assert parse_answer(out["answer"]).reported_value == out["truth"]["reported_value"]


def test_cli_runs_an_audit_instance_as_text(capsys):
    assert main(["run", "--env", "FinAudit-v0", "--policy", "extract_only", "--instance", "0"]) == 0
    out = capsys.readouterr().out
    assert "FinAudit-v0 gen-0 policy=extract_only: pass" in out and "truth:  reported" in out


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--symbol", "AAPL"], "--symbol is not an option of FinAudit-v0"),
        (["--fee-bps", "3"], "--fee-bps is not an option of FinAudit-v0"),
        (["--split", "test"], "--split 'test'"),
        (["--instance", "100"], "instances [100] are out of range"),
    ],
)
def test_cli_audit_errors_are_one_line_exit_2(capsys, extra, match):
    assert main(["run", "--env", "FinAudit-v0", "--policy", "oracle", *extra]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("finenvs: error:")]
    assert len(errors) == 1 and match in errors[0], err
    assert "Traceback" not in err
