"""The text protocol and the text interface: parsing, bad input, spaces, registration, equivalence with the base env."""

from __future__ import annotations

import json
import pickle
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import finenvs
from finenvs.tasks.trading.core import BUY, HOLD, SELL
from finenvs.tasks.trading.protocol import TRADING_PROTOCOL as P
from finenvs.text.protocol import MAX_ACTION_CHARS, MAX_PROMPT_CHARS, trimmed
from finenvs.wrappers import PrintableText, TextInterface

ACTIONS = {SELL, HOLD, BUY}


# ---------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    "text, word, via",
    [
        ("BUY", "BUY", "word"),
        ("  **sell**. ", "SELL", "word"),
        ("hold", "HOLD", "word"),
        ('{"action": "BUY", "reasoning": "trend"}', "BUY", "json"),
        ('```json\n{"Action": "sell"}\n```', "SELL", "json"),
        ('I looked at the data.\n{"action": "HOLD"}\nDone.', "HOLD", "json"),
        ("Momentum is positive.\nAction: BUY", "BUY", "marker"),
        ("Reasoning...\n**Final answer:** SELL", "SELL", "marker"),
        ("Thought: check prices\nAction: get_prices\nThen...\nDecision = hold", "HOLD", "marker"),
        ("Action: long", "BUY", "marker"),  # documented synonyms
        ("Action: FLAT", "HOLD", "marker"),
    ],
)
def test_valid_replies(text, word, via):
    parsed = P.parse_text(text)
    assert (parsed.name, parsed.invalid, parsed.via) == (word, None, via)
    assert parsed.action == P.actions[word]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty reply"),
        ("   \n\t", "empty reply"),
        ("I would not BUY here", "no action found"),  # a mention is not a decision
        ("buy or sell, hard to say", "no action found"),
        ("Action: BUY\nAction: SELL", "ambiguous"),
        ('{"action": "BUY"} and {"action": "SELL"}', "ambiguous"),
        ('{"decision": "BUY"}', "without an 'action' field"),
        ('{"action": "MOON"}', "is not one of"),
        ('{"action": 2}', "is not one of"),
        ("Action: " + "B" * 20_000, "the limit is 16384"),
        ("BUY\x00", "non-printable"),
        ("BUY\x1b[0m", "non-printable"),
    ],
)
def test_invalid_replies_take_the_documented_default_with_a_reason(text, reason):
    parsed = P.parse_text(text)
    assert parsed.name == "HOLD" and parsed.action == HOLD and parsed.via == "default"
    assert parsed.invalid is not None and reason in parsed.invalid


@pytest.mark.parametrize("value", [None, 3, 2.5, b"BUY", ["BUY"], {"action": "BUY"}])
def test_non_text_replies_are_invalid(value):
    parsed = P.parse_text(value)
    assert parsed.name == "HOLD" and "not text" in parsed.invalid


@pytest.mark.parametrize(
    "arguments, word, ok",
    [
        ({"action": "BUY"}, "BUY", True),
        ('{"action": "sell", "reasoning": "down"}', "SELL", True),
        ({"action": "short"}, "SELL", True),
        ({"action": "MOON"}, "HOLD", False),
        ({"action": 0}, "HOLD", False),
        ({}, "HOLD", False),
        ("{not json", "HOLD", False),
        ("[1, 2]", "HOLD", False),
        (None, "HOLD", False),
    ],
)
def test_commit_arguments(arguments, word, ok):
    parsed = P.parse_commit(arguments)
    assert parsed.name == word and parsed.valid is ok
    assert parsed.via == ("tool" if ok else "default")


def test_commit_schema_lists_exactly_the_action_words():
    schema = P.commit_schema()
    assert schema["properties"]["action"]["enum"] == ["SELL", "HOLD", "BUY"]
    assert schema["required"] == ["action"] and schema["additionalProperties"] is False


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_fuzzed_text_never_raises_and_always_maps_to_an_action(text):
    parsed = P.parse_text(text)
    assert parsed.action in ACTIONS
    assert (parsed.invalid is None) == (parsed.via != "default")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_json_values, st.dictionaries(st.sampled_from(["action", "reasoning", "x"]), _json_values)))
def test_fuzzed_commit_arguments_never_raise(arguments):
    parsed = P.parse_commit(arguments)
    assert parsed.action in ACTIONS
    if isinstance(arguments, dict) or isinstance(arguments, str):
        parsed_json = P.parse_commit(json.dumps(arguments, default=str)) if isinstance(arguments, dict) else parsed
        assert parsed_json.action in ACTIONS


