"""FinOptions-v0: one options task per episode, scored 0-100 against the pricing engine.

The Gymnasium shell around :mod:`finenvs.tasks.options.core` (answers and
scoring) and :mod:`finenvs.tasks.options.instances` (task instances).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.data.chains import REALISED_VOL_DAYS, synthetic_chain
from finenvs.data.splits import split_bounds
from finenvs.data.synthetic import SyntheticSpec, simulate
from finenvs.errors import shown
from finenvs.pricing import PricingError, bsm_price
from finenvs.tasks.options.core import (
    DIMENSIONS,
    KINDS,
    OUTLOOKS,
    TEMPLATE_NAMES,
    AnswerError,
    ItemScore,
    OptionLeg,
    ScoreCard,
    _card,
    build_template,
    engine_numbers,
    parse_answer,
    parse_leg,
    score_answer,
    stated_answer,
)
from finenvs.tasks.options.instances import make_task, question_with_pointer, states_its_market
from finenvs.tasks.validation import check_choice, check_render_mode
from finenvs.text.protocol import AnswerProtocol, ParsedAction, PrintableText
from finenvs.tools.options import QUOTES_TOOL

SOURCES = ("real", "synthetic")
CHAINS = ("generated", "real")
CENTER_OFFSETS = (-3, -2, -1, 0, 1, 2, 3)
WIDTHS = (1, 2, 3, 4)
N_EXPIRY_SLOTS = 3
SIZE_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.5)
SMILE_OFFSETS = (-2, -1, 0, 1, 2)
OBS_BOUND = 10.0
REAL_CHAIN = ("SPY", "2026-05-01")
RESET_OPTIONS = ("symbol", "date", "kind", "template", "task_id", "task")
ACTION_MODES = ("legs", "text")
#: Longest text answer (characters); a longer one is unreadable (score 0 with the reason), never cut.
MAX_ANSWER_CHARS = 16_384
PUBLIC_TASK_KEYS = ("id", "kind", "source", "prompt", "market", "quotes", "given_legs", "template", "outlook",
                    "budget", "contracts", "ask", "attribution", "daily_vol")
#: Public task fields holding a number or a dict when a task kind has them (None when it has not); ``info["task"]``
#: leaves them out instead of giving None, so each info key keeps one type across kinds.
OPTIONAL_TASK_KEYS = ("budget", "contracts", "attribution", "daily_vol")


def answer_schema() -> dict[str, Any]:
    """The JSON Schema of a FinOptions-v0 text answer (shipped as ``options_answer.schema.json``)."""
    text = resources.files("finenvs.tasks.options").joinpath("options_answer.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def public_task(task: dict[str, Any]) -> dict[str, Any]:
    """What an agent may see of a task: no published answers, errata or notes of a bank item."""
    return {k: task[k] for k in PUBLIC_TASK_KEYS if k in task}


def _float_sized(obj: Any) -> Any:
    """``obj`` with every integer too large for a float as a signed infinity (what JSON's 1e999 reads as)."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        try:
            float(obj)
        except OverflowError:
            return math.inf if obj > 0 else -math.inf
        return obj
    if isinstance(obj, dict):
        return {k: _float_sized(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_float_sized(v) for v in obj]
    return obj


def read_answer(answer: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(answer as a dict, None)``, or ``(None, why it cannot be read)``; never raises.

    An integer too large for a float (``1`` followed by 400 zeros) reads as an infinity, so it fails its
    own item (a non-finite number) instead of the scorer.
    """
    try:
        return _float_sized(parse_answer(answer)), None
    except AnswerError as exc:
        return None, str(exc)
    except ValueError as exc:  # json's own limits, e.g. an integer of more than 4,300 digits
        return None, f"malformed JSON: {str(exc)[:80]}"
    except RecursionError:
        return None, "malformed JSON: nested too deeply"


def unread_card(task: dict[str, Any], reason: str) -> ScoreCard:
    """The score of an answer that could not be read: 0 on every item asked, with the reason."""
    items = [ItemScore(dim, name, 0.0, f"answer unreadable: {reason}") for dim in DIMENSIONS for name in task["ask"][dim]]
    return _card(items, parse_error=reason)


OPTIONS_INSTRUCTIONS = (
    "You answer one options task: price an option, give a position's Greeks, build a strategy for an outlook and "
    "a risk budget, attribute a P&L between two marks, or size a credit spread. The task states the market, the "
    "contracts on offer, the numbers it asks for and their units (hedge.shares: the stock trade that makes the "
    "position delta-neutral). Every number is checked against the pricing engine: the score is 0-100, 25 each "
    "for P&L, Greeks, Strategy and Risk (a dimension the task does not ask is left out and the others share its "
    "weight). You answer once; the episode ends."
)


#: Keywords of ``options_answer.schema.json`` the commit tool's schema (sent with every request) leaves out: its
#: identity and title, the bounds the scorer checks itself (a strike or quantity <= 0, a malformed expiry are
#: scored with the reason); its units paragraph is replaced by a line (each question states its units).
_COMMIT_LEAVES_OUT = frozenset({"title", "pattern", "exclusiveMinimum"})


def _without(schema: Any, keys: frozenset[str]) -> Any:
    """``schema`` without ``keys`` at any depth (property names are kept)."""
    if isinstance(schema, list):
        return [_without(v, keys) for v in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: ({n: _without(f, keys) for n, f in v.items()} if k == "properties" else _without(v, keys))
            for k, v in schema.items() if k not in keys or k == "properties"}


@dataclass(frozen=True)
class OptionsProtocol(AnswerProtocol):
    """The text protocol of FinOptions-v0 (``action_mode="text"``): the action is one JSON answer.

    ``parse_text``/``parse_commit`` never raise. A reply that is read is the
    answer, marked invalid when :func:`~finenvs.tasks.options.core.parse_answer`
    cannot read it (it then scores 0 on every item, with the reason). A reply that
    is not read (not text, longer than ``max_chars``, not printable, unreadable
    ``commit_action`` arguments) carries the empty answer ``""``: it scores 0 with
    the reason. Nothing is ever substituted.
    """

    def check(self, answer: Any) -> str | None:
        return read_answer(answer)[1]

    def commit_schema(self) -> dict[str, Any]:
        """The answer schema (``options_answer.schema.json``) as the commit tool's parameters, plus ``reasoning``."""
        schema = {k: v for k, v in answer_schema().items() if not k.startswith("$")}
        legs = schema["properties"]["legs"]
        # conditional keywords are beyond some servers' schema-to-grammar converters; the description says it
        legs["items"] = {k: v for k, v in legs["items"].items() if k not in ("if", "then")}
        legs["description"] = "The position per unit; call and put legs need strike and expiry (YYYY-MM-DD)."
        schema["properties"]["reasoning"] = {"type": "string", "description": "Optional, not scored."}
        return schema

    def commit_advertised(self) -> dict[str, Any]:
        """:meth:`commit_schema` as the model reads it (sent with every request): without its title and the bounds
        the scorer checks itself, its plain numbers as one rule (the question names the keys of the numbers it asks
        for); its units paragraph is left to the question, which states its units."""
        full = self.commit_schema()
        schema = _without(full, _COMMIT_LEAVES_OUT)
        numbers = [name for name, field in full["properties"].items() if field == {"type": "number"}]
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k not in numbers}
        schema["additionalProperties"] = {"type": "number"}
        schema["description"] = "legs, contracts and each number the task asks for, by the key it names"
        return schema

    def parse_commit(self, arguments: Any) -> ParsedAction:
        arguments, problem = self.commit_arguments(arguments)
        if problem is not None:
            return ParsedAction("", "ANSWER", problem, "tool")
        reasoning = arguments.get("reasoning", "")
        answer = {k: v for k, v in arguments.items() if k != "reasoning"}
        try:
            text = json.dumps(answer, separators=(",", ":"), default=str)
        except (ValueError, RecursionError):
            return ParsedAction("", "ANSWER", "commit_action arguments cannot be written as JSON", "tool")
        if len(text) > self.max_chars:
            return ParsedAction("", "ANSWER", f"the answer has {len(text)} characters of JSON; the limit is "
                                f"{self.max_chars}", "tool")
        return ParsedAction(text, "ANSWER", self.check(text), "tool",
                            reasoning[: self.max_chars] if isinstance(reasoning, str) else "")


OPTIONS_PROTOCOL = OptionsProtocol(
    task="FinOptions-v0",
    instructions=OPTIONS_INSTRUCTIONS,
    actions={"ANSWER": ""},
    default="ANSWER",
    default_reason="an unreadable answer scores 0 on every item, with the reason; nothing is substituted",
    max_chars=MAX_ANSWER_CHARS,
    hint='{"legs": [{"side", "type", "strike", "expiry", "quantity"}, ...], "contracts": <n>, <each number asked>}',
    answer_note=(
        'Commit with the commit_action tool, or reply with one JSON object {"legs": [...], "contracts": <n>, ...} (a '
        "```json block or one object in your text). A number asked and not given scores 0; an answer that is not "
        "such an object scores 0 on every item; nothing is substituted."),
    commit_note="Commit your answer (the episode ends): legs, contracts and every number the task asks for.",
)


@dataclass
class OptionsView:
    """The episode's clock for the tools: the task is public at the close of ``as_of``; the counter is the
    episode's look-ahead counter (the options tools read the task itself from the env)."""

    as_of: str
    counter: LookAheadCounter = field(default_factory=LookAheadCounter)


class FinOptionsEnv(gym.Env):
    """Options strategy tasks scored against a pricing engine, one task per episode.

    ## Description
    FAB++'s "Options Alpha" track, scored on numbers instead of keywords. Each
    episode is one task: price an option, give a position's Greeks, build a
    strategy for an outlook and a risk budget, attribute a P&L, or size a
    credit spread. The agent answers once; the episode ends. Kinds and the
    items scored per kind: :mod:`finenvs.tasks.options.instances`; scoring rules
    and answer units: :mod:`finenvs.tasks.options.core`.

    ## Data
    ``source="real"`` (default): a symbol of ``symbols`` (default the core
    dataset's) and a trading day within ``split`` are drawn from ``np_random``;
    the chain is generated for that day from date-locked spot, T-bill and
    realised volatility (:func:`finenvs.data.chains.synthetic_chain`).
    ``chain="real"``: the shipped SPY chain of 2026-05-01 with its real quotes.
    ``source="synthetic"``: a GBM path (drawn vol 15-60%, rate 0-5%) stands in
    for the history; no data is read. ``bank="fabpp"``: the curated bank
    ``envs_data/questions/options.json`` instead (FAB++ questions, truths
    recomputed by the engine; see its README).

    ## Action Space
    ``action_mode="legs"`` (default, RL): ``MultiDiscrete([12, 7, 4, 3, 5])``:
    template (:data:`~finenvs.tasks.options.core.TEMPLATE_NAMES`), centre strike
    offset from the money (-3..+3 listed strikes), wing width (1..4 strikes),
    expiry slot (0..2, a calendar's far leg is the next slot) and size (0.25,
    0.5, 0.75, 1, 1.5 x the largest count within the budget, at least 1). An
    RL action states no numbers: the env states the engine's own numbers,
    hedge and a half-max exit for it, so P&L and Greeks score full marks by
    construction and the reward's signal is Strategy and Risk. Anything else
    (a str, a dict, an array outside the space) raises ``ValueError``.

    ``action_mode="text"`` (``FinOptions-text-v0`` uses it): ``PrintableText(16384)``,
    the answer as a JSON object's text (alone, in a ```json block or inside
    prose; schema: :func:`answer_schema`; the prompt is ``info["prompt"]`` and
    ``env.prompt``; the text protocol is :data:`OPTIONS_PROTOCOL`). Anything
    but a ``str`` raises ``ValueError``; a str never raises: one that cannot be
    read (malformed JSON, over 16,384 characters, non-printable) scores 0 on
    every item, with the reason in ``info["parse_error"]``.

    ## Observation Space
    ``Box(-10, 10, (48,), float32)``:

    | index | content |
    |---|---|
    | 0-4 | kind one-hot (pricing, greeks, strategy, attribution, sizing) |
    | 5-16 | requested template one-hot (zeros if none) |
    | 17-20 | requested outlook one-hot (bullish, bearish, neutral, volatile) |
    | 21-38 | per expiry slot (3): days/365, implied vol at the money and -2..+2 strikes (5) |
    | 39 | rate |
    | 40 | PoP sigma |
    | 41 | strike spacing / spot |
    | 42 | risk budget / (spot x multiplier), clipped |
    | 43 | risk % of the account |
    | 44 | ATM call premium / spot of slot 0 |
    | 45 | ATM put premium / spot of slot 0 |
    | 46 | number of expiry slots / 3 |
    | 47 | 1 if the task gives the legs, else 0 |

    ## Rewards
    The score, 0-100 (25 per dimension: P&L, Greeks, Strategy, Risk), at the
    single step.

    ## Starting State
    A fresh task from ``np_random`` (or ``options={"task_id": ...}`` of the bank,
    or a task dict ``options={"task": ...}``).

    ## Episode End
    ``terminated`` after the one answer. ``truncated`` never.

    ## Look-ahead Guarantee
    Generated chains read spot, the T-bill and realised volatility through an
    as-of view at the task's date. ``hold_to_expiry=True`` reads the later path
    only after the answer is scored, to settle the position
    (``info["realised_pnl"]``); with no data to the expiry the path is a GBM
    at the PoP sigma drawn from ``np_random``. The text variant's tools
    (:mod:`finenvs.tools.options`) read only the task's public fields.

    ## Arguments
    ``kinds`` (default all five), ``templates`` (default all twelve),
    ``source``, ``chain``, ``symbols``, ``split`` (train/eval/live),
    ``bank`` (None or ``"fabpp"``), ``hold_to_expiry``, ``dataset``,
    ``action_mode`` (``"legs"``, the default, or ``"text"``; see Action Space),
    ``render_mode`` (None, ``"ansi"``: the prompt and the last score as text, or
    ``"rgb_array"``: that text drawn on a frame; needs ``finenvs[plot]``).

    ## Info
    Reset and step: ``task_id``, ``kind``, ``prompt``, ``date``, ``symbol``,
    ``look_ahead_attempts`` and ``task``, the task's public fields
    (:func:`public_task`) without ``budget``, ``contracts``, ``attribution`` and
    ``daily_vol`` for the kinds that have none (each key keeps one type across
    kinds, so ``gym.make_vec`` stacks infos through autoresets). The step adds
    ``score``, ``dimensions``, ``items``, ``parse_error``, ``invalid_action``,
    ``action_mode``, ``engine`` when the engine read the answer, and with
    ``hold_to_expiry`` ``realised_pnl`` (None when the position cannot be
    settled) and ``settlement``.

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}
    #: How text agents answer (``action_mode="text"``); :class:`~finenvs.wrappers.text.TextInterface` reads it.
    text_protocol = OPTIONS_PROTOCOL
    task_family = "options"

    def __init__(
        self,
        kinds: list[str] | tuple[str, ...] | None = None,
        templates: list[str] | tuple[str, ...] | None = None,
        source: str = "real",
        chain: str = "generated",
        symbols: list[str] | tuple[str, ...] | None = None,
        split: str | None = "train",
        bank: str | None = None,
        hold_to_expiry: bool = False,
        dataset: str = "core",
        action_mode: str = "legs",
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(render_mode, self.metadata)
        check_choice("action_mode", action_mode, ACTION_MODES)
        self.kinds = tuple(kinds) if kinds is not None else KINDS
        for kind in self.kinds:
            if kind not in KINDS:
                raise ValueError(f"unknown task kind {kind!r}; valid kinds: {list(KINDS)}")
        if not self.kinds:
            raise ValueError("kinds must name at least one task kind")
        self.templates = tuple(templates) if templates is not None else TEMPLATE_NAMES
        for name in self.templates:
            if name not in TEMPLATE_NAMES:
                raise ValueError(f"unknown template {name!r}; valid templates: {list(TEMPLATE_NAMES)}")
        if source not in SOURCES:
            raise ValueError(f"source must be one of {list(SOURCES)}; got {source!r}")
        if chain not in CHAINS:
            raise ValueError(f"chain must be one of {list(CHAINS)}; got {chain!r}")
        if chain == "real" and source != "real":
            raise ValueError("chain='real' reads the shipped SPY chain: it needs source='real'")
        if bank not in (None, "fabpp"):
            raise ValueError(f"bank must be None or 'fabpp'; got {bank!r}")
        self.source, self.chain_kind, self.split, self.bank_name = source, chain, split, bank
        self.hold_to_expiry = bool(hold_to_expiry)
        self.dataset = dataset
        self.render_mode = render_mode
        self._catalog: Any = None
        self._symbols = tuple(symbols) if symbols is not None else None
        self._bank: list[dict[str, Any]] | None = None
        if bank is not None:
            from finenvs.tasks.options.bank import load_bank

            self._bank = load_bank()
        if source == "real" and bank is None:
            split_bounds(split)  # an unknown split fails here, not at reset
        self.action_mode = action_mode
        legs_space = spaces.MultiDiscrete([len(TEMPLATE_NAMES), len(CENTER_OFFSETS), len(WIDTHS), N_EXPIRY_SLOTS,
                                           len(SIZE_FRACTIONS)])
        self._nvec = legs_space.nvec  # the legs mode's action sizes (its errors name them)
        self.action_space: spaces.Space = PrintableText(MAX_ANSWER_CHARS) if action_mode == "text" else legs_space
        self.observation_space = spaces.Box(-OBS_BOUND, OBS_BOUND, (48,), np.float32)
        self.task: dict[str, Any] | None = None
        self._view: OptionsView | None = None
        self._done = True
        self._last: dict[str, Any] = {}

    # ------------------------------------------------------------------ data
    def _data(self) -> Any:
        if self._catalog is None:
            from finenvs.data.catalog import default_catalog

            self._catalog = default_catalog()
        return self._catalog

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_catalog"] = None  # reopened on demand
        return state

    def _real_chain(self, symbol: str | None, date: Any) -> tuple[Any, float | None]:
        catalog = self._data()
        if self.chain_kind == "real":
            view = catalog.as_of(REAL_CHAIN[1], dataset=self.dataset)
            chain = view.option_chain(REAL_CHAIN[0])
            from finenvs.data.chains import tbill_continuous_rate

            return chain, tbill_continuous_rate(view.rate("DTB3")[1])
        symbols = self._symbols or tuple(catalog.symbols(self.dataset))
        symbol = symbol if symbol is not None else str(self.np_random.choice(symbols))
        if date is None:
            dates = catalog.series(symbol, self.dataset).dates
            lo, hi = split_bounds(self.split)
            first_ok = REALISED_VOL_DAYS + 1
            eligible = dates[first_ok:]
            if lo is not None:
                eligible = eligible[eligible >= lo]
            if hi is not None:
                eligible = eligible[eligible <= hi]
            if len(eligible) == 0:
                raise ValueError(f"no {symbol} trading day in split {self.split!r} with {first_ok} days of history")
            date = eligible[int(self.np_random.integers(0, len(eligible)))]
        view = catalog.as_of(date, dataset=self.dataset)
        return synthetic_chain(view, symbol), None

    def _synthetic_chain(self) -> tuple[Any, float | None]:
        rng = self.np_random
        sigma = float(rng.uniform(0.15, 0.6))
        rate_pct = float(rng.uniform(0.0, 5.0))
        spec = SyntheticSpec.from_dict({"model": "gbm", "params": {"mu": 0.05, "sigma": sigma},
                                        "bars": {"start_price": float(np.round(20 * np.exp(rng.uniform(0, 3.5)), 2))}})
        series = simulate(spec, 60, rng, symbol="SYN")
        rate_dates = series.dates - np.timedelta64(1, "D")
        rates = (rate_dates, np.full(len(rate_dates), rate_pct))
        view = AsOfView(lambda _s: series, series.dates[-1], rate_lookup=lambda _name: rates, symbols=["SYN"])
        return synthetic_chain(view, "SYN"), None

    # ------------------------------------------------------------------ episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; valid: {list(RESET_OPTIONS)}")
        if "task" in options:
            task = options["task"]
        elif self._bank is not None:
            task = self._bank_task(options.get("task_id"))
        else:
            kind = options.get("kind") or str(self.np_random.choice(self.kinds))
            template = options.get("template") or str(self.np_random.choice(self.templates))
            if kind not in KINDS:
                raise ValueError(f"unknown task kind {kind!r}; valid kinds: {list(KINDS)}")
            if template not in TEMPLATE_NAMES:
                raise ValueError(f"unknown template {template!r}; valid templates: {list(TEMPLATE_NAMES)}")
            if self.source == "synthetic":
                chain, rate = self._synthetic_chain()
            else:
                chain, rate = self._real_chain(options.get("symbol"), options.get("date"))
            task_seed = int(self.np_random.integers(0, 2**31 - 1))
            task = make_task(chain, np.random.default_rng(task_seed), kind=kind, template=template, rate=rate,
                             task_id=f"{chain.symbol}-{chain.snapshot}-{kind}-{task_seed}")
        self.task = task
        self._view = OptionsView(str(task["market"]["as_of"]))
        self._done = False
        self._last = {}
        return self._observe(), self._info()

    def _bank_task(self, task_id: str | None) -> dict[str, Any]:
        assert self._bank is not None
        if task_id is None:
            return self._bank[int(self.np_random.integers(0, len(self._bank)))]
        for task in self._bank:
            if task["id"] == task_id:
                return task
        raise ValueError(f"unknown task_id {task_id!r}; bank ids: {[t['id'] for t in self._bank]}")

    @property
    def prompt(self) -> str:
        """The current task's text (what a text agent reads)."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before reading the prompt")
        return self.task["prompt"]

    def _info(self) -> dict[str, Any]:
        task = self.task
        assert task is not None
        attempts = self._view.counter.attempts if self._view is not None else 0
        public = {k: v for k, v in copy.deepcopy(public_task(task)).items()
                  if v is not None or k not in OPTIONAL_TASK_KEYS}  # one type per key: vector envs stack infos
        return {"task_id": task["id"], "kind": task["kind"], "prompt": task["prompt"], "task": public,
                "date": task["market"]["as_of"], "symbol": task["market"]["symbol"], "look_ahead_attempts": attempts}

    # ------------------------------------------------------------------ text interface
    def as_of_view(self) -> OptionsView:
        """The episode's view (its look-ahead counter; the options tools read the task through the env)."""
        if self._view is None:
            raise gym.error.ResetNeeded("call reset() before as_of_view()")
        return self._view

    def public_task(self) -> dict[str, Any]:
        """What an agent may see of the current task (a copy; see the module function :func:`public_task`)."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before public_task()")
        return copy.deepcopy(public_task(self.task))

    def position_numbers(self, legs: list[Any], contracts: float = 1.0) -> tuple[list[OptionLeg], dict[str, Any]]:
        """The pricing engine's numbers for ``legs`` x ``contracts`` built from the current task's contracts.

        The scorer's own engine (:func:`~finenvs.tasks.options.core.engine_numbers`), so for a bank item
        that states per-leg Greeks in its question it sums those.

        Returns:
            The legs as read, and every number the task can ask for.

        Raises:
            ValueError: A leg that cannot be read or is not on offer, or market inputs the engine refuses.
        """
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before position_numbers()")
        try:
            parsed = [parse_leg(leg, self.task["market"]["as_of"]) for leg in legs]
            return parsed, engine_numbers(self.task, parsed, float(contracts))
        except (AnswerError, PricingError) as exc:
            raise ValueError(f"cannot analyse this position: {exc}") from None

    def text_state(self, tools: Collection[str] = ()) -> dict[str, str]:
        """The task as prompt lines: id and kind, market, the items asked, and the task text (id, kind and market
        only in the question when it opens with them, as a generated one does).

        Args:
            tools: Names of the tools offered beside the prompt. With ``get_quotes`` among them, the question
                names the contracts on offer and points to it instead of listing them (the listing is what
                ``get_quotes`` returns); without it (closed book, a bare text env) the question lists them.
        """
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before text_state()")
        task, m = self.task, self.task["market"]
        question = question_with_pointer(task, QUOTES_TOOL) if QUOTES_TOOL in tools else task["prompt"]
        names = {"pnl": "P&L", "greeks": "Greeks", "strategy": "Strategy", "risk": "Risk"}
        ask = "; ".join(f"{names[d]}: {', '.join(task['ask'][d])}" for d in DIMENSIONS if task["ask"][d])
        head = {} if states_its_market(task) else {
            "Task": f"{task['id']} ({task['kind']})",
            "Market": f"{m['symbol']} at the close of {m['as_of']}: spot {m['spot']:g}, rate {m['rate']:.4%}, "
                      f"dividend yield {m['dividend_yield']:.2%}, {m['multiplier']:g} shares per contract"}
        return {**head, "Scored items": ask, "Question": "\n" + question}

    def rl_answer(self, action: Any) -> dict[str, Any]:
        """The answer an RL action stands for: its legs, sized, with the engine's numbers stated."""
        task = self.task
        assert task is not None
        t, c, w, e, s = (int(x) for x in action)
        legs = build_template(task, TEMPLATE_NAMES[t], center=CENTER_OFFSETS[c], width=WIDTHS[w], expiry_index=e)
        try:
            probe = engine_numbers(task, legs, 1.0)
        except (AnswerError, PricingError):  # e.g. a leg the task does not offer: the legs alone, scored as such
            return {"legs": [leg.to_json() for leg in legs], "contracts": 1.0}
        allowed = probe.get("max_contracts", 1) or 0
        contracts = float(task["contracts"]) if task.get("contracts") else \
            float(max(1, math.floor(SIZE_FRACTIONS[s] * allowed + 1e-9)))
        return stated_answer(legs, contracts, engine_numbers(task, legs, contracts))

    def _check_rl_action(self, action: Any) -> np.ndarray:
        try:
            arr = np.asarray(action)
        except (ValueError, OverflowError, TypeError):  # ragged or unconvertible: shown as given
            arr = np.asarray(None)
        if arr.shape != (5,) or not np.issubdtype(arr.dtype, np.integer):
            if arr.shape == (5,) and np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) \
                    and np.all(arr == np.round(arr)):
                arr = arr.astype(np.int64)
            else:
                raise ValueError(f"an RL action is 5 integers {list(self._nvec)} (template, centre, "
                                 f"width, expiry, size); got {shown(action)}")
        if not self.action_space.contains(arr.astype(self.action_space.dtype)):
            raise ValueError(f"action {arr.tolist()} is outside MultiDiscrete({self._nvec.tolist()})")
        return arr

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.task is None or self._done:
            raise gym.error.ResetNeeded("call reset() before step(): the task is answered")
        task = self.task
        answer: dict[str, Any] | None
        if self.action_mode == "text":
            if not isinstance(action, str):
                raise ValueError(f"FinOptions-v0 (action_mode='text') takes the answer as a str, "
                                 f"PrintableText({MAX_ANSWER_CHARS}): one JSON object; got {type(action).__name__}")
            parsed = self.text_protocol.parse_text(action)
            answer = None if parsed.invalid else read_answer(action)[0]
            if answer is None:
                assert parsed.invalid is not None  # the protocol checks a reply with read_answer: None says why
                card = unread_card(task, parsed.invalid)
            else:
                card = score_answer(task, answer)
        else:
            if isinstance(action, (str, bytes, dict)):
                raise ValueError(f"FinOptions-v0 (action_mode='legs') takes MultiDiscrete({self._nvec.tolist()})"
                                 " actions; for text answers make the env with action_mode='text'")
            answer = self.rl_answer(self._check_rl_action(action))
            card = score_answer(task, answer)
        self._done = True
        info = self._info()
        info.update({"score": card.total, "dimensions": dict(card.dimensions), "items": card.to_dict()["items"],
                     "parse_error": card.parse_error, "action_mode": self.action_mode,
                     "invalid_action": card.parse_error})
        if card.engine:
            info["engine"] = {k: v for k, v in card.engine.items() if not isinstance(v, dict)}
        if self.hold_to_expiry:
            info.update(self._settle(answer) if answer is not None else
                        {"realised_pnl": None, "settlement": {"error": card.parse_error}})
        self._last = info
        return self._observe(), float(card.total), True, False, info

    # ------------------------------------------------------------------ settlement
    def _settle(self, answer: dict[str, Any]) -> dict[str, Any]:
        """Hold the answer's position to its first expiry on the real path (or a GBM at the PoP sigma)."""
        task = self.task
        assert task is not None
        try:
            parsed = parse_answer(answer)
            legs = [parse_leg(leg, task["market"]["as_of"]) for leg in parsed.get("legs") or []]
            if task.get("given_legs"):
                legs = [parse_leg(leg) for leg in task["given_legs"]]
            if not legs:
                raise AnswerError("no legs to hold")
            contracts = float(task.get("contracts") or parsed.get("contracts") or 1.0)
            numbers = engine_numbers(task, legs, contracts)
        except (AnswerError, ValueError, TypeError) as exc:
            return {"realised_pnl": None, "settlement": {"error": str(exc)}}
        m = task["market"]
        expiries = sorted({leg.option_expiry for leg in legs if leg.kind != "stock"})
        if not expiries:
            return {"realised_pnl": None, "settlement": {"error": "no option leg to settle"}}
        first = np.datetime64(expiries[0], "D")
        as_of = np.datetime64(m["as_of"], "D")
        spot_t, path = None, "simulated"
        if self.source == "real" and m["symbol"] != "SYN" and self.bank_name is None:
            series = self._data().series(m["symbol"], self.dataset)
            if series.dates[-1] >= first:
                i = int(np.searchsorted(series.dates, first, side="right")) - 1
                spot_t, path = float(series.close[i]), "real"
        if spot_t is None:
            T = float((first - as_of).astype(int)) / 365.0
            sigma = float(m["pop_vol"])
            z = float(self.np_random.standard_normal())
            spot_t = float(m["spot"]) * math.exp((m["rate"] - m["dividend_yield"] - 0.5 * sigma * sigma) * T
                                                 + sigma * math.sqrt(T) * z)
        value = _position_value_at(task, legs, contracts, spot_t, expiries[0])
        return {"realised_pnl": value - numbers["net_premium"],
                "settlement": {"date": expiries[0], "spot": spot_t, "path": path}}

    # ------------------------------------------------------------------ observation
    def _observe(self) -> np.ndarray:
        task = self.task
        obs = np.zeros(48, dtype=np.float64)
        if task is None:
            return obs.astype(np.float32)
        m = task["market"]
        spot = float(m["spot"])
        obs[KINDS.index(task["kind"])] = 1.0
        if task.get("template") in TEMPLATE_NAMES:
            obs[5 + TEMPLATE_NAMES.index(task["template"])] = 1.0
        if task.get("outlook") in OUTLOOKS:
            obs[17 + OUTLOOKS.index(task["outlook"])] = 1.0
        expiries = sorted({q["expiry"] for q in task["quotes"]})[:N_EXPIRY_SLOTS]
        step = 0.0
        for slot, expiry in enumerate(expiries):
            calls = sorted((q for q in task["quotes"] if q["expiry"] == expiry and q["type"] == "call"),
                           key=lambda q: q["strike"])
            if not calls:
                continue
            strikes = np.array([q["strike"] for q in calls])
            atm = int(np.argmin(np.abs(strikes - spot)))
            base = 21 + 6 * slot
            obs[base] = calls[0]["days"] / 365.0
            for j, off in enumerate(SMILE_OFFSETS):
                obs[base + 1 + j] = calls[min(max(atm + off, 0), len(calls) - 1)]["iv"]
            if slot == 0:
                if len(strikes) > 1:
                    step = float(np.median(np.diff(strikes))) / spot
                obs[44] = calls[atm]["premium"] / spot
                puts = [q for q in task["quotes"] if q["expiry"] == expiry and q["type"] == "put"
                        and q["strike"] == calls[atm]["strike"]]
                obs[45] = puts[0]["premium"] / spot if puts else 0.0
        obs[39] = m["rate"]
        obs[40] = m["pop_vol"]
        obs[41] = step
        budget = task.get("budget")
        if budget:
            obs[42] = budget["account"] * budget["risk_pct"] / (spot * m["multiplier"])
            obs[43] = budget["risk_pct"]
        obs[46] = len(expiries) / N_EXPIRY_SLOTS
        obs[47] = 1.0 if task.get("given_legs") else 0.0
        return np.clip(np.nan_to_num(obs), -OBS_BOUND, OBS_BOUND).astype(np.float32)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None or self.task is None:
            return None
        text = self.task["prompt"]
        if self._last:
            dims = ", ".join(f"{k} {v:.1f}" for k, v in self._last["dimensions"].items())
            text += f"\n\nScore {self._last['score']:.1f}/100 ({dims})"
        if self.render_mode == "ansi":
            return text
        from finenvs.tasks.rendering import _figure, _rgb

        fig, canvas = _figure(960, 720)
        fig.text(0.01, 0.99, text, va="top", ha="left", family="monospace", fontsize=7, wrap=True)
        return _rgb(fig, canvas)


def _position_value_at(task: dict[str, Any], legs: list[OptionLeg], contracts: float, spot_t: float,
                       horizon: str) -> float:
    """Value of the position when the first expiry settles at ``spot_t`` (later legs at BSM, their own vol)."""
    from finenvs.tasks.options.core import _quote_for

    m = task["market"]
    mult = float(m["multiplier"])
    total = 0.0
    for leg in legs:
        units = leg.sign * leg.quantity * contracts * (1.0 if leg.kind == "stock" else mult)
        if leg.kind == "stock":
            total += units * spot_t
        elif leg.expiry == horizon:
            strike = leg.option_strike
            total += units * (max(spot_t - strike, 0.0) if leg.kind == "call" else max(strike - spot_t, 0.0))
        else:
            quote = _quote_for(task, leg)
            days_left = (np.datetime64(leg.expiry, "D") - np.datetime64(horizon, "D")).astype(int)
            total += units * float(bsm_price(spot_t, leg.strike, days_left / 365.0, m["rate"], m["dividend_yield"],
                                             quote["iv"], leg.kind))
    return total
