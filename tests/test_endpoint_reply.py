"""OpenAIChatAgent reads a reply's JSON itself: the same replies, and the same refusals, as the SDK's reply model."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

pytest.importorskip("openai")

from openai._models import construct_type  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402

from finenvs.evaluation.endpoints import EndpointError, _reply_from_data, _reply_from_response  # noqa: E402


def _outcome(read: Any, data: Any) -> tuple[Any, ...]:
    try:
        reply = read(data)
    except EndpointError as exc:
        return ("error", exc.kind, str(exc).split(":")[0])
    except Exception as exc:  # noqa: BLE001 - what escapes the reader escapes both the same way
        return ("raised", type(exc).__name__)
    return ("reply", reply.content, reply.tool_calls, reply.usage, reply.finish_reason, reply.model)


def _sdk(data: Any) -> Any:
    return _reply_from_response(construct_type(type_=ChatCompletion, value=data))


def _choice(message: Any = None, **extra: Any) -> dict[str, Any]:
    return {"message": message, "finish_reason": "stop", **extra}


SHAPES: list[Any] = [
    {"choices": [_choice({"role": "assistant", "content": "Action: HOLD"})], "model": "m",
     "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}},
    {"choices": [{"message": {"content": "hi"}}]}, {"choices": [{"finish_reason": "stop"}]},
    {"choices": []}, {"choices": None}, {}, [], "text", 5, None, True, {"choices": "abc"}, {"choices": {"0": 1}},
    {"choices": [5]}, {"choices": True}, {"choices": [_choice("x")]}, {"choices": [_choice({"content": 5})]},
    {"choices": [_choice({"content": "a"})], "usage": {"prompt_tokens": "7", "completion_tokens": 2.9}},
    {"choices": [_choice({"content": "a"})], "usage": {"prompt_tokens": "x"}},
    {"choices": [_choice({"content": "a"})], "usage": 5}, {"choices": [_choice({"content": "a"})], "usage": []},
    {"choices": [_choice({"content": "a"})], "usage": {}},
    *[{"choices": [_choice({"content": "a"})], "usage": {"prompt_tokens": 1, "prompt_tokens_details": d}}
      for d in (5, None, {}, {"cached_tokens": -1}, {"cached_tokens": True}, {"cached_tokens": 2.0},
                {"cached_tokens": "3"}, {"cached_tokens": 4})],
    *[{"choices": [_choice({"content": None, "tool_calls": calls})], "model": 7} for calls in (
        "zz", [5], {"a": 1}, [], None,
        [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        [{"type": "custom", "custom": {"name": "f", "input": "{}"}}],
        [{"type": "custom", "function": {"name": "f", "arguments": "{}"}}],
        [{"type": "foo", "function": {"name": "f", "arguments": "{}"}}], [{"type": None, "function": {"name": "f"}}],
        [{"custom": {"name": "f"}}], [{"function": "str"}], [{"function": None}], [{"type": "function"}],
        [{"function": {"name": 5, "arguments": [1, 2]}}], [{"function": {"arguments": {"a": 1}}}],
        [{"id": 7, "function": {"name": "f", "arguments": "a"}}, {"id": "", "function": {"name": "g", "arguments": ""}}],
    )],
]


@pytest.mark.parametrize("data", SHAPES, ids=range(len(SHAPES)))
def test_a_reply_reads_as_the_sdks_model_of_it_reads(data):
    assert _outcome(_reply_from_data, data) == _outcome(_sdk, data)


def test_random_reply_shapes_read_as_the_sdks_model_of_them_reads():
    rng = random.Random(36)
    keys = ["choices", "message", "content", "tool_calls", "function", "name", "arguments", "id", "type", "usage",
            "prompt_tokens", "completion_tokens", "prompt_tokens_details", "cached_tokens", "finish_reason", "model"]
    leaves = [None, True, 0, 3, -1, 2.5, "", "x", "custom", "function", "{}", [], {}]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 4 or roll < 0.35:
            return rng.choice(leaves)
        if roll < 0.55:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

    differ = []
    for _ in range(3000):
        data = {"choices": [{"message": value(1), "finish_reason": value(3)} if rng.random() < 0.8 else value(2)],
                "usage": value(2), "model": rng.choice(leaves)} if rng.random() < 0.7 else value(0)
        if _outcome(_reply_from_data, data) != _outcome(_sdk, data):
            differ.append(json.dumps(data)[:200])
    assert differ == []
