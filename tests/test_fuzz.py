"""Fuzz: hostile replies and tool arguments never raise, never echo unbounded input, never take super-linear time.

Over every registered text env (its protocol's ``parse_text``/``parse_commit``, a full env step) and every
tool of its toolset: hypothesis strategies from :mod:`hostile` (deep nesting, huge numbers, surrogates,
control characters, marker floods, near-miss JSON, valid-looking answers with wrong types) and a fixed
adversarial corpus at each protocol's length limit.

The time bound here is a safety net against a quadratic or exponential parser (those take seconds to
minutes on these inputs), not a performance target: the 10 ms target is measured in
``benchmarks/bench_parse.py``. ``-m slow`` runs a larger corpus.
"""

from __future__ import annotations

import json
import math
import time

import gymnasium as gym
import pytest
from hostile import floods, hostile_arguments, hostile_json, hostile_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import finenvs  # noqa: F401  (registers the envs)
from finenvs.tasks import tasks
from finenvs.text import safe_json
from finenvs.tools.registry import DEFAULT_MAX_CHARS

FAMILIES = [spec.family for spec in tasks()]
#: A generous ceiling on one parse (the benchmark's worst case is a few ms): only a super-linear parser hits it.
#: Measured as this process's CPU time, so a busy machine (other test workers, other jobs) cannot trip it.
PARSE_CEILING = 0.5
#: The longest reason a parser records (it names, never echoes, the input).
MAX_REASON = 1_000

FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=1_500)


@pytest.fixture(scope="module")
def text_envs():
    envs = {}
    for spec in tasks():
        env = gym.make(spec.text_env_id)
        env.reset(seed=0)
        envs[spec.family] = env
    yield envs
    for env in envs.values():
        env.close()


def _wrapper(env):
    while not hasattr(env, "protocol"):
        env = env.env
    return env


def _check_parsed(parsed, text=None):
    assert parsed.invalid is None or (isinstance(parsed.invalid, str) and len(parsed.invalid) <= MAX_REASON), \
        parsed.invalid[:200]
    assert isinstance(parsed.name, str) and len(parsed.name) <= MAX_REASON
    json.dumps(parsed.invalid)  # recordable


def _parse_all_ways(protocol, text):
    began = time.process_time()
    parsed = protocol.parse_text(text)
    elapsed = time.process_time() - began
    _check_parsed(parsed)
    if isinstance(text, str):
        _check_parsed(protocol.parse_commit(text))
    return elapsed


# ----------------------------------------------------------------------------- the fixed corpus
@pytest.mark.parametrize("family", FAMILIES)
def test_adversarial_corpus_parses_in_bounded_time(text_envs, family):
    protocol = _wrapper(text_envs[family]).protocol
    slowest = max((_parse_all_ways(protocol, text), name) for name, text in floods(protocol.max_chars))
    assert slowest[0] < PARSE_CEILING, slowest


@pytest.mark.parametrize("family", FAMILIES)
def test_adversarial_corpus_steps_the_env(text_envs, family):
    """Corpus replies go through a full env step (scorers included): a finite reward, a recordable info."""
    env = text_envs[family]
    protocol = _wrapper(env).protocol
    for name, text in floods(protocol.max_chars)[::4]:  # every fourth: the step, not the parse, is under test
        env.reset(seed=0)
        _, reward, _, _, info = env.step(text)
        assert math.isfinite(reward), (name, reward)
        reason = info.get("invalid_action")
        assert reason is None or len(reason) <= MAX_REASON, (name, reason[:100])
        json.dumps(info, default=str)


# ----------------------------------------------------------------------------- hypothesis: replies
@pytest.mark.parametrize("family", FAMILIES)
@FAST
@given(text=hostile_text())
def test_hostile_replies_never_raise(text_envs, family, text):
    protocol = _wrapper(text_envs[family]).protocol
    assert _parse_all_ways(protocol, text) < PARSE_CEILING


@pytest.mark.parametrize("family", FAMILIES)
@FAST
@given(value=hostile_json())
def test_hostile_commit_values_never_raise(text_envs, family, value):
    """A commit's arguments as a decoded value (what an MCP client or a dict action sends)."""
    protocol = _wrapper(text_envs[family]).protocol
    for arguments in (value, {"action": value}, {"answer": value}, {"hedge": value}, {"report": value},
                      {"reported_value": value, "calculated_value": value}, {"legs": value, "contracts": value}):
        _check_parsed(protocol.parse_commit(arguments))
    _check_parsed(protocol.parse_text(value))


@pytest.mark.parametrize("family", FAMILIES)
@settings(FAST, max_examples=6)
@given(text=hostile_text())
def test_hostile_replies_step_every_env(text_envs, family, text):
    env = text_envs[family]
    env.reset(seed=1)
    _, reward, _, _, info = env.step(text)
    assert math.isfinite(reward)
    json.dumps(info, default=str)


