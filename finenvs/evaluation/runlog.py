"""The run log: a run folder's files, its trajectory's JSON line format, and the hash chain over its lines.

A run folder holds:

* ``run.json`` — what ran (:class:`RunMeta`): env, episodes (env kwargs, seed, options), agent,
  configuration, finenvs version, data manifest, status;
* ``trajectories.jsonl`` — records of ``"type": "step"`` (:class:`StepRecord`: prompt, messages,
  tool calls and results, raw reply, parsed action and the env action it became
  (``env_action``), invalid reason, reward, equity, usage, timing), ``"type": "pending"``
  (:class:`PendingRecord`: a live run's decision waiting for its bar) and ``"type": "episode"``
  (:class:`EpisodeRecord`: status, the family's metrics, efficiency counts).

Every line is written whole and flushed, so an interrupted run leaves valid
JSONL (at worst a partial last line, which readers drop).

The run folder is tamper-evident. ``run.json`` records the plan (how many
episodes, their labels) and an ``integrity`` block: a sha256 digest of each
field that says what the run is (agent, configuration, episodes, plan, data
manifest, ...), the chain's ``genesis`` (the digest of those digests) and, when
the run stops, how many trajectory ``lines`` it wrote and the ``final`` digest.
Each trajectory line carries ``seq`` (its line number) and ``prev`` (the sha256
of the previous line's bytes; line 1: the genesis), so a line deleted, inserted,
moved or changed breaks the chain where it happened.

The chain is also keyed (:mod:`finenvs.evaluation.seal`): every line ends with
``mac``, the HMAC-SHA256 of the rest of the line under the user's run key, and
run.json carries a ``seal`` (the HMAC of all of run.json but the seal: integrity
block, status, outcomes, configuration), rewritten by :func:`write_run_json`
each time the run writes run.json. Recomputing the sha256 digests after an edit
is therefore not enough. :func:`~finenvs.evaluation.integrity.verify_chain`
checks both and gives the signature verdict.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from finenvs.evaluation import seal as _seal
from finenvs.tasks import EpisodeSpec, task_of

RUN_FILE = "run.json"
TRAJECTORY_FILE = "trajectories.jsonl"
SCORE_FILE = "score.json"
#: 4: keyed: every trajectory line's ``mac`` and run.json's ``seal``; 3: chained trajectory lines (``seq``,
#: ``prev``) and run.json's ``plan`` and ``integrity``; 2: unchained.
FORMAT_VERSION = 4
#: The first run format whose lines and run.json are keyed; an older one is "unsigned".
SEALED_FORMAT = 4
#: The run.json fields that say what a run is; their digests start the trajectory chain. Status, timestamps of
#: later sessions, outcomes and the integrity block itself change as the run goes and are not among them.
IDENTITY_FIELDS = ("format", "run", "kind", "families", "created_utc", "finenvs_version", "data_manifest", "agent",
                   "config", "episodes", "plan", "prices")
#: Fields the writer adds to every line of a chained trajectory (readers strip them); ``mac`` is always last.
CHAIN_FIELDS = ("seq", "prev", "mac")

# ---------------------------------------------------------------------------- records
class _StepFields(TypedDict):
    type: Literal["step"]
    episode: int
    step: int
    date: str
    symbol: str
    prompt: str
    messages: list[dict[str, Any]]
    #: each call's record (:meth:`~finenvs.tools.registry.ToolResult.record`) with its ``result``
    tool_calls: list[dict[str, Any]]
    raw_text: str | None
    action: str
    #: the action as the family's text protocol encodes it (what a replay steps)
    env_action: Any
    via: str
    invalid: str | None
    reasoning: str
    reward: float
    equity: Any
    position: Any
    next_date: Any
    terminated: bool
    truncated: bool
    look_ahead: int
    usage: dict[str, int] | None
    cost_usd: float | None
    requests: int
    retries: int
    endpoint_errors: int
    errors: list[str]
    timing: dict[str, float]


class StepRecord(_StepFields, total=False):
    """A ``"step"`` line: one decision and the env step it became."""

    #: a debated episode: the counter-argument and the multiplier
    debate: dict[str, Any]
    #: the reply read as one action and the env's stage check took another: what the reply said
    reply_action: str
    reply_valid: bool
    commit_arguments: Any
    #: a pending decision committed by a later session: the date it was decided at
    decided_pending: str
    #: the decision got no reply: the endpoint (or the agent program) failed on every request (written when true)
    endpoint_failed: bool
    #: prompt, completion and cached-prefix tokens of the decision's requests, and which are estimates
    #: (:meth:`finenvs.evaluation.tokens.DecisionTokens.record`); absent where no request was seen (MCP, harness)
    tokens: dict[str, Any]


class _PendingFields(TypedDict):
    type: Literal["pending"]
    episode: int
    step: int
    date: str
    symbol: str
    prompt: str
    tool_calls: list[dict[str, Any]]
    action: str
    env_action: Any
    via: str
    invalid: str | None
    reasoning: str


class PendingRecord(_PendingFields, total=False):
    """A ``"pending"`` line: a live episode's decision at the newest bar, stepped once the next bar exists."""

    raw_text: str | None
    messages: list[dict[str, Any]]
    usage: dict[str, int] | None
    cost_usd: float | None
    requests: int
    retries: int
    endpoint_errors: int
    errors: list[str]
    commit_arguments: Any
    timing: dict[str, float]
    endpoint_failed: bool
    tokens: dict[str, Any]


