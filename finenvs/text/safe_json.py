"""JSON from agents, read within bounds: never an exception other than :class:`JSONLimitError`, always linear time.

Every reply parser, scorer and tool registry reads agent JSON through this module, so a reply of
``[[[[...`` (deeper than the interpreter's recursion limit), an integer of 5,000 digits, ``1e999``
or ``NaN`` is a documented refusal, not a ``RecursionError``, ``OverflowError`` or ``ValueError``
from deep inside a scorer.

Limits (for any JSON value an agent sends):

* nesting depth at most :data:`MAX_DEPTH` (arrays and objects);
* a number literal at most :data:`MAX_NUMBER_CHARS` characters (an integer of more digits is refused
  before Python converts it, which is quadratic in the digits);
* numbers finite: ``NaN``, ``Infinity`` and literals that overflow a float (``1e999``) are refused;
* at most :data:`MAX_NODES` values in total.

:func:`loads` parses one document; :func:`objects` finds the JSON objects inside free text (one
linear scan, then each candidate parsed once); :func:`check_value` applies the same limits to a value
that arrived already decoded (an MCP client's arguments); :func:`dumps_capped` writes a value as JSON
of at most a given length.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

# Hand-written on purpose: neither the standard json module nor the fast parsers (orjson, ujson) bound
# nesting depth, number length and node count to set limits before building the value, with one error type.
#: Deepest nesting of arrays/objects accepted.
MAX_DEPTH = 32
#: Longest number literal accepted (characters, sign and exponent included).
MAX_NUMBER_CHARS = 64
#: Most values (containers, keys excluded, and scalars) in one document.
MAX_NODES = 100_000
#: Most candidate objects :func:`objects` parses in one text (a reply is expected to hold one or a few).
MAX_CANDIDATES = 256


class JSONLimitError(ValueError):
    """JSON that is malformed or outside the limits; the message is the reason (short, never echoing input)."""


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(f"a number of {len(text)} characters is out of range (the limit is {MAX_NUMBER_CHARS})")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(f"a number of {len(text)} characters is out of range (the limit is {MAX_NUMBER_CHARS})")
    value = float(text)
    if not math.isfinite(value):
        raise JSONLimitError("a number out of range for a float (not finite)")
    return value


def _parse_float_lenient(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(f"a number of {len(text)} characters is out of range (the limit is {MAX_NUMBER_CHARS})")
    return float(text)


def _parse_constant(name: str) -> Any:
    raise JSONLimitError(f"{name} is not a finite number")


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
# NaN, Infinity and 1e999 read as floats: for callers whose own checks give the better reason (a scorer
# saying which field is not finite) or whose data uses them
_LENIENT = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float_lenient)
# The same without the per-number hooks (numbers parsed in C, to the same values), for a text whose bytes show that
# no hook could refuse a number in it (see loads): a Python call per number is most of the cost of a numeric table.
_PLAIN = json.JSONDecoder(parse_constant=_parse_constant)
_PLAIN_LENIENT = json.JSONDecoder()
#: Bytes of a number literal (digits, sign, point, exponent) -> "0", others -> space: a run longer than
#: MAX_NUMBER_CHARS of them is the only place a literal the hooks refuse for its length can be.
_NUMBER_BYTES = bytes(48 if byte in b"0123456789+-.eE" else 32 for byte in range(256))
_LONG_NUMBER = b"0" * (MAX_NUMBER_CHARS + 1)
#: Digits -> "0", e/E -> "e", others -> space: a float literal of at most MAX_NUMBER_CHARS characters overflows
#: only with an exponent, which follows a digit ("0e").
_EXPONENT_BYTES = bytes(48 if byte in b"0123456789" else 101 if byte in b"eE" else 32 for byte in range(256))


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
                allow_non_finite: bool = False) -> str | None:
    """Why ``value`` (decoded JSON: dicts, lists, str, numbers, bool, None) breaks a limit, or None.

    Iterative, so any depth is measured without recursion; stops at the first problem. With
    ``allow_non_finite``, NaN and infinities pass (the caller checks them).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            return f"more than {max_nodes} values"
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            # bit_length is O(1); 2**212 has 64 digits
            if item.bit_length() > 212:
                return f"an integer of more than {MAX_NUMBER_CHARS} digits is out of range"
            continue
        if isinstance(item, float):
            if not allow_non_finite and not math.isfinite(item):
                return f"{item} is not a finite number"
            continue
        if isinstance(item, (dict, list, tuple)):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels"
            children = item.values() if isinstance(item, dict) else item
            if isinstance(item, dict) and not all(isinstance(k, str) for k in item):
                return "an object key that is not a string"
            stack.extend((child, depth + 1) for child in children)
            continue
        return f"a {type(item).__name__} is not a JSON value"
    return None