# ----------------------------------------------------------------------------- hypothesis: tools
def _tool_params(family):
    spec = next(s for s in tasks() if s.family == family)
    env = gym.make(spec.text_env_id)
    toolbox = _wrapper(env).toolbox
    return [(name, list(tool.parameters.get("properties", {}))) for name, tool in toolbox.tools.items()]


TOOLS = [(family, name, props) for family in FAMILIES for name, props in _tool_params(family)]


@pytest.mark.parametrize(("family", "tool", "props"), TOOLS, ids=[f"{f}-{t}" for f, t, _ in TOOLS])
@settings(FAST, max_examples=8)
@given(data=st.data())
def test_hostile_tool_arguments_are_bounded_results(text_envs, family, tool, props, data):
    arguments = data.draw(hostile_arguments(props))
    env = _wrapper(text_envs[family])
    result = env.call_tool(tool, arguments)
    text = result.text()
    assert len(text) <= DEFAULT_MAX_CHARS
    json.loads(text)
    assert result.error is None or len(result.error) <= MAX_REASON
    json.dumps(result.record(), default=str)


@pytest.mark.parametrize("family", FAMILIES)
def test_hostile_tool_names_and_argument_texts(text_envs, family):
    env = _wrapper(text_envs[family])
    for name in (10 ** 5000, None, ["x"] * 1000, "x" * 100_000, "\ud800", "", {"a": 1}):
        result = env.call_tool(name, {})
        assert not result.ok and len(result.text()) <= DEFAULT_MAX_CHARS
    tool = next(iter(env.toolbox.tools))
    for _, text in floods(70_000):
        result = env.call_tool(tool, text)
        assert len(result.text()) <= DEFAULT_MAX_CHARS and (result.error is None or len(result.error) <= MAX_REASON)


# ----------------------------------------------------------------------------- the JSON reader itself
@FAST
@given(text=hostile_text(8_000))
def test_safe_json_raises_only_its_own_error(text):
    try:
        safe_json.loads(text)
    except safe_json.JSONLimitError as exc:
        assert len(str(exc)) <= 200
    found = []
    try:
        found = safe_json.objects(text)
    except safe_json.JSONLimitError:
        pass
    for obj in found:
        assert safe_json.check_value(obj) is None


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 5_000, "nested deeper"),
    ("[" * 33 + "]" * 33, "nested deeper"),
    ("9" * 5_000, "out of range"),
    ("1e999", "out of range"),
    ("NaN", "not a finite number"),
    ('{"a": ', "Expecting value"),
])
def test_safe_json_limits(text, reason):
    with pytest.raises(safe_json.JSONLimitError, match=reason):
        safe_json.loads(text)


def test_safe_json_reads_what_json_reads_within_the_limits():
    doc = {"a": [1, 2.5, -3e10, "x\u00e9", None, True, {"b": [[[]]]}], "c": "\ud800"}
    text = json.dumps(doc)
    assert safe_json.loads(text) == doc
    assert safe_json.loads("[" * 32 + "]" * 32) is not None
    assert safe_json.objects(f"I think {text} and {{ prose }} then ```json\n{{\"answer\": 5}}\n```") == [doc, {"answer": 5}]
    assert safe_json.objects('{ I think {"answer": 5} }') == [{"answer": 5}]
    assert safe_json.objects('{"x": oops, {"y": 1}}') == [{"y": 1}]
    assert safe_json.loads("NaN", allow_non_finite=True) != safe_json.loads("NaN", allow_non_finite=True)


def test_safe_json_check_value_measures_any_depth_without_recursion():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert "nested deeper" in safe_json.check_value(deep)
    assert "out of range" in safe_json.check_value({"a": 10 ** 5000})
    assert safe_json.check_value({"a": float("nan")}) is not None
    assert safe_json.check_value({"a": float("nan")}, allow_non_finite=True) is None
    assert "not a string" in safe_json.check_value({1: 2})


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**64), 10**64) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="[]{},\"\\ab1", max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="[]{\"k", max_size=3), inner,
                                                                  max_size=3),
    max_leaves=60)


def _loads_walking(text, allow_non_finite=False):
    """safe_json.loads without its shortcuts: the decoder with its per-number hooks, then the full walk whenever the
    text has more brackets than MAX_DEPTH. ``("read", repr(value))`` or ``("refused", reason)``."""
    try:
        value = (safe_json._LENIENT if allow_non_finite else safe_json._DECODER).decode(text)
    except safe_json.JSONLimitError as exc:
        return ("refused", str(exc))
    except json.JSONDecodeError as exc:
        return ("refused", f"{exc.msg} at character {exc.pos}")
    except RecursionError:
        return ("refused", f"nested deeper than {safe_json.MAX_DEPTH} levels")
    if text.count("[") + text.count("{") > safe_json.MAX_DEPTH:
        problem = safe_json.check_value(value, allow_non_finite=allow_non_finite)
        if problem is not None:
            return ("refused", problem)
    return ("read", repr(value))


def _loads_now(text, allow_non_finite=False):
    try:
        return ("read", repr(safe_json.loads(text, allow_non_finite=allow_non_finite)))
    except safe_json.JSONLimitError as exc:
        return ("refused", str(exc))