# ---------------------------------------------------------------------------- the text env
@pytest.fixture(scope="module")
def text_env():
    env = gym.make("FinTrading-text-v0", symbol="MSFT", split="eval")
    yield env
    env.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=200), st.text(alphabet="BUYSELHOD :{}\"action\n", max_size=40),
                 st.binary(max_size=10), st.integers(), st.none(),
                 st.dictionaries(st.sampled_from(["name", "arguments", "function"]), _json_values, max_size=3)))
def test_fuzzed_actions_never_raise_from_the_text_interface(text_env, action):
    text_env.reset(seed=0)
    prompt, reward, terminated, truncated, info = text_env.step(action)
    assert np.isfinite(reward) and isinstance(prompt, str)
    assert info["parsed_action"] in ("SELL", "HOLD", "BUY")
    assert info["invalid_action"] is None or isinstance(info["invalid_action"], str)
    assert info["format_errors"] == (0 if info["invalid_action"] is None else 1)


def test_text_variant_passes_check_env(text_env):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the text env is a wrapper by design; gymnasium warns about any wrapper
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(text_env, skip_render_check=True)


def test_text_variant_is_registered_and_serialisable():
    assert finenvs.tasks.text_variant("FinTrading-v0") == "FinTrading-text-v0"
    spec = gym.spec("FinTrading-text-v0")
    assert gym.envs.registration.EnvSpec.from_json(spec.to_json()) == spec
    env = gym.make("FinTrading-text-v0", symbol="AAPL", split="live", fee_bps=0.0, history=2)
    assert isinstance(env, TextInterface) and env.history == 2
    assert env.unwrapped.params.fee == 0.0 and env.unwrapped.split == "live"


def test_spaces_are_printable_text_with_documented_limits(text_env):
    assert text_env.observation_space == PrintableText(MAX_PROMPT_CHARS)
    assert text_env.action_space == PrintableText(MAX_ACTION_CHARS)
    space = text_env.action_space
    assert space.contains("Héllo — 中文 😀\nAction: BUY\t")
    assert not space.contains("bell\x07") and not space.contains(b"BUY") and not space.contains("x" * 16_385)
    space.seed(0)
    assert all(space.contains(space.sample()) for _ in range(20))


def test_text_actions_match_the_base_env_step_for_step():
    base = gym.make("FinTrading-v0", symbol="NVDA", split="eval")
    text = gym.make("FinTrading-text-v0", symbol="NVDA", split="eval")
    rng = np.random.default_rng(3)
    base.reset(seed=1)
    prompt, info = text.reset(seed=1)
    words = {SELL: "SELL", HOLD: "HOLD", BUY: "BUY"}
    forms = [lambda w: w, lambda w: f"Some reasoning.\nAction: {w}", lambda w: json.dumps({"action": w.lower()}),
             lambda w: {"name": "commit_action", "arguments": json.dumps({"action": w})}]
    done = False
    while not done:
        a = int(rng.integers(3))
        _, r_base, term, trunc, i_base = base.step(a)
        prompt, r_text, _, _, i_text = text.step(forms[int(rng.integers(len(forms)))](words[a]))
        assert r_text == r_base and i_text["equity"] == i_base["equity"]
        assert i_text["invalid_action"] is None and i_text["parsed_action"] == words[a]
        done = term or trunc
    assert i_text["format_errors"] == 0


def test_invalid_text_holds_counts_and_shows_in_the_next_prompt(text_env):
    text_env.reset(seed=0)
    text_env.step("BUY")
    prompt, _, _, _, info = text_env.step("maybe later")
    assert info["parsed_action"] == "HOLD" and info["position"] == 0  # HOLD is flat
    assert "no action found" in info["invalid_action"] and info["format_errors"] == 1
    assert "format error" in prompt and "BUY" in prompt  # the agent sees its history
    _, _, _, _, info = text_env.step({"name": "get_prices", "arguments": {}})
    assert "not a commit" in info["invalid_action"] and info["format_errors"] == 2


def test_prompt_has_instructions_state_tools_and_answer_format(text_env):
    prompt, info = text_env.reset(seed=0)
    for needle in ("# FinTrading-v0", "Symbol: MSFT", f"Date: {info['date']}", "Position: FLAT",
                   "Action: <SELL|HOLD|BUY>", "else HOLD (flat: no market risk)"):
        assert needle in prompt
    assert "## Tools" not in prompt and "get_prices" not in prompt  # the tool schemas go beside the prompt
    assert len(prompt) <= MAX_PROMPT_CHARS


