"""Agent episodes as recorded trajectories: one session type for the LLM runner and the MCP server.

An :class:`EpisodeSession` owns one text env (the family's base env inside
:class:`~finenvs.wrappers.TextInterface`, as its task spec builds it), records
every tool call made between decisions, and writes one JSON line per decision
and one per finished episode to a run's ``trajectories.jsonl``; the episode's
metrics are the task spec's ``episode_metrics`` of the env's own infos. The same
format serves every family. A run folder holds:

* ``run.json`` — what ran: env, episodes (env kwargs, seed, options), agent,
  configuration, finenvs version, data manifest, status;
* ``trajectories.jsonl`` — records of ``"type": "step"`` (prompt, messages,
  tool calls and results, raw reply, parsed action and the env action it became
  (``env_action``), invalid reason, reward, equity, usage, timing) and
  ``"type": "episode"`` (status, the family's metrics, efficiency counts).

Every line is written whole and flushed, so an interrupted run leaves valid
JSONL (at worst a partial last line, which readers drop). Resuming replays the
recorded actions into a fresh env, checks each reward matches the record, and
continues. :func:`replay_episode` re-scores a trajectory offline from its
actions alone.

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
is therefore not enough. :func:`verify_chain` checks both and gives the
signature verdict: ``signed`` (every MAC verifies under this machine's key),
``unsigned here`` (sealed with another key: a run copied from another machine,
whose content the unkeyed chain still verifies), ``unsigned`` (a run of format 3
or older, recorded before the seal); ``finenvs score`` reports the first bad line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from finenvs.evaluation import seal as _seal
from finenvs.tasks import EpisodeSpec, TaskSpec, task_of
from finenvs.text.protocol import ParsedAction
from finenvs.tools.registry import ToolResult
from finenvs.wrappers.debate import Debate
from finenvs.wrappers.text import DEFAULT_HISTORY, TextInterface, split_text_kwargs

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


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None and numpy scalars as Python numbers (strict JSON)."""
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


def run_identity(meta: dict[str, Any]) -> dict[str, str]:
    """The sha256 of each identity field of a run.json (:data:`IDENTITY_FIELDS` that it has)."""
    return {key: sha256_hex(_canonical(meta[key])) for key in IDENTITY_FIELDS if key in meta}


def chain_genesis(identity: dict[str, str]) -> str:
    """The digest line 1 of a trajectory chains from: the sha256 of the run's identity digests."""
    return sha256_hex(_canonical(identity))


def start_integrity(meta: dict[str, Any]) -> dict[str, Any]:
    """Add the ``integrity`` block of a new run to its run.json (no lines yet: the final digest is the genesis)."""
    identity = run_identity(meta)
    genesis = chain_genesis(identity)
    meta["integrity"] = {"algorithm": "sha256", "identity": identity, "genesis": genesis, "lines": 0,
                         "final": genesis}
    return meta


def record_chain_head(meta: dict[str, Any], writer: TrajectoryWriter) -> None:
    """Put the writer's line count and last digest into run.json's ``integrity`` block (before writing it)."""
    if writer.chained and isinstance(meta.get("integrity"), dict):
        meta["integrity"].update(lines=writer.lines, final=writer.digest)


class TrajectoryWriter:
    """Appends whole JSON lines to a file, flushing each one.

    Args:
        path: The ``trajectories.jsonl`` file.
        genesis: The run's chain genesis (:func:`chain_genesis`): every line then carries ``seq``, ``prev`` and
            ``mac``; an existing file is continued from its last line. None: plain lines (a run of format 2).
        key: The run key the lines' MACs are made with (default, for a chained file: this user's,
            :func:`~finenvs.evaluation.seal.load_or_create_key`).
        head: ``(lines, digest of the last line)`` of an existing file that :func:`verify_chain` checked: the
            chain continues from it (the file is not read again).

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

    def write(self, record: dict[str, Any]) -> None:
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
    chain with :func:`verify_chain`).

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


@dataclass(frozen=True)
class IntegrityProblem:
    """Something in a run folder that its chain, its seals or its records say was changed after it was written."""

    file: str
    line: int | None
    message: str
    #: found by a keyed MAC (listed after what the unkeyed checks found in the same file: they say more)
    keyed: bool = False

    def __str__(self) -> str:
        return f"{self.file}{'' if self.line is None else f' line {self.line}'}: {self.message}"


@dataclass
class ChainCheck:
    """What :func:`verify_chain` found in a trajectory file."""

    #: ``(line number, record)`` of every whole line that parsed as a JSON object (chain fields stripped)
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    problems: list[IntegrityProblem] = field(default_factory=list)
    #: whole lines in the file
    lines: int = 0
    #: ``digests[n]``: the sha256 of line ``n`` (``digests[0]``: the genesis run.json's identity gives)
    digests: list[str] = field(default_factory=list)
    #: bytes after the last newline (a write cut off)
    partial: bool = False
    #: bytes of the file up to its last newline (what a resumed run keeps)
    whole_bytes: int = 0
    #: lines run.json recorded beyond the file's end (the file ends early: a problem, no crash does it)
    missing_lines: int = 0
    #: False: a run of format 2, recorded before the chain; nothing to verify
    chained: bool = True
    #: the signature verdict: ``signed``, ``unsigned here``, ``unsigned`` or ``invalid`` (module docstring)
    signature: str = _seal.UNSIGNED
    #: the key id run.json's seal names (None: no seal)
    key_id: str | None = None

    @property
    def final(self) -> str:
        return self.digests[-1] if self.digests else ""


def run_format(meta: dict[str, Any]) -> int:
    """run.json's format number (0 when it has none, or none that is a format number: an integer 0..1000)."""
    value = meta.get("format")
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 1000 else 0