class _EpisodeFields(TypedDict):
    type: Literal["episode"]
    episode: int
    #: the episode's :meth:`~finenvs.tasks.EpisodeSpec.to_dict`
    spec: dict[str, Any]
    status: Literal["complete", "failed"]
    label: str
    tools_mode: str
    steps: int
    look_ahead_attempts: int
    #: the family's episode metrics (None: a failed episode)
    metrics: dict[str, Any] | None
    #: the episode's :class:`~finenvs.evaluation.session.EpisodeTotals`
    totals: dict[str, Any]


class EpisodeRecord(_EpisodeFields, total=False):
    """An ``"episode"`` line: how an episode ended and what it scored."""

    #: a failed episode: why, and the attempt of its failed decision
    reason: str
    failed_decision: dict[str, Any]
    #: an episode failed because the endpoint failed on every one of its decisions: how many they were
    endpoint_failed_decisions: int


#: A trajectory line, without the chain fields (:data:`CHAIN_FIELDS`) readers strip.
TrajectoryRecord = StepRecord | PendingRecord | EpisodeRecord


class RunPlan(TypedDict):
    """run.json's ``plan``: how many episodes the run holds and their labels."""

    episodes: int
    labels: list[str]


class RunIntegrity(TypedDict):
    """run.json's ``integrity`` block: the identity digests, the chain's genesis, and its head when last written."""

    algorithm: str
    #: the sha256 of each identity field (:data:`IDENTITY_FIELDS`)
    identity: dict[str, str]
    genesis: str
    lines: int
    final: str


class RunOutcome(TypedDict):
    """How one episode of a run ended (run.json's ``outcomes``)."""

    episode: int
    status: str
    decisions: int
    message: str | None


class _RunFields(TypedDict):
    format: int
    run: str
    kind: str
    families: list[str]
    created_utc: str
    finenvs_version: str
    data_manifest: str
    agent: dict[str, Any]
    config: dict[str, Any]
    #: each episode's :meth:`~finenvs.tasks.EpisodeSpec.to_dict`
    episodes: list[dict[str, Any]]
    plan: RunPlan
    #: ``running``, then how the run stopped (``complete``, ``waiting``, ``incomplete``, ``interrupted``, ...)
    status: str


