"""Token counts of an agent's requests: what each decision reads and writes, and how much of it a provider can cache.

An endpoint's own counts are used where it reports them. Where it reports none (the offline scripted agents, some
servers), a request is counted with tiktoken's ``o200k_base`` encoding (the GPT-4o / GPT-5 family's), labelled as
an estimate: a chat request is its tool schemas, then each message (role, text, tool calls) with
:data:`MESSAGE_OVERHEAD` tokens of framing, then :data:`REPLY_PRIMING` tokens. Another model's tokenizer gives
other numbers (within some tens of percent for English and JSON); the estimate is for comparing prompts and
projecting cost, not for billing.

The cached-prefix count of a request is the number of its leading tokens that repeat the previous request of the
same episode byte for byte (what a provider's prompt cache can reuse; tool schemas, then messages in order). An
endpoint that reports its cache hits (``prompt_tokens_details.cached_tokens``) is believed instead.

tiktoken downloads the encoding's BPE file on first use. Offline, give a copy with ``FINENVS_TOKENIZER_FILE`` (the
file ``o200k_base.tiktoken``; it is checked against tiktoken's published SHA-256 and placed in tiktoken's cache),
or put it in tiktoken's cache yourself. Without tiktoken or the file, estimates are ``None`` (``n/a``), never 0;
:func:`tokenizer_status` says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The encoding estimates use.
ENCODING = "o200k_base"
#: Where tiktoken fetches the encoding from, and the SHA-256 of its file (tiktoken's own ``openai_public``).
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
ENCODING_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: Environment variable naming a local copy of ``o200k_base.tiktoken`` (offline machines).
TOKENIZER_FILE_ENV = "FINENVS_TOKENIZER_FILE"
#: Tokens of framing per chat message (role and separators), as OpenAI's chat format counts them.
MESSAGE_OVERHEAD = 4
#: Tokens that open the assistant's reply in every request.
REPLY_PRIMING = 3
#: Texts of at least this many characters are remembered once counted (tool schemas, prompts, tool results), by
#: every counter of the process that uses the same encoding: the tool schemas and the system prompt, the same in
#: every episode of a family, are then counted once per run, not once per episode. A count is a function of the text
#: alone (the key is the whole text), so the memo can neither change a count nor carry anything between episodes.
_MEMO_MIN_CHARS = 64
#: The memo is emptied when it holds this many texts or this many characters in all.
_MEMO_MAX = 16_384
_MEMO_MAX_CHARS = 32_000_000

_ENCODER: Any = None
_STATUS: str | None = None


def _tiktoken_cache_file() -> Path:
    """Where tiktoken looks for the encoding's file (its ``read_file_cached`` rule)."""
    root = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or str(
        Path(tempfile.gettempdir()) / "data-gym-cache")
    return Path(root) / hashlib.sha1(ENCODING_URL.encode()).hexdigest()


def _place_local_copy() -> str | None:
    """Put ``$FINENVS_TOKENIZER_FILE`` into tiktoken's cache (checked against :data:`ENCODING_SHA256`); why not."""
    source = os.environ.get(TOKENIZER_FILE_ENV)
    if not source:
        return None
    target = _tiktoken_cache_file()
    if target.is_file():
        return None
    try:
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    except OSError as exc:
        return f"{TOKENIZER_FILE_ENV} cannot be read ({type(exc).__name__})"
    if digest != ENCODING_SHA256:
        return f"{TOKENIZER_FILE_ENV} is not o200k_base.tiktoken (its SHA-256 is {digest[:16]}...)"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    except OSError as exc:
        return f"tiktoken's cache {target.parent} is not writable ({type(exc).__name__})"
    return None


def encoder() -> Any:
    """The ``o200k_base`` encoding (loaded once), or None when it cannot be had (see :func:`tokenizer_status`)."""
    global _ENCODER, _STATUS
    if _ENCODER is not None or _STATUS is not None:
        return _ENCODER
    try:
        import tiktoken
    except ImportError:
        _STATUS = "tiktoken is not installed (pip install 'finenvs[llm]')"
        return None
    problem = _place_local_copy()
    try:
        _ENCODER = tiktoken.get_encoding(ENCODING)
        _STATUS = "ok"
    except Exception as exc:  # offline without the file: a download error of requests/urllib3
        _STATUS = (f"tiktoken could not load {ENCODING} ({type(exc).__name__}); offline, set "
                   f"{TOKENIZER_FILE_ENV} to a copy of o200k_base.tiktoken" + (f"; {problem}" if problem else ""))
    return _ENCODER


def tokenizer_status() -> str:
    """``"ok"`` when estimates are available, else why they are n/a."""
    encoder()
    return _STATUS or "ok"


def _reset_for_tests(enc: Any = None, status: str | None = None) -> None:
    """Replace the loaded encoding (tests: a stand-in, or none with a reason)."""
    global _ENCODER, _STATUS
    _ENCODER, _STATUS = enc, status if status is not None else ("ok" if enc is not None else None)
    _MEMOS.clear()