#: ``verify_chain(key=...)`` default: this machine's run key, read when the check runs.
MACHINE_KEY: Any = object()


def verify_chain(path: Path, meta: dict[str, Any], *, key: bytes | None | Any = MACHINE_KEY) -> ChainCheck:
    """Check a trajectory file against its run.json: the identity digests, the chain of ``seq``/``prev`` line by
    line, the line count and final digest run.json recorded, and the keyed seals (run.json's ``seal``, every
    line's ``mac``).

    Problems name the first line that is wrong: for a changed line, the line itself (the next line's ``prev``
    no longer matches it). A partial last line after the lines run.json counted is reported in ``partial``, not
    as a problem (a crash leaves one; whether it may be there depends on the run's status, which ``finenvs score``
    judges; a resumed run drops it). Lines after the last line run.json recorded are a problem unless the run is
    still ``running`` (a resumed session that stopped before rewriting run.json); fewer whole lines than it
    recorded always are.

    The signature verdict (``check.signature``): ``signed`` when run.json's seal and every line's MAC verify
    under ``key``; ``invalid`` when the seal names ``key`` and a MAC does not verify (a problem names the field
    or line), or a keyed run lacks its seal or a line's MAC; ``unsigned here`` when the seal names another key
    (its content is then checked by the unkeyed chain only); ``unsigned`` for a run of format 3 or older.

    Args:
        path: The ``trajectories.jsonl`` file (missing = empty).
        meta: The run's run.json.
        key: The run key to verify the MACs with (default: this machine's, :func:`~finenvs.evaluation.seal.load_key`;
            None: no key, every sealed run is "unsigned here").

    Raises:
        finenvs.evaluation.seal.RunKeyError: This machine's key file exists but cannot be read.
    """
    path = Path(path)
    raw = path.read_bytes() if path.is_file() else b""
    parts = raw.split(b"\n")
    whole, tail = parts[:-1], parts[-1]
    check = ChainCheck(lines=len(whole), partial=bool(tail), whole_bytes=len(raw) - len(tail))
    name = path.name
    integrity = meta.get("integrity")
    fmt = run_format(meta)
    if not isinstance(integrity, dict) and fmt < 3:
        check.chained = False  # recorded before the chain
        for n, line in enumerate(whole, 1):
            try:
                record = json.loads(line) if line.strip() else None
            except ValueError as exc:
                raise ValueError(f"{path}: line {n} is not valid JSON ({exc})") from exc
            if isinstance(record, dict):
                check.records.append((n, record))
        return check

    def problem(file: str, line: int | None, message: str, keyed: bool = False) -> None:
        check.problems.append(IntegrityProblem(file, line, message, keyed))

    identity = run_identity(meta)
    genesis = chain_genesis(identity)
    run_changed = False
    recorded_lines: int | None = None
    recorded_final: str | None = None
    if not isinstance(integrity, dict):
        problem(RUN_FILE, None, "has no integrity block (identity digests, genesis, line count, final digest): "
                                "it was removed or run.json was rewritten")
        run_changed = True
    else:
        recorded = integrity.get("identity")
        if not isinstance(recorded, dict):
            problem(RUN_FILE, None, "integrity.identity (the digests of what the run is) is missing")
            run_changed = True
        else:
            changed = [k for k in dict.fromkeys([*recorded, *identity]) if recorded.get(k) != identity.get(k)]
            if changed:
                problem(RUN_FILE, None, f"{', '.join(changed)} changed after the run began (their digests in "
                                        "integrity.identity, and the chain's start, were made from other values)")
                run_changed = True
            elif integrity.get("genesis") != genesis:
                problem(RUN_FILE, None, "integrity.genesis is not the digest of integrity.identity")
                run_changed = True
        lines, final = integrity.get("lines"), integrity.get("final")
        if isinstance(lines, int) and not isinstance(lines, bool) and lines >= 0 and isinstance(final, str):
            recorded_lines, recorded_final = lines, final
        else:
            problem(RUN_FILE, None, f"integrity records no line count and final digest of {name} "
                                    f"(lines={str(lines)[:20]!r}, final={str(final)[:20]!r})")
    line_key = _check_run_seal(meta, fmt, key, check, problem)
    sealed = fmt >= SEALED_FORMAT
    bad_macs: list[int] = []  # lines whose MAC does not verify under the key
    no_macs: list[int] = []  # lines of a keyed run without a MAC
    macs_unkeyed: list[int] = []  # lines with a MAC in a run that says it is unkeyed
    check.digests.append(genesis)
    expected_prev, expected_seq, chained_line = genesis, 1, 0
    for n, line in enumerate(whole, 1):
        digest = sha256_hex(line)
        check.digests.append(digest)
        if not line.strip():
            problem(name, n, "is blank; the writer never writes a blank line (one was inserted)")
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            problem(name, n, f"is not JSON ({str(exc)[:80]}): a line was inserted or changed")
            continue
        if not isinstance(record, dict):
            problem(name, n, "is not a JSON object: a line was inserted or changed")
            continue
        seq, prev = record.pop("seq", None), record.pop("prev", None)
        record.pop(_seal.MAC_FIELD, None)
        check.records.append((n, record))
        if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(prev, str):
            problem(name, n, f"has no chain fields (seq={str(seq)[:16]!r}, prev={str(prev)[:16]!r}): it was not "
                             "written by this run's writer, or was edited")
        elif seq > expected_seq:
            gap = f"{expected_seq}" if seq == expected_seq + 1 else f"{expected_seq}..{seq - 1}"
            problem(name, n, f"is record {seq} of the chain; record(s) {gap} are missing before it (deleted or moved)")
        elif seq < expected_seq:
            problem(name, n, f"is record {seq} of the chain, expected {expected_seq}: a line repeated, moved or "
                             "copied from elsewhere")
        elif prev != expected_prev:
            if chained_line == 0:
                if not run_changed:
                    problem(name, n, f"does not chain from run.json's identity (prev {prev[:12]}..., genesis "
                                     f"{genesis[:12]}...): run.json or this line was changed")
            else:
                problem(name, chained_line, f"was changed after it was written (line {n} chained from digest "
                                            f"{prev[:12]}..., line {chained_line} now hashes to "
                                            f"{expected_prev[:12]}...), or line {n} does not belong after it")
        parts_of_line = _seal.split_line(line)
        if sealed and parts_of_line is None:
            no_macs.append(n)
        elif not sealed and parts_of_line is not None:
            macs_unkeyed.append(n)
        elif line_key is not None and parts_of_line is not None and not _seal.mac_ok(line_key, *parts_of_line):
            bad_macs.append(n)
        if isinstance(seq, int) and not isinstance(seq, bool):
            expected_seq = seq + 1
        else:
            expected_seq += 1
        expected_prev, chained_line = digest, n
    if no_macs:
        check.signature = _seal.INVALID
        problem(name, no_macs[0], "has no MAC (the keyed field every line of this run format ends with): it was not "
                                  f"written by this run's writer, or was edited{_more(no_macs)}")
    if macs_unkeyed:
        problem(name, macs_unkeyed[0], f"carries a MAC, yet run.json says run format {fmt} (unkeyed): a keyed run's "
                                       f"format was set back{_more(macs_unkeyed)}")
    if bad_macs:
        check.signature = _seal.INVALID
        problem(name, bad_macs[0], "its MAC does not verify under this machine's run key: it was changed (and the "
                                   f"chain recomputed) after it was written{_more(bad_macs)}", keyed=True)
    have = len(whole)
    stopped = meta.get("status") != "running"
    if recorded_lines is not None and recorded_final is not None:
        if recorded_lines > have:
            check.missing_lines = recorded_lines - have
            problem(name, have + 1, ("is cut off (no newline)" if check.partial else "is missing") +
                    f": run.json recorded {recorded_lines} whole line(s) and the file has {have}: line(s) were "
                    "removed or cut from its end after the run recorded them (no crash does that)")
        elif check.digests[recorded_lines] != recorded_final and not (recorded_lines == 0 and run_changed):
            where = recorded_lines or None
            what = (f"differs from the final digest run.json recorded for its first {recorded_lines} line(s): it, "
                    "or a line before it whose chain was recomputed, was changed after the run stopped"
                    ) if recorded_lines else (
                "integrity.final is not the genesis of a run that wrote no line")
            problem(name if where else RUN_FILE, where, what)
        if recorded_lines < have and stopped:
            problem(name, recorded_lines + 1, f"comes after the {recorded_lines} line(s) run.json recorded when the "
                                              f"run stopped (status {str(meta.get('status'))[:40]!r}): appended later")
    return check


