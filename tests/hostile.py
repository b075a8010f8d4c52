"""Hostile agent input: hypothesis strategies and a fixed adversarial corpus (tests/test_fuzz.py, benchmarks).

Every text env, parser, scorer and tool must take any of these without raising, in linear time.
"""

from __future__ import annotations

from hypothesis import strategies as st

#: The longest reply any shipped text env accepts (FinReport-text-v0's reports).
LONGEST = 60_000

_FRAGMENTS = [
    "Action: BUY", "Action: SELL", "Action: HOLD", "Final answer:", "Answer: 5", "Decision: ", "Hedge: 0.5",
    "Rating: BUY", "Rating: SELL", "## 2. Rating", "**Action**:", "```json\n", "```", "{", "}", "[", "]", '"',
    "\\", '{"action": "BUY"}', '{"action": "SELL"', '{"action": 5}', '{"answer": ', '{"answer": 5}', '{"legs": [',
    '{"hedge": ', '{"reported_value": ', '"calculated_value": ', "NaN", "Infinity", "-Infinity", "1e999", "-1e400",
    "9" * 400, "0." + "0" * 300 + "1", "\n", "\r\n", "\t", " ", "-", ">", "*", "_", "#", "`", "\x00", "\x0b",
    "\ud800", "\udfff", "\u2028", "\u202e", "\ufeff", "é", "😀", "BUY", "buy", "STRONG_BUY", "(", ")", "$1.2B",
    "12.5%", "1,234,567", ":", "=", "'", "null", "true", "[[", "]]", "{}", "[]",
]


def _nested(n: int, open_: str, close: str, inner: str = "1") -> str:
    return open_ * n + inner + close * n