def test_prompts_of_an_episode_share_their_beginning_and_change_at_the_end(text_env):
    """What stays the same over an episode (instructions, tools, answer format) comes first, so providers' prompt
    caches reuse it; the recent decisions and the state at the clock come last."""
    first, _ = text_env.reset(seed=0)
    second, r1, *_, i1 = text_env.step("Action: BUY")
    third, r2, *_, i2 = text_env.step("Action: HOLD")
    static = first.split("\n## Now\n", 1)[0]
    assert second.startswith(static) and third.startswith(second.split("\n## Recent decisions", 1)[0])
    assert second.index("## Answer") < second.index("## Recent decisions") < second.index("## Now")
    heading = "## Recent decisions (oldest first: date, action, reward, equity)\n"
    rows = third.split(heading, 1)[1].split("\n\n", 1)[0].split("\n")  # one compact row per decision
    number = r"[+-]?\d+(\.\d*[1-9])?"  # fixed-point digits without trailing zeros
    assert len(rows) == 2 and all(re.fullmatch(rf"\d{{4}}-\d\d-\d\d (BUY|HOLD) {number} {number}", r) for r in rows)
    for row, reward, info in zip(rows, (r1, r2), (i1, i2), strict=True):  # the same digits as .5f / .4f
        assert row.split()[2:] == [trimmed(f"{reward:+.5f}"), trimmed(f"{info['equity']:.4f}")]
        assert float(row.split()[2]) == round(reward, 5) and float(row.split()[3]) == round(info["equity"], 4)
    assert second.split("\n## Now\n", 1)[1] != first.split("\n## Now\n", 1)[1]  # the date moved on


def test_tool_calls_count_per_decision_and_read_as_of_the_current_close(text_env):
    _, info = text_env.reset(seed=0)
    first = text_env.call_tool("get_prices", {"lookback": 1}).data["rows"][-1][0]
    assert first == info["date"]
    text_env.call_tool("get_rate")
    _, _, _, _, info = text_env.step("HOLD")
    assert info["tool_calls"] == 2
    assert text_env.call_tool("get_prices", {"lookback": 1}).data["rows"][-1][0] == info["date"] != first


def test_text_interface_rejects_an_env_without_a_protocol():
    with pytest.raises(TypeError, match="no text protocol"):
        TextInterface(gym.make("CartPole-v1"))


def test_text_env_pickles_after_reset(text_env):
    text_env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(text_env))
    a = text_env.step("BUY")
    b = clone.step("BUY")
    assert a[0] == b[0] and a[1] == b[1]


def _text_rollout(env, seed, replies):
    prompt, info = env.reset(seed=seed)
    out = [(prompt, None, info["date"])]
    for reply in replies:
        prompt, reward, terminated, truncated, info = env.step(reply)
        out.append((prompt, reward, info["date"], info["equity"], info["invalid_action"]))
        if terminated or truncated:
            break
    return out


REPLIES = ["Action: BUY", "HOLD", '{"action": "SELL"}', "unclear", "Action: BUY", "BUY", "SELL", "HOLD"] * 8


def test_text_env_is_deterministic_for_a_seed_and_varies_with_it():
    env = gym.make("FinTrading-text-v0", split="train", episode_length=40)
    first, again = _text_rollout(env, 5, REPLIES), _text_rollout(env, 5, REPLIES)
    assert first == again
    other = _text_rollout(env, 6, REPLIES)
    assert [p for p, *_ in other] != [p for p, *_ in first]  # another symbol or window


def test_text_env_prompts_and_rewards_are_invariant_to_the_future(aapl_frame):
    from helpers import perturb_after

    window = {"symbol": "AAPL", "split": None, "start": "2025-02-03", "end": "2025-04-30"}
    cut = "2025-03-14"
    rng = np.random.default_rng(0)
    real = gym.make("FinTrading-text-v0", data=aapl_frame, **window)
    changed = gym.make("FinTrading-text-v0", data=perturb_after(aapl_frame, cut, rng), **window)
    a, b = _text_rollout(real, 0, REPLIES), _text_rollout(changed, 0, REPLIES)
    upto = [k for k, step in enumerate(a) if step[2] <= cut]
    assert len(upto) > 20
    assert [a[k] for k in upto] == [b[k] for k in upto]  # prompts, rewards, equity, invalid reasons
    assert a[upto[-1] + 2] != b[upto[-1] + 2]  # after the cut the data does differ


def test_a_text_interface_built_directly_offers_its_familys_tools():
    from finenvs.tasks import task_of

    env = TextInterface(gym.make("FinTrading-v0", symbol="TSLA", split="eval"))
    env.reset(seed=0)
    assert env.toolbox.names[:-1] == [t.name for t in task_of("FinTrading-v0").tools]


@pytest.mark.parametrize(("written", "short"), [("+0.00000", "+0"), ("-0.00000", "-0"), ("+0.01200", "+0.012"),
                                                ("1.0000", "1"), ("0.9988", "0.9988"), ("10.0500", "10.05"),
                                                ("100", "100"), ("-3.10", "-3.1")])
def test_trimmed_drops_only_trailing_zeros(written, short):
    assert trimmed(written) == short and float(trimmed(written)) == float(written)