def _more(lines: list[int]) -> str:
    """``; so do N later line(s) (a, b, c, ...)`` for the lines after the first of a list ("" for one line)."""
    if len(lines) < 2:
        return ""
    return (f"; so do {len(lines) - 1} later line(s) ({', '.join(map(str, lines[1:4]))}"
            + (", ...)" if len(lines) > 4 else ")"))


def _check_run_seal(meta: dict[str, Any], fmt: int, key: Any, check: ChainCheck, problem: Any) -> bytes | None:
    """Set ``check.signature`` from run.json's seal; returns the key the lines' MACs are to be checked with
    (None: they are not checked, the seal names another key or there is none)."""
    seal = meta.get("seal")
    if fmt < SEALED_FORMAT:
        check.signature = _seal.UNSIGNED
        if seal is not None:
            problem(RUN_FILE, None, f"carries a seal, yet says run format {fmt} (unkeyed): a keyed run's format was "
                                    "set back")
        return None
    if not isinstance(seal, dict) or not isinstance(seal.get("key_id"), str) or \
            seal.get("algorithm") != _seal.ALGORITHM:
        check.signature = _seal.INVALID
        problem(RUN_FILE, None, f"has no {_seal.ALGORITHM} seal (algorithm, key_id, mac), which every run.json of "
                                f"run format {fmt} carries: it was removed or run.json was rewritten", keyed=True)
        return None
    check.key_id = seal["key_id"][:64]
    machine = _seal.load_key() if key is MACHINE_KEY else key
    if machine is None or check.key_id != _seal.key_id(machine):
        check.signature = _seal.UNSIGNED_HERE
        return None
    if _seal.run_seal_ok(meta, machine):
        check.signature = _seal.SIGNED
    else:
        check.signature = _seal.INVALID
        try:
            fields = _seal.changed_fields(meta, machine)
        except ValueError:
            fields = []
        what = ", ".join(str(f)[:60] for f in fields[:6]) + (", ..." if len(fields) > 6 else "") if fields else "a field"
        problem(RUN_FILE, None, f"{what} changed after the run wrote it: its seal (the MAC under this machine's "
                                "run key) does not match", keyed=True)
    return machine