_STRING_LITERAL = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_DIGITS_ONLY = bytes(48 if byte in b"0123456789" else 32 for byte in range(256))  # digit -> "0", else space
_LONG_INTEGER = b"0" * MAX_NUMBER_CHARS
_DEPTH_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as int8
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")


def _text_within_limits(raw: bytes, text: str, max_depth: int) -> bool:
    """Whether the value ``text`` (JSON the decoders above have just read) passes :func:`check_value` for certain,
    judged from the text in a few C-speed passes over its bytes (``raw``: its UTF-8, surrogates passed); False
    means "not proven" (then :func:`check_value` walks the value).

    * nodes: a document holds at most 1 + (commas) + (containers) values (a container of k values has k - 1
      commas at its level), so a text with at most :data:`MAX_NODES` - 1 commas and brackets has few enough;
    * numbers: only an integer literal of exactly :data:`MAX_NUMBER_CHARS` digits can be 2**212 or more (the
      decoders refuse longer literals, and non-finite floats unless they are allowed), and such a literal is a
      run of that many ASCII digits;
    * depth: the deepest bracket nesting outside string literals is the containers' depth plus one (UTF-8 never
      puts a quote or backslash byte inside a multi-byte character).
    """
    if text.count(",") + text.count("[") + text.count("{") + 1 > MAX_NODES:
        return False
    if _LONG_INTEGER in raw.translate(_DIGITS_ONLY):
        return False
    if b'"' in raw:
        raw = _STRING_LITERAL.sub(b"", raw)
    steps = np.frombuffer(raw.translate(_DEPTH_STEPS, _NOT_BRACKETS), dtype=np.int8)
    return steps.size == 0 or int(steps.cumsum(dtype=np.int64).max()) <= max_depth


def loads(text: str, *, max_depth: int = MAX_DEPTH, allow_non_finite: bool = False) -> Any:
    """One JSON document (surrounding whitespace allowed), within the limits.

    ``allow_non_finite`` reads ``NaN``, ``Infinity`` and overflowing literals as floats, as Python's
    :mod:`json` does, for callers that check finiteness themselves.

    Raises:
        JSONLimitError: Malformed JSON (the decoder's message and position), or a limit broken.
    """
    if not isinstance(text, str):
        raise JSONLimitError(f"a {type(text).__name__} is not JSON text")
    raw = text.encode("utf-8", "surrogatepass")
    hooked = _LONG_NUMBER in raw.translate(_NUMBER_BYTES) or (
        not allow_non_finite and b"0e" in raw.translate(_EXPONENT_BYTES))
    if hooked:
        decoder = _LENIENT if allow_non_finite else _DECODER
    else:
        decoder = _PLAIN_LENIENT if allow_non_finite else _PLAIN
    try:
        value = decoder.decode(text)
    except JSONLimitError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONLimitError(f"{exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise JSONLimitError(f"nested deeper than {max_depth} levels") from None
    except (ValueError, OverflowError) as exc:  # defensive: the hooks above catch what json lets through
        raise JSONLimitError(str(exc)[:80]) from None
    if text.count("[") + text.count("{") > max_depth and not _text_within_limits(raw, text, max_depth):
        problem = check_value(value, max_depth=max_depth, allow_non_finite=allow_non_finite)
        if problem is not None:
            raise JSONLimitError(problem)
    return value


def try_loads(text: str, *, max_depth: int = MAX_DEPTH, allow_non_finite: bool = False) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, why not)``: :func:`loads` without the exception."""
    try:
        return loads(text, max_depth=max_depth, allow_non_finite=allow_non_finite), None
    except JSONLimitError as exc:
        return None, str(exc)


_STRUCTURE = re.compile(r'[{}"]')
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*+"', re.DOTALL)
_OBJECT_START = re.compile(r'\{\s*+["}]')


def object_spans(text: str, *, max_depth: int = MAX_DEPTH) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of brace-balanced candidate objects in ``text``, outermost first.

    One linear scan. A candidate opens at a ``{`` followed by optional whitespace and ``"`` or ``}``
    (prose braces such as ``{ I think }`` do not open one); inside it, JSON strings are skipped and
    braces counted. A span nested deeper than ``max_depth`` is not a candidate (its shallower parts
    are). A string left open ends the scan.

    Raises:
        JSONLimitError: More than :data:`MAX_CANDIDATES` outermost candidates.
    """
    spans: list[tuple[int, int, int]] = []  # (start, end, depth)
    stack: list[int] = []
    deepest: list[int] = []  # the deepest level reached inside each open span
    pos, n, outermost = 0, len(text), 0
    while pos < n:
        if not stack:  # outside a candidate only a candidate's start matters
            m = _OBJECT_START.search(text, pos)
            if m is None:
                break
            stack.append(m.start())
            deepest.append(1)
            pos = m.start() + 1
            continue
        m = _STRUCTURE.search(text, pos)
        if m is None:
            break
        ch, at = m.group(), m.start()
        pos = at + 1
        if ch == '"':
            body = _STRING_BODY.match(text, pos)
            if body is None:
                break  # an open string: nothing after it can be read
            pos = body.end()
        elif ch == "{":
            stack.append(at)
            deepest.append(1)
        else:
            start = stack.pop()
            inner = deepest.pop()
            if inner <= max_depth:
                spans.append((start, at + 1, len(stack)))
            if not stack:
                outermost += 1
                if outermost > MAX_CANDIDATES:
                    raise JSONLimitError(f"more than {MAX_CANDIDATES} JSON objects or object-like spans in the text")
            if deepest:
                deepest[-1] = max(deepest[-1], inner + 1)
    spans.sort()
    return [(s, e) for s, e, _ in spans]