class RunMeta(_RunFields, total=False):
    """A run's ``run.json`` (:func:`run_metadata` makes it; read back from a folder, check it first:
    :func:`~finenvs.evaluation.integrity.verify_chain`)."""

    #: the price table token costs came from (``finenvs llm``)
    prices: dict[str, Any]
    integrity: RunIntegrity
    seal: _seal.RunSeal
    resumed_utc: list[str]
    finished_utc: str
    outcomes: list[RunOutcome]
    note: str


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None and numpy scalars as Python numbers (strict JSON)."""
    cls = obj.__class__  # the exact JSON types first (every step record is walked): the same results, sooner
    if cls is str or cls is int or cls is bool or obj is None:
        return obj
    if cls is dict:
        return {str(k): v if v.__class__ is str else jsonable(v) for k, v in obj.items()}
    if cls is list:
        return [v if v.__class__ is str else jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return jsonable(obj.item())
    return obj


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ (missing values equal NaN, as :func:`same_number`); [] if equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in dict.fromkeys([*a, *b]):
            out += differences(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: {len(a)} values vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, (int, float, type(None))) and isinstance(b, (int, float, type(None))) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        return [] if same_number(a, b) else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {str(a)[:60]!r} vs {str(b)[:60]!r}"]


def same_number(a: Any, b: Any) -> bool:
    """Equality where a missing value (None) equals NaN: how NaN round-trips through strict JSON."""
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    return a == b


def json_line(data: Any) -> bytes:
    """One strict-JSON line (no newline) as UTF-8 bytes. Text that UTF-8 cannot carry (a lone surrogate such as
    ``"\\ud800"`` in a model's reply) makes that line ASCII with ``\\u`` escapes, which parse back to the same
    string."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def _canonical(value: Any) -> bytes:
    return _seal.canonical(jsonable(value))


def run_identity(meta: Mapping[str, Any]) -> dict[str, str]:
    """The sha256 of each identity field of a run.json (:data:`IDENTITY_FIELDS` that it has)."""
    return {key: sha256_hex(_canonical(meta[key])) for key in IDENTITY_FIELDS if key in meta}


def chain_genesis(identity: dict[str, str]) -> str:
    """The digest line 1 of a trajectory chains from: the sha256 of the run's identity digests."""
    return sha256_hex(_canonical(identity))


def start_integrity(meta: RunMeta) -> RunMeta:
    """Add the ``integrity`` block of a new run to its run.json (no lines yet: the final digest is the genesis)."""
    identity = run_identity(meta)
    genesis = chain_genesis(identity)
    meta["integrity"] = {"algorithm": "sha256", "identity": identity, "genesis": genesis, "lines": 0,
                         "final": genesis}
    return meta


def record_chain_head(meta: RunMeta, writer: TrajectoryWriter) -> None:
    """Put the writer's line count and last digest into run.json's ``integrity`` block (before writing it)."""
    if writer.chained and isinstance(meta.get("integrity"), dict):
        meta["integrity"].update({"lines": writer.lines, "final": writer.digest})


class TrajectoryWriter:
    """Appends whole JSON lines to a file, flushing each one.

    Args:
        path: The ``trajectories.jsonl`` file.
        genesis: The run's chain genesis (:func:`chain_genesis`): every line then carries ``seq``, ``prev`` and
            ``mac``; an existing file is continued from its last line. None: plain lines (a run of format 2).
        key: The run key the lines' MACs are made with (default, for a chained file: this user's,
            :func:`~finenvs.evaluation.seal.load_or_create_key`).
        head: ``(lines, digest of the last line)`` of an existing file that
            :func:`~finenvs.evaluation.integrity.verify_chain` checked: the chain continues from it (the file is
            not read again).

    Raises:
        ValueError: The existing file ends in a partial line (repair it first: :func:`read_trajectories`).
    """

    def __init__(self, path: Path, *, genesis: str | None = None, key: bytes | None = None,
                 head: tuple[int, str] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.chained = genesis is not None
        self._key = (key if key is not None else _seal.load_or_create_key()) if self.chained else None
        #: whole lines in the file and the digest of the last one (the genesis before the first)
        self.lines, self.digest = 0, genesis or ""
        if self.chained and head is not None:
            self.lines, self.digest = head
        elif self.chained and self.path.is_file():
            raw = self.path.read_bytes()
            if raw and not raw.endswith(b"\n"):
                raise ValueError(f"{self.path}: ends in a partial line; repair it before appending")
            lines = raw.split(b"\n")[:-1]
            if lines:
                self.lines, self.digest = len(lines), sha256_hex(lines[-1])
        self._lock = threading.Lock()
        self._fh = open(self.path, "ab")  # noqa: SIM115  (closed in close())

    def write(self, record: TrajectoryRecord) -> None:
        data = jsonable(record)
        with self._lock:
            if self.chained:
                data = {**{k: v for k, v in data.items() if k not in CHAIN_FIELDS}, "seq": self.lines + 1,
                        "prev": self.digest}
            line = json_line(data)
            if self._key is not None:
                line = _seal.seal_line(self._key, line)
            self._fh.write(line + b"\n")
            self._fh.flush()
            self.lines += 1
            self.digest = sha256_hex(line)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def read_trajectories(path: Path, *, repair: bool = False) -> tuple[list[dict[str, Any]], int]:
    """Records of a JSONL file, skipping a partial or corrupt last line (the chain fields stripped; check the
    chain with :func:`~finenvs.evaluation.integrity.verify_chain`). A run's lines are :data:`TrajectoryRecord`
    as written; read back, they are whatever the file holds until the chain is checked.

    Args:
        path: The ``trajectories.jsonl`` file (missing = no records).
        repair: Cut a partial last line off the file (before appending to it).

    Returns:
        ``(records, dropped)`` where ``dropped`` is 0 or 1.

    Raises:
        ValueError: A line other than the last is not valid JSON (names the line).
    """
    path = Path(path)
    if not path.is_file():
        return [], 0
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    records: list[dict[str, Any]] = []
    dropped = 0
    kept_bytes = 0
    for i, line in enumerate(lines):
        is_last = i == len(lines) - 1
        if not line.strip():
            kept_bytes += len(line) + (0 if is_last else 1)
            continue
        try:
            record = json.loads(line)
            if is_last:  # a last line without its newline was cut mid-write
                raise ValueError("no newline")
        except ValueError as exc:
            if is_last or (i == len(lines) - 2 and not lines[-1].strip()):
                dropped = 1
                break
            raise ValueError(f"{path}: line {i + 1} is not valid JSON ({exc})") from exc
        if isinstance(record, dict):
            for key in CHAIN_FIELDS:
                record.pop(key, None)
        records.append(record)
        kept_bytes += len(line) + 1
    if dropped and repair:
        with open(path, "r+b") as fh:
            fh.truncate(kept_bytes)
    return records, dropped


def run_format(meta: Mapping[str, Any]) -> int:
    """run.json's format number (0 when it has none, or none that is a format number: an integer 0..1000)."""
    value = meta.get("format")
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 1000 else 0


@dataclass
class RunFiles:
    """Paths of a run folder."""

    root: Path
    run: Path = field(init=False)
    trajectories: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.run = self.root / RUN_FILE
        self.trajectories = self.root / TRAJECTORY_FILE


def run_metadata(root: Path, kind: str, *, agent: dict[str, Any], config: dict[str, Any],
                 episodes: list[EpisodeSpec], **extra: Any) -> RunMeta:
    """The ``run.json`` of a new run folder: what ran, on which code and data, the plan (episode count and
    labels) and the integrity block its trajectory chain starts from (:func:`start_integrity`)."""
    import datetime as _dt

    import finenvs
    from finenvs.data.catalog import default_catalog

    families = sorted({task_of(e.env_id).family for e in episodes})
    meta = cast(RunMeta, {
        "format": FORMAT_VERSION,
        "run": Path(root).name,
        "kind": kind,
        "families": families,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "finenvs_version": finenvs.__version__,
        "data_manifest": default_catalog().data_digest,
        "agent": agent,
        "config": config,
        "episodes": [s.to_dict() for s in episodes],
        "plan": {"episodes": len(episodes), "labels": [s.label() for s in episodes]},
        "status": "running",
        **extra,
    })
    return start_integrity(meta)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write a JSON file atomically (a crash never leaves half of it): strict JSON, indented, UTF-8."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        payload = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped (see json_line)
        payload = (json.dumps(jsonable(data), indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
    with open(tmp, "wb") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_run_json(path: Path, meta: RunMeta, *, key: bytes | None = None) -> None:
    """Seal a run's metadata and write it atomically: the one way run.json is written, so its ``seal`` (the MAC of
    everything else in it: integrity block, status, outcomes, configuration) is always fresh.

    Args:
        path: The run's ``run.json``.
        meta: Its content (a ``seal`` already in it is replaced).
        key: The run key (default: this user's, :func:`~finenvs.evaluation.seal.load_or_create_key`).
    """
    key = key if key is not None else _seal.load_or_create_key()
    write_json_atomic(path, _seal.seal_run(jsonable(meta), key))

__all__ = [
    "CHAIN_FIELDS",
    "FORMAT_VERSION",
    "IDENTITY_FIELDS",
    "RUN_FILE",
    "SCORE_FILE",
    "SEALED_FORMAT",
    "TRAJECTORY_FILE",
    "EpisodeRecord",
    "PendingRecord",
    "RunFiles",
    "RunIntegrity",
    "RunMeta",
    "RunOutcome",
    "RunPlan",
    "StepRecord",
    "TrajectoryRecord",
    "TrajectoryWriter",
    "chain_genesis",
    "differences",
    "json_line",
    "jsonable",
    "read_trajectories",
    "record_chain_head",
    "run_format",
    "run_identity",
    "run_metadata",
    "same_number",
    "sha256_hex",
    "start_integrity",
    "write_json_atomic",
    "write_run_json",
]