def make_text_env(spec: EpisodeSpec, *, history: int = DEFAULT_HISTORY, tool_max_chars: int | None = None,
                  **toolbox_kwargs: Any) -> TextInterface:
    """The text env of an episode: its family's base env (with the spec's ``text_kwargs``) in a
    :class:`~finenvs.wrappers.TextInterface` with the family's tools (the wrapper's own arguments among the
    episode's ``env_kwargs``, e.g. ``tools="none"``, go to the wrapper)."""
    task = task_of(spec.env_id)
    env_kwargs, wrapper_kwargs = split_text_kwargs(spec.env_kwargs)
    base = gym.make(task.env_id, **{**task.text_kwargs, **env_kwargs})
    kwargs: dict[str, Any] = {**toolbox_kwargs, **wrapper_kwargs}
    if tool_max_chars is not None:
        kwargs["tool_max_chars"] = tool_max_chars
    return TextInterface(base, history=history, toolset=task.tools, **kwargs)


def make_base_env(spec: EpisodeSpec) -> gym.Env:
    """The env an episode's recorded env actions replay into: its family's base env with the spec's
    ``text_kwargs``, under :class:`~finenvs.wrappers.debate.Debate` when the episode is debated (the text
    wrapper's own arguments, such as ``tools``, change no reward and are left out)."""
    task = task_of(spec.env_id)
    env_kwargs, wrapper_kwargs = split_text_kwargs(spec.env_kwargs)
    env = gym.make(task.env_id, **{**task.text_kwargs, **env_kwargs})
    return Debate(env) if wrapper_kwargs.get("debate") else env


class ReplayMismatch(RuntimeError):
    """A recorded trajectory does not replay to the same rewards (data, code or env arguments changed)."""


def _add(total: int | None, value: Any) -> int | None:
    """Token sums: unknown (None) anywhere makes the total unknown, never 0."""
    return None if total is None or value is None else total + int(value)