@FAST
@given(value=_JSON_VALUES, nest=st.integers(0, 40))
def test_safe_json_loads_refuses_exactly_what_check_value_refuses(value, nest):
    """loads' text-level shortcut (:func:`safe_json._text_within_limits`) only ever skips a walk that finds nothing:
    loads reads or refuses every document as the full walk does, with the same reason."""
    for doc in (value, [value], {"k": value}):
        for _ in range(nest):
            doc = [doc]
        text = json.dumps(doc)
        expected = _loads_walking(text)
        if expected[0] == "read" and safe_json._text_within_limits(text.encode(), text, safe_json.MAX_DEPTH):
            assert safe_json.check_value(json.loads(text)) is None
        assert _loads_now(text) == expected


_NUMBERISH = st.text(alphabet="0123456789.eE+-[]{},: \"kNaIfinty", max_size=120)
_NUMBERS = st.one_of(
    st.floats(), st.integers(-(10**70), 10**70),
    st.builds(lambda d, e: f"{d}e{e}", st.integers(-10**20, 10**20), st.integers(-400, 400)),
    st.builds(lambda n: "9" * n, st.integers(60, 70)), st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999"]))


@FAST
@given(noise=_NUMBERISH, numbers=st.lists(_NUMBERS, max_size=6), allow=st.booleans())
def test_safe_json_plain_decoder_reads_numbers_as_the_hooks_do(noise, numbers, allow):
    """Numbers parsed without the per-number hooks (when the bytes show no hook could refuse one) read to the same
    values, and every text a hook would refuse still gets the hook's reason."""
    listed = "[" + ", ".join(n if isinstance(n, str) else json.dumps(n) for n in numbers) + "]"
    for text in (noise, listed, '{"a": ' + listed + ', "b": "' + noise.replace('"', "") + '"}'):
        assert _loads_now(text, allow) == _loads_walking(text, allow)


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 32 + '"]]]]"' + "]" * 32, None),  # brackets inside a string are not nesting
    ('["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", ' + "[" * 32 + "]" * 32 + "]", "nested deeper"),
    ("[" + "9" * 64 + ", " + "[]," * 40 + "0]", "out of range"),  # 64 digits: within the literal limit, too big
    ("[" + "1" * 64 + ", " + "[]," * 40 + "0]", None),  # 64 digits under 2**212 pass
    ("[" + "0," * 100_000 + "[]," * 40 + "0]", "more than 100000 values"),
    ("[" + "0," * 99_900 + "[]," * 40 + "0]", None),
])
def test_safe_json_limits_at_their_edges(text, reason):
    if reason is None:
        assert safe_json.loads(text) == json.loads(text)
    else:
        with pytest.raises(safe_json.JSONLimitError, match=reason):
            safe_json.loads(text)


@pytest.mark.parametrize("limit", [100, 1_000, 8_000])
def test_dumps_capped_never_exceeds_its_limit(limit):
    for value in ({"x": "a" * 50_000}, {"x": "\u00e9\"\\" * 20_000}, list(range(100_000)), "short"):
        text = safe_json.dumps_capped(value, limit)
        assert len(text) <= limit
        json.loads(text)


# ----------------------------------------------------------------------------- the larger corpus
@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@SLOW
@given(text=hostile_text(16_384))
def test_hostile_replies_never_raise_large_corpus(text_envs, family, text):
    protocol = _wrapper(text_envs[family]).protocol
    assert _parse_all_ways(protocol, text) < PARSE_CEILING


@pytest.mark.slow
@pytest.mark.parametrize(("family", "tool", "props"), TOOLS, ids=[f"{f}-{t}" for f, t, _ in TOOLS])
@settings(SLOW, max_examples=300)
@given(data=st.data())
def test_hostile_tool_arguments_large_corpus(text_envs, family, tool, props, data):
    result = _wrapper(text_envs[family]).call_tool(tool, data.draw(hostile_arguments(props)))
    assert len(result.text()) <= DEFAULT_MAX_CHARS


# ----------------------------------------------------------------------------- the base (RL) envs
BAD_RL_ACTIONS = {"huge-int": 10 ** 5000, "big-int": 10 ** 400, "nan": float("nan"), "surrogate": "\ud800",
                  "none": None, "long-list": [1] * 10_000, "dict": {"legs": "x"}, "nested": [[1], [1, 2]],
                  "int64-overflow": 2 ** 63, "bool": True}


@pytest.mark.parametrize("family", FAMILIES)
def test_base_envs_refuse_actions_outside_their_space_with_a_short_value_error(family):
    """The RL envs follow Gymnasium: an action outside the space is the caller's bug, a ValueError; its message
    names the action in a bounded form (a 5,000-digit integer cannot even be printed)."""
    spec = next(s for s in tasks() if s.family == family)
    env = gym.make(spec.env_id)
    for name, action in BAD_RL_ACTIONS.items():
        env.reset(seed=0)
        try:
            env.step(action)
        except ValueError as exc:
            assert len(str(exc)) <= 400, (name, str(exc)[:100])
    env.close()