def objects(text: str, *, max_depth: int = MAX_DEPTH, allow_non_finite: bool = False) -> list[dict[str, Any]]:
    """The JSON objects written inside ``text``, in order.

    Each candidate span (:func:`object_spans`) is parsed once, outermost first; a span inside an
    object already read is not read again, and a candidate that does not parse leaves its inner
    candidates to be tried. Total work is linear in ``len(text)`` times ``max_depth``.

    Raises:
        JSONLimitError: More than :data:`MAX_CANDIDATES` candidates had to be parsed.
    """
    found: list[dict[str, Any]] = []
    covered, attempts = -1, 0
    for start, end in object_spans(text, max_depth=max_depth):
        if start < covered:
            continue
        attempts += 1
        if attempts > MAX_CANDIDATES:
            raise JSONLimitError(f"more than {MAX_CANDIDATES} JSON objects or object-like spans in the text")
        value, problem = try_loads(text[start:end], max_depth=max_depth, allow_non_finite=allow_non_finite)
        if problem is None and isinstance(value, dict):
            found.append(value)
            covered = end
    return found


def fenced_blocks(text: str) -> list[str]:
    """The contents of the text's complete Markdown code fences (```` ``` ````), language tag dropped, in order.

    Split once on the fence marker, so any number of fences costs one pass.
    """
    parts = text.split("```")
    blocks = []
    for body in parts[1:len(parts) - 1:2]:  # odd parts with a closing fence after them
        head, newline, rest = body.partition("\n")
        tag = head.strip()
        if newline and (not tag or tag.isalnum()):
            body = rest
        elif tag.lower().startswith("json"):
            body = body.lstrip()[4:]
        blocks.append(body.strip())
    return blocks


def dumps_capped(value: Any, limit: int, **kwargs: Any) -> str:
    """``value`` as JSON of at most ``limit`` characters.

    A value whose JSON is longer is written as a JSON object naming its size and holding a
    prefix of the text (``{"truncated": true, "chars": N, "head": "..."}``); a value that cannot be
    written (too deep, not JSON) as ``{"error": ...}``.
    """
    kwargs.setdefault("default", str)
    try:
        text = json.dumps(value, **kwargs)
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        text = json.dumps({"error": f"the result cannot be written as JSON ({type(exc).__name__})"})
    if len(text) <= limit:
        return text
    head_len = max(0, limit - 80)
    while True:
        out = json.dumps({"truncated": True, "chars": len(text), "head": text[:head_len]})
        if len(out) <= limit or head_len == 0:
            return out[:limit] if len(out) > limit else out
        head_len = max(0, head_len - (len(out) - limit) - 8)


__all__ = ["MAX_CANDIDATES", "MAX_DEPTH", "MAX_NODES", "MAX_NUMBER_CHARS", "JSONLimitError", "check_value", "dumps_capped", "fenced_blocks", "loads",
           "object_spans", "objects", "try_loads"]
