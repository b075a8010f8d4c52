"""Tool errors name the argument at fault without repeating what the agent sent, and show no paths."""

from __future__ import annotations

import json

from finenvs.evaluation.session import EpisodeSession
from finenvs.tasks import Selection, tasks
from finenvs.tools.registry import ECHO_MIN_CHARS, unechoed

MARK = "QZXJmarker"


def _string_fields(schema: dict) -> list[str]:
    out = []
    for key, prop in (schema.get("properties") or {}).items():
        kinds = prop.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds or "anyOf" in prop:
            out.append(key)
    return out


def test_no_tool_error_repeats_a_string_the_agent_sent():
    """Every string argument of every data tool of every family, set to a long marked value and to a short one: the
    errors never contain the marker (the schema's own check, the tool's own message, an internal error alike).
    ``commit_action`` is the protocol's: its ``invalid`` text quotes at most 40 characters of the answer it read."""
    seen = {}
    for task in tasks():
        seen[task.env_id] = _errors_checked(task)
    assert sum(seen.values()) > 20 and sum(n > 0 for n in seen.values()) >= 5, seen  # the check met real errors


def _errors_checked(task) -> int:
    spec = task.plan(Selection(split="eval", limit=1))[0]
    session = EpisodeSession(spec)
    seen = 0
    try:
        for tool in session.tool_specs():
            function = tool["function"]
            if function["name"] == "commit_action":  # the protocol's parse: it quotes a bounded cut of the answer
                continue
            for field in _string_fields(function["parameters"]):
                for value in (MARK + "-" + "k" * 60, MARK, f"/etc/{MARK}/passwd", MARK * 40):
                    result = session.call_tool(function["name"], {field: value})
                    text = json.dumps(result.data)
                    if not result.ok:
                        seen += 1
                        assert MARK not in text and "/etc/" not in text, (function["name"], field, text)
                        assert len(text) < 3_000
    finally:
        session.close()
    return seen


def test_unechoed_replaces_whole_and_cut_copies_and_keeps_short_values():
    args = {"bundle": "abcdefghijklmnopqrstuvwxyz", "action": "BUY", "symbols": ["tsla_long_name", 3]}
    message = ("unknown bundle 'abcdefghijklmno...'; got abcdefghijklmnopqrstuvwxyz twice: abcdefghijklmnopqrstuvwxyz; "
               "BUY is fine; tsla_long_name is not a symbol")
    out = unechoed(message, args)
    assert "abcdefgh" not in out and "tsla_long_name" not in out and "'" not in out
    assert out.startswith("unknown bundle <bundle>; got <bundle> twice")
    assert out.count("<bundle>") == 3 and "<symbols>" in out and "BUY is fine" in out
    # an unquoted run that only starts like the value is the message's own text
    assert unechoed("end is not a date; use YYYY-MM-DD", {"end": "not a date at all"}) == (
        "end is not a date; use YYYY-MM-DD")
    assert unechoed("end='not a date at all' is not a date", {"end": "not a date at all"}) == "end is not a date"
    # a visible name that shares the value's first characters is not a copy of it
    assert unechoed("visible: ['aapl_10k_2023-09-30']", {"bundle": "aapl_10k_2030-01-01"}) == (
        "visible: ['aapl_10k_2023-09-30']")
    assert len("BUY") < ECHO_MIN_CHARS
    assert unechoed("nothing here", None) == "nothing here"
    # linear: a long message made of the argument's first part is handled in one pass
    big = {"q": "aaaaaaaab" * 10}
    assert unechoed("'aaaaaaaa" * 100 + "'", big).count("<q>") == 100