@dataclass
class EpisodeTotals:
    """Efficiency counts of one episode (token counts and cost are None when any step's are unknown)."""

    decisions: int = 0
    format_errors: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    look_ahead_attempts: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    requests: int = 0
    retries: int = 0
    endpoint_errors: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0

    def add_step(self, record: dict[str, Any]) -> None:
        self.decisions += 1
        self.format_errors += 1 if record.get("invalid") else 0
        calls = record.get("tool_calls") or []
        self.tool_calls += len(calls)
        self.tool_errors += sum(1 for c in calls if not c.get("ok", True))
        self.look_ahead_attempts += int(record.get("look_ahead") or 0)
        usage = record.get("usage")
        self.prompt_tokens = _add(self.prompt_tokens, None if usage is None else usage.get("prompt_tokens"))
        self.completion_tokens = _add(self.completion_tokens, None if usage is None else usage.get("completion_tokens"))
        self.requests += int(record.get("requests") or 0)
        self.retries += int(record.get("retries") or 0)
        self.endpoint_errors += int(record.get("endpoint_errors") or 0)
        cost = record.get("cost_usd")
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + float(cost)
        self.seconds += float((record.get("timing") or {}).get("seconds") or 0.0)

    def merge(self, other: EpisodeTotals) -> None:
        """Add another episode's counts (run totals)."""
        for name in ("decisions", "format_errors", "tool_calls", "tool_errors", "look_ahead_attempts", "requests",
                     "retries", "endpoint_errors"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.prompt_tokens = _add(self.prompt_tokens, other.prompt_tokens)
        self.completion_tokens = _add(self.completion_tokens, other.completion_tokens)
        self.cost_usd = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        self.seconds += other.seconds

    @property
    def tokens(self) -> int | None:
        return None if self.prompt_tokens is None or self.completion_tokens is None else (
            self.prompt_tokens + self.completion_tokens)


class EpisodeSession:
    """One agent episode: a text env, its tool calls and its trajectory records.

    Args:
        spec: The episode.
        writer: Where records go (None: keep them in memory only, in ``records``).
        history: Recent decisions in the prompt.
        tool_max_chars: Cap on tool results.
        recorded: Step records of an earlier, interrupted attempt: their actions
            are replayed (rewards checked) before the session continues.
        live: A live run (``end="latest"``): an episode that reaches the newest bar the data holds is waiting
            (``waiting``), not finished; no episode record is written, and a later session over more data
            continues it.
        pending: A live run's recorded ``"pending"`` decision (taken at the newest bar, before the next bar
            existed): committed as the next step as soon as the data has that bar.
        toolbox_kwargs: Passed to :class:`~finenvs.tools.ToolBox` (document stores).

    Raises:
        ReplayMismatch: ``recorded`` does not replay to the recorded rewards.
    """

    _pending_calls: list[Any] | None  # a pending decision's tool calls, until its step line is written

    def __init__(
        self,
        spec: EpisodeSpec,
        *,
        writer: TrajectoryWriter | None = None,
        history: int = DEFAULT_HISTORY,
        tool_max_chars: int | None = None,
        recorded: list[dict[str, Any]] | None = None,
        env: TextInterface | None = None,
        live: bool = False,
        pending: dict[str, Any] | None = None,
        **toolbox_kwargs: Any,
    ) -> None:
        self.spec = spec
        self.live = live
        #: A live episode at the newest bar: its next decision waits for the next bar (``finenvs data add``).
        self.waiting = False
        self._reached_open_end = False
        self.task: TaskSpec = task_of(spec.env_id)
        self.writer = writer
        #: the session closes its env only if it made it (a pooled env goes back to its pool)
        self._owns_env = env is None
        self.env = env if env is not None else make_text_env(spec, history=history, tool_max_chars=tool_max_chars,
                                                             **toolbox_kwargs)
        self.protocol = self.env.protocol
        self.prompt, self.reset_info = self.env.reset(seed=spec.seed, options=spec.options)
        self.step_index = 0
        self.done = False
        self.last_info: dict[str, Any] = dict(self.reset_info)
        self.infos: list[dict[str, Any]] = []
        self.totals = EpisodeTotals()
        self.records: list[dict[str, Any]] = []
        self.episode_record: dict[str, Any] | None = None
        self._pending: list[ToolResult] = []
        self._began = time.perf_counter()
        for record in recorded or []:
            self._replay(record)
        #: The recorded pending decision still waiting for its bar (None when there is none or it was committed).
        self.pending: dict[str, Any] | None = None
        if pending is not None and pending.get("step") == self.step_index:
            if self.done or self.at_open_end():
                self.pending = pending
            else:
                self._commit_pending(pending)
        if self.at_open_end():
            self.waiting = True

    # ------------------------------------------------------------------ state
    @property
    def label(self) -> str:
        """What the episode is about: its symbol (a pairs episode: the pair once chosen) or its task id."""
        info = self.reset_info
        return str(info.get("symbol") or self.last_info.get("pair") or info.get("task_id") or "")

    symbol = label

    @property
    def date(self) -> str:
        """The env's date of the current decision ("" for a task without one, e.g. an analytical question)."""
        date = self.last_info.get("date")
        return "" if date is None else str(date)

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.env.tool_specs()

    # ------------------------------------------------------------------ acting
    def call_tool(self, name: Any, arguments: Any = None) -> ToolResult:
        """Call a tool at the current decision (recorded with the next committed step)."""
        if self.done:
            message = "the episode has ended; no more tool calls"
            return ToolResult(str(name)[:80], None, False, {"error": message}, message)
        result = self.env.call_tool(name, arguments)
        self._pending.append(result)
        return result

    def commit(
        self,
        parsed: ParsedAction,
        *,
        raw_text: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        usage: dict[str, int] | None = None,
        cost_usd: float | None = 0.0,
        requests: int = 0,
        retries: int = 0,
        endpoint_errors: int = 0,
        errors: list[str] | None = None,
        timing: dict[str, float] | None = None,
        extra: dict[str, Any] | None = None,
        resolve: bool = True,
    ) -> dict[str, Any]:
        """Take the decision: step the env, write the step record (and the episode record at the end).

        Returns:
            The step record.

        Raises:
            RuntimeError: The episode has already ended.
        """
        if self.done:
            raise RuntimeError("the episode has ended; reset a new session")
        prompt = self.prompt
        date = self.date
        obs, reward, terminated, truncated, info = self.env.step_parsed(parsed, action_text=raw_text, resolve=resolve)
        taken = getattr(self.env, "last_parsed", None) or parsed  # after the env's stage check, if it has one
        calls = self._pending
        self._pending = []
        recorded_calls, self._pending_calls = getattr(self, "_pending_calls", None), None
        record: dict[str, Any] = {
            "type": "step",
            "episode": self.spec.index,
            "step": self.step_index,
            "date": date,
            "symbol": self.label or str(info.get("pair", "")),
            "prompt": prompt,
            "messages": messages or [],
            "tool_calls": recorded_calls if recorded_calls is not None else [
                {**c.record(), "result": c.data} for c in calls
            ],
            "raw_text": raw_text,
            "action": taken.name,
            "env_action": self.protocol.encode(taken.action),
            "via": taken.via,
            "invalid": taken.invalid,
            "reasoning": taken.reasoning,
            "reward": float(reward),
            "equity": info.get("equity"),
            "position": info.get("position"),
            "next_date": info.get("date"),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "look_ahead": (sum(int(c.get("look_ahead") or 0) for c in recorded_calls) if recorded_calls is not None
                           else sum(c.look_ahead for c in calls)),
            "usage": usage,
            "cost_usd": cost_usd,
            "requests": requests,
            "retries": retries,
            "endpoint_errors": endpoint_errors,
            "errors": errors or [],
            "timing": timing or {},
        }
        if isinstance(info.get("debate"), dict):  # a debated episode: the counter-argument, the multiplier
            record["debate"] = jsonable(info["debate"])
        if taken is not parsed and (taken.name, taken.invalid) != (parsed.name, parsed.invalid):
            # the reply read as one word, the env's stage check took another: keep both
            record["reply_action"], record["reply_valid"] = parsed.name, parsed.valid
        if extra:
            record.update(extra)
        self._advance(record, obs, info, terminated, truncated)
        return record

    def at_open_end(self) -> bool:
        """A live episode whose next decision has to wait for a later bar (recorded as pending until then).

        A live env keeps an open window's position at the data's newest bar (reset info ``open_end``:
        FinTrading-v0, FinHedging-v0, FinReport-v0) and truncates there: the decision at that bar is the one that
        waits. An env without ``open_end`` never waits (its episode ends with its data)."""
        if not self.live or self.done:
            return False
        return bool(self.reset_info.get("open_end")) and self._reached_open_end

    def hold(self, parsed: ParsedAction, **fields: Any) -> dict[str, Any]:
        """A live episode waiting at its newest bar: record the decision taken there as ``"pending"`` (the env
        cannot step it before the next bar exists); a later session commits it (:meth:`_commit_pending`).

        Returns:
            The pending record.
        """
        if not self.waiting:
            raise RuntimeError("only a live episode waiting at its newest bar holds a pending decision")
        calls, self._pending = self._pending, []
        text_action = getattr(self.env.unwrapped, "text_action", None)
        parsed = text_action(parsed) if text_action is not None else parsed  # the env's stage check, as on commit
        record: dict[str, Any] = {
            "type": "pending", "episode": self.spec.index, "step": self.step_index, "date": self.date,
            "symbol": self.label, "prompt": self.prompt, "tool_calls": [{**c.record(), "result": c.data}
                                                                        for c in calls],
            "action": parsed.name, "env_action": self.protocol.encode(parsed.action), "via": parsed.via,
            "invalid": parsed.invalid, "reasoning": parsed.reasoning, **fields,
        }
        self.pending = record
        if self.writer is not None:
            self.writer.write(record)
        return record

    def _commit_pending(self, record: dict[str, Any]) -> None:
        """Step a recorded pending decision now that its bar exists: the step line carries what the pending
        line recorded (prompt, messages, tool calls, usage) and the reward the new bar gives."""
        parsed = ParsedAction(self.protocol.decode(record.get("env_action")), str(record.get("action")),
                              record.get("invalid"), record.get("via", "default"), record.get("reasoning", ""))
        keep: dict[str, Any] = {k: record[k] for k in ("messages", "usage", "cost_usd", "requests", "retries",
                                                       "endpoint_errors", "errors", "timing", "commit_arguments")
                                if k in record}
        self._pending_calls = list(record.get("tool_calls") or [])
        self.commit(parsed, raw_text=record.get("raw_text"), messages=keep.pop("messages", None),
                    usage=keep.pop("usage", None), cost_usd=keep.pop("cost_usd", None),
                    requests=keep.pop("requests", 0), retries=keep.pop("retries", 0),
                    endpoint_errors=keep.pop("endpoint_errors", 0), errors=keep.pop("errors", None),
                    timing=keep.pop("timing", None),
                    extra={**keep, "prompt": record.get("prompt"), "decided_pending": record.get("date")},
                    resolve=False)

    def fail(self, reason: str, **attempt: Any) -> dict[str, Any]:
        """End the episode as failed (HERCULEAN's rule: no valid decision after its attempts): no metrics, "—"
        in tables. ``attempt`` (messages, raw text, usage, errors of the failed decision) is kept in the record."""
        self.done = True
        calls, self._pending = self._pending, []
        self.episode_record = {
            "type": "episode", "episode": self.spec.index, "spec": self.spec.to_dict(), "status": "failed",
            "label": self.label, "tools_mode": self.env.tools_mode, "steps": self.step_index, "reason": reason,
            "metrics": None,
            "look_ahead_attempts": int(self.last_info.get("look_ahead_attempts", 0)) + sum(c.look_ahead for c in calls),
            "totals": asdict(self.totals),
            "failed_decision": {**attempt, "tool_calls": [{**c.record(), "result": c.data} for c in calls]},
        }
        if self.writer is not None:
            self.writer.write(self.episode_record)
        return self.episode_record

    def _advance(self, record: dict[str, Any], obs: str, info: dict[str, Any], terminated: bool, truncated: bool,
                 *, write_step: bool = True) -> None:
        self.step_index += 1
        self.prompt = obs
        self.last_info = info
        self.infos.append(info)
        self.totals.add_step(record)
        self.records.append(record)
        if self.writer is not None and write_step:
            self.writer.write(record)
        if truncated and not terminated and self.live and self.reset_info.get("open_end"):
            self._reached_open_end = True  # the data's newest bar of an open window: the position is still held
            self.waiting = True
        elif not (terminated or truncated) and self.at_open_end():  # the next decision waits for the next bar
            self.waiting = True
        elif terminated or truncated:
            self.done = True
            self.episode_record = self._episode_record(info)
            if self.writer is not None:
                self.writer.write(self.episode_record)

    def _replay(self, record: dict[str, Any]) -> None:
        if self.done:
            raise ReplayMismatch(f"{self.spec.label()}: recorded steps continue past the episode's end")
        parsed = ParsedAction(self.protocol.decode(record.get("env_action")), str(record.get("action")),
                              record.get("invalid"), record.get("via", "default"), record.get("reasoning", ""))
        try:
            obs, reward, terminated, truncated, info = self.env.step_parsed(parsed, resolve=False)
        except (ValueError, TypeError) as exc:
            raise ReplayMismatch(f"{self.spec.label()} step {self.step_index}: the recorded action is not an action "
                                 f"of the env ({exc})") from None
        if not same_number(float(reward), record.get("reward")) or record.get("step") != self.step_index:
            raise ReplayMismatch(
                f"{self.spec.label()} step {self.step_index}: replayed reward {reward!r} differs from the recorded "
                f"{record.get('reward')!r}; the data, the code or the env arguments changed since the run"
            )
        self._advance(dict(record), obs, info, terminated, truncated, write_step=False)  # already in the file

    def _episode_record(self, info: dict[str, Any]) -> dict[str, Any]:
        metrics = self.task.metrics_of_episode(self.env.unwrapped, self.reset_info, self.infos)
        return {
            "type": "episode",
            "episode": self.spec.index,
            "spec": self.spec.to_dict(),
            "status": "complete",
            "label": metrics.get("label") or self.label,
            "tools_mode": self.env.tools_mode,
            "steps": self.step_index,
            "look_ahead_attempts": int(info.get("look_ahead_attempts", 0)),
            "metrics": jsonable(metrics),
            "totals": asdict(self.totals),
        }

    def close(self) -> None:
        if self._owns_env:
            self.env.close()


class EnvPool:
    """Text envs of one run, reused across its episodes: an episode takes a free env of its arguments (or a new
    one) and gives it back when it ends; ``reset`` starts every episode afresh. Building an env can cost more
    than an episode (FinQA-v0 generates its question bank, FinAudit-v0 reads its filings)."""

    def __init__(self, *, history: int = DEFAULT_HISTORY, tool_max_chars: int | None = None) -> None:
        self.history, self.tool_max_chars = history, tool_max_chars
        self._free: dict[str, list[TextInterface]] = {}

    @staticmethod
    def _key(spec: EpisodeSpec) -> str:
        return spec.env_id + json.dumps(spec.env_kwargs, sort_keys=True, default=str)

    def take(self, spec: EpisodeSpec) -> TextInterface:
        free = self._free.get(self._key(spec))
        return free.pop() if free else make_text_env(spec, history=self.history, tool_max_chars=self.tool_max_chars)

    def give(self, spec: EpisodeSpec, env: TextInterface) -> None:
        self._free.setdefault(self._key(spec), []).append(env)

    def close(self) -> None:
        for envs in self._free.values():
            for env in envs:
                env.close()
        self._free.clear()


def replay_episode(spec: EpisodeSpec, actions: list[Any], *, complete: bool = True, envs: dict[str, Any] | None = None
                   ) -> tuple[list[float], dict[str, Any] | None, dict[str, Any]]:
    """Replay recorded env actions (as the trajectory encoded them) into a fresh env of the episode.

    The offline re-scorer: it needs only the run's episode spec and the recorded
    actions, not the agent, the tools or the endpoint.

    Args:
        spec: The episode.
        actions: The recorded ``env_action`` of every step, in order.
        complete: The actions must end the episode (False: a failed episode's prefix; no metrics).
        envs: Base envs to reuse across the episodes of a run, by arguments (reset starts each afresh);
            None builds one for this episode and closes it.

    Returns:
        ``(rewards, episode metrics or None, final info)``.

    Raises:
        ReplayMismatch: An action is not an action of the env, or the episode ends early (or, with
            ``complete``, not at all).
    """
    task = task_of(spec.env_id)
    key = EnvPool._key(spec)
    env = envs.get(key) if envs is not None else None
    if env is None:
        env = make_base_env(spec)
        if envs is not None:
            envs[key] = env
    base: Any = env.unwrapped  # a family's env: it has a text protocol
    protocol = base.text_protocol
    try:
        _, reset_info = env.reset(seed=spec.seed, options=spec.options)
        rewards: list[float] = []
        infos: list[dict[str, Any]] = []
        done = False
        for k, action in enumerate(actions):
            if done:
                raise ReplayMismatch(f"{spec.label()}: the episode ends after {k} of {len(actions)} recorded actions")
            try:
                _, reward, terminated, truncated, info = env.step(protocol.decode(action))
            except (ValueError, TypeError, KeyError) as exc:
                raise ReplayMismatch(f"{spec.label()} step {k}: the recorded action is not an action of "
                                     f"{spec.env_id} ({str(exc)[:200]})") from None
            rewards.append(float(reward))
            infos.append(info)
            done = terminated or truncated
        if not complete:
            return rewards, None, infos[-1] if infos else reset_info
        if not done:
            raise ReplayMismatch(f"{spec.label()}: the {len(actions)} recorded actions do not end the episode")
        metrics = jsonable(task.metrics_of_episode(env.unwrapped, reset_info, infos))
        return rewards, metrics, infos[-1]
    finally:
        if envs is None:
            env.close()


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
                 episodes: list[EpisodeSpec], **extra: Any) -> dict[str, Any]:
    """The ``run.json`` of a new run folder: what ran, on which code and data, the plan (episode count and
    labels) and the integrity block its trajectory chain starts from (:func:`start_integrity`)."""
    import datetime as _dt

    import finenvs
    from finenvs.data.catalog import default_catalog

    families = sorted({task_of(e.env_id).family for e in episodes})
    meta = {
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
    }
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