def floods(limit: int = 16_384) -> list[tuple[str, str]]:
    """Named replies built to make a parser slow or deep: floods of markers, braces, quotes, fences, lines."""
    n = limit
    out = {
        "lists": "[" * n,
        "objects": '{"a":' * (n // 5),
        "closed-lists": _nested(n // 2 - 1, "[", "]"),
        "closed-objects": _nested(n // 6, '{"a":', "}"),
        "action-deep": '{"action": ' + _nested(n // 2 - 10, "[", "]") + "}",
        "answer-deep": '{"answer": ' + _nested(n // 2 - 10, "[", "]") + "}",
        "legs-deep": '{"legs": ' + _nested(n // 2 - 10, "[", "]") + "}",
        "big-int": "9" * n,
        "json-big-int": '{"answer": ' + "9" * (n - 20) + "}",
        "json-big-action": '{"action": ' + "9" * (n - 20) + "}",
        "json-big-hedge": '{"hedge": ' + "9" * (n - 20) + "}",
        "big-float": "1" * (n // 2) + "." + "1" * (n // 2 - 1),
        "exp": '{"answer": 1e' + "9" * 50 + "}",
        "newline-dash": "\n-" * (n // 2),
        "newline-space": "\n " * (n // 2),
        "spaces-x": " " * (n - 1) + "x",
        "marker-spaces": "Action" + " " * (n - 8) + "x",
        "answer-spaces": "Answer: " + " " * (n - 9) + "x",
        # a second marker, then a run of spaces with no number after it: each start position of the old quantity
        # pattern split the run among four optional pieces (it hung the FinQA scorer)
        "answer-twice-spaces": "Answer: xAnswer:" + " " * (n - 17) + "x",
        "paren-spaces": "Answer: " + "( " * ((n - 8) // 2),
        "sign-spaces": "Answer: " + "- " * ((n - 9) // 2) + "5",
        "name-spaces": "Answer: a" + " " * (n - 10) + "b",  # a multi-part answer's "name value" reading
        "rating-spaces": "Rating" + " " * (n - 8) + "x",
        "heading-spaces": "# a" + " " * (n - 4) + "b",
        "bold-spaces": "**a**" + " " * (n - 6) + "x",
        "markers": "Action: " * (n // 8),
        "marker-lines": "\nAction: BUY" * (n // 12),
        "final-flood": "final " * (n // 6),
        "fences": "```" * (n // 3),
        "fence-opens": "```json\n{" * (n // 9),
        "fence-pairs": "```json\n{}\n```" * (n // 14),
        "embedded-opens": '{"action":"' * (n // 11),
        "embedded-pairs": '{"action": "BUY"} ' * (n // 18),
        "braces": "{" * n,
        "brace-quotes": '{"' * (n // 2),
        "empty-objects": "{}" * (n // 2),
        "quotes": '"' * n,
        "backslashes": "\\" * n,
        "unicode-escapes": '{"a": "' + "\\u" * (n // 2 - 4),
        "array-commas": "[1," * (n // 3),
        "numbers": "1 " * (n // 2),
        "parens": "( " * (n // 2),
        "dollars": "$" * n,
        "percent": "%" * n,
        "pipes": "|" * n,
        "hashes": "#" * n,
        "stars": "*" * n,
        "words": "BUY SELL " * (n // 9),
        "answer-lines": "\nAnswer: 1" * (n // 10),
        "hedge-lines": "\nHedge: 0.1" * (n // 11),
        "rating-lines": "\nRating: BUY" * (n // 12),
        "at-limit": "a" * n,
        "over-limit": "a" * (n + 1),
        "nul": "Action: BUY\x00",
        "surrogate": "Action: BUY \ud800",
        "lone-surrogates": "\udc80" * 100,
        "control": "".join(chr(i) for i in range(32)) * 10,
        "bidi": "\u202eAction: BUY",
    }
    return [(name, text if name == "over-limit" else text[:n]) for name, text in out.items()]


def hostile_text(max_size: int = 4_000) -> st.SearchStrategy[str]:
    """Text an agent might send to break a parser: fragment soups, deep nesting, huge numbers, any code point."""
    soup = st.lists(st.sampled_from(_FRAGMENTS), max_size=60).map("".join)
    anything = st.text(st.characters(codec=None, exclude_categories=()), max_size=max_size)
    deep = st.tuples(st.integers(1, 3_000), st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"answer":', "}"),
                                                              ('{"action":', "}"), ("((", "))")]),
                     st.booleans()).map(lambda t: t[1][0] * t[0] + ("1" + t[1][1] * t[0] if t[2] else ""))
    huge = st.tuples(st.sampled_from(['{"answer": ', '{"action": ', '{"hedge": ', '{"reported_value": ', "Answer: ",
                                      "Hedge: ", "", '{"legs": [{"strike": ']),
                     st.integers(300, 6_000), st.sampled_from(["", "}", "e999}", ".5}", "]}"])
                     ).map(lambda t: t[0] + "9" * t[1] + t[2])
    repeated = st.tuples(st.sampled_from(_FRAGMENTS), st.integers(1, 2_000)).map(lambda t: t[0] * t[1])
    return st.one_of(soup, anything, deep, huge, repeated)


_SPECIAL = {"huge": lambda: 10 ** 5000, "negative-huge": lambda: -(10 ** 400), "surrogate": lambda: "\ud800",
            "nul": lambda: "\x00", "megabyte": lambda: "x" * 1_000_000, "nan": lambda: float("nan"),
            "inf": lambda: float("inf")}


def _json_leaf() -> st.SearchStrategy:
    # special values are built after drawing: hypothesis's repr of a 5,000-digit integer would raise
    special = st.sampled_from(sorted(_SPECIAL)).map(lambda name: _SPECIAL[name]())
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(max_size=50), special)


def hostile_json() -> st.SearchStrategy:
    """JSON-like values an MCP client or a tool call may send: any shape, deep lists, huge integers and strings."""
    nested = st.recursive(_json_leaf(), lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)), max_leaves=20)
    deep = st.integers(1, 6_000).map(lambda n: _deep_list(n))
    return st.one_of(nested, deep)


def _deep_list(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


def hostile_arguments(properties: list[str]) -> st.SearchStrategy:
    """Tool arguments: objects keyed by the tool's own fields (and strangers) with hostile values; or any value,
    or JSON text."""
    keyed = st.dictionaries(st.sampled_from([*properties, "x", "", "\ud800"]), hostile_json(), max_size=4)
    return st.one_of(keyed, hostile_json(), hostile_text(2_000))