class _Memo:
    """Counts of long texts under one encoding (see :data:`_MEMO_MIN_CHARS`), bounded in texts and characters."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.chars = 0

    def add(self, text: str, n: int) -> None:
        if len(self.counts) >= _MEMO_MAX or self.chars + len(text) > _MEMO_MAX_CHARS:
            self.counts.clear()
            self.chars = 0
        self.counts[text] = n
        self.chars += len(text)


#: One memo per encoding object (held here with it, so its id is never reused while the memo lives).
_MEMOS: dict[int, tuple[Any, _Memo]] = {}


def _memo_for(enc: Any) -> _Memo:
    held = _MEMOS.get(id(enc))
    if held is None or held[0] is not enc:
        held = _MEMOS[id(enc)] = (enc, _Memo())
    return held[1]


class TokenCounter:
    """Counts texts, messages and requests with one encoding, remembering long texts counted (by any counter of
    the process with that encoding)."""

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        self._memo = _memo_for(enc)

    def text(self, text: str) -> int:
        if not text:
            return 0
        if len(text) < _MEMO_MIN_CHARS:
            return len(self.enc.encode_ordinary(text))
        n = self._memo.counts.get(text)
        if n is None:
            n = len(self.enc.encode_ordinary(text))
            self._memo.add(text, n)
        return n


def request_parts(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[str]:
    """A chat request as the texts a provider reads in order: the tool schemas, then each message."""
    parts = [json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")) if tools else ""]
    for m in messages:
        text = f"{m.get('role')}\n{m.get('content') if isinstance(m.get('content'), str) else ''}"
        calls = m.get("tool_calls") or []
        if calls:
            text += "\n" + json.dumps([(c.get("function") or {}) for c in calls if isinstance(c, dict)],
                                      ensure_ascii=False, separators=(",", ":"))
        parts.append(text)
    return parts


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class DecisionTokens:
    """A decision's token counts: prompt (summed over its requests), completion, and the cached prefix."""

    prompt: int | None = 0
    completion: int | None = 0
    cached: int | None = 0
    #: Which of the three are ``o200k_base`` estimates (the rest are the endpoint's own counts).
    estimated: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "completion": self.completion, "cached": self.cached,
                "estimated": sorted(set(self.estimated))}


def _plus(total: int | None, n: int | None) -> int | None:
    return None if total is None or n is None else total + n


class EpisodeTokens:
    """Counts the requests of one episode, in order (the previous request is what a provider may have cached).

    ``count(messages, tools, reply)`` once per request; ``take()`` ends a decision and returns its counts.
    """

    def __init__(self) -> None:
        enc = encoder()
        self.counter = TokenCounter(enc) if enc is not None else None
        self._previous: list[str] | None = None
        self._decision = DecisionTokens()

    def count(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]],
              usage: dict[str, Any] | None, reply_text: str) -> None:
        """Add one request (``usage``: the endpoint's counts for it, if any; ``reply_text``: what it returned)."""
        d = self._decision
        est_prompt = est_cached = est_completion = None
        if self.counter is not None:
            parts = request_parts(messages, tools)
            counts = [self.counter.text(p) for p in parts]
            est_prompt = sum(counts) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING
            est_cached = self._prefix(parts, counts)
            est_completion = self.counter.text(reply_text)
            self._previous = parts
        reported = usage if isinstance(usage, dict) and int(usage.get("prompt_tokens") or 0) > 0 else None
        if reported is not None:
            prompt = int(reported["prompt_tokens"])
            d.prompt = _plus(d.prompt, prompt)
            d.completion = _plus(d.completion, int(reported.get("completion_tokens") or 0))
            if reported.get("cached_tokens") is not None:
                d.cached = _plus(d.cached, min(prompt, int(reported["cached_tokens"])))
            else:  # the estimated share of the prefix, on the endpoint's own count
                d.estimated.append("cached")
                d.cached = _plus(d.cached, None if est_cached is None or not est_prompt else
                                 round(prompt * est_cached / est_prompt))
        else:
            d.estimated += ["prompt", "completion", "cached"]
            d.prompt = _plus(d.prompt, est_prompt)
            d.completion = _plus(d.completion, est_completion)
            d.cached = _plus(d.cached, est_cached)

    def _prefix(self, parts: list[str], counts: list[int]) -> int:
        """Leading tokens of ``parts`` that repeat the previous request's."""
        previous = self._previous
        if previous is None:
            return 0
        assert self.counter is not None
        total = 0
        for k, (part, n) in enumerate(zip(parts, counts, strict=False)):
            if k < len(previous) and previous[k] == part:
                total += n + (MESSAGE_OVERHEAD if k else 0)
                continue
            if k < len(previous):
                total += self.counter.text(part[:_common_prefix(part, previous[k])])
            break
        return total

    def take(self) -> DecisionTokens:
        """The counts of the decision just made (and start the next)."""
        out, self._decision = self._decision, DecisionTokens()
        return out


def reply_text(reply: Any) -> str:
    """What a reply wrote: its text and its tool calls (name and arguments)."""
    text = reply.content if isinstance(getattr(reply, "content", None), str) else ""
    for call in getattr(reply, "tool_calls", None) or []:
        text += f"\n{getattr(call, 'name', '')}({getattr(call, 'arguments', '')})"
    return text


__all__ = ["ENCODING", "ENCODING_SHA256", "MESSAGE_OVERHEAD", "REPLY_PRIMING", "TOKENIZER_FILE_ENV", "DecisionTokens",
           "EpisodeTokens", "TokenCounter", "encoder", "reply_text", "request_parts", "tokenizer_status"]