def write_run_json(path: Path, meta: dict[str, Any], *, key: bytes | None = None) -> None:
    """Seal a run's metadata and write it atomically: the one way run.json is written, so its ``seal`` (the MAC of
    everything else in it: integrity block, status, outcomes, configuration) is always fresh.

    Args:
        path: The run's ``run.json``.
        meta: Its content (a ``seal`` already in it is replaced).
        key: The run key (default: this user's, :func:`~finenvs.evaluation.seal.load_or_create_key`).
    """
    key = key if key is not None else _seal.load_or_create_key()
    write_json_atomic(path, _seal.seal_run(jsonable(meta), key))


def open_run_to_resume(root: Path | str) -> tuple[dict[str, Any], ChainCheck]:
    """A run folder's run.json and its checked trajectory chain, for continuing the run.

    Only a run that this machine's key signed, and whose chain holds, is continued: whatever a resumed run
    replays or steps (recorded actions, a pending live decision, its configuration) comes from verified records.

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: One line naming why it is not continued: run.json unreadable, a problem in the folder
            (tampered), or a signature other than ``signed`` (another machine's key, a run of an older format).
    """
    files = RunFiles(Path(root))
    if not files.run.is_file():
        raise FileNotFoundError(f"{files.root}: no {RUN_FILE} here; not a finenvs run folder")
    try:
        meta = json.loads(files.run.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{files.run}: cannot be read as JSON ({str(exc)[:120]}); the run is not continued") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{files.run}: not a JSON object; the run is not continued")
    check = verify_chain(files.trajectories, meta)
    if check.problems:
        first = min(check.problems, key=lambda p: (p.file != RUN_FILE, p.keyed, p.line or 0))
        raise ValueError(f"{files.root}: cannot resume a run folder changed after it was written (tampered): "
                         f"{first} (finenvs score {files.root} lists what differs)")
    if check.signature == _seal.UNSIGNED_HERE:
        here = _seal.load_key()
        raise ValueError(f"{files.root}: cannot resume: it is unsigned here (sealed with run key {check.key_id}, this "
                         f"machine's is {_seal.key_id(here) if here else 'not created yet'} at "
                         f"{_seal.run_key_path()}), so its records cannot be verified; continue it where it was made, "
                         f"or with its key ({_seal.RUN_KEY_ENV}=path of a copy of that key file)")
    if check.signature != _seal.SIGNED:
        raise ValueError(f"{files.root}: cannot resume: it is unsigned (run format {run_format(meta)}, recorded before "
                         "run folders were keyed), so its records cannot be verified; run it again")
    return meta, check


__all__ = [
    "CHAIN_FIELDS",
    "FORMAT_VERSION",
    "IDENTITY_FIELDS",
    "RUN_FILE",
    "SCORE_FILE",
    "TRAJECTORY_FILE",
    "ChainCheck",
    "IntegrityProblem",
    "EpisodeSession",
    "EpisodeSpec",
    "EpisodeTotals",
    "EnvPool",
    "ReplayMismatch",
    "RunFiles",
    "TrajectoryWriter",
    "replay_episode",
    "jsonable",
    "make_base_env",
    "make_text_env",
    "read_trajectories",
    "record_chain_head",
    "chain_genesis",
    "json_line",
    "run_identity",
    "run_metadata",
    "sha256_hex",
    "start_integrity",
    "verify_chain",
    "write_json_atomic",
    "open_run_to_resume",
    "run_format",
    "SEALED_FORMAT",
    "differences",
    "same_number",
    "write_run_json",
]
