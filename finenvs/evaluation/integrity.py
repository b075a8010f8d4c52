"""Checking a run folder against its run log: the trajectory chain, the keyed seals and the signature verdict.

:func:`verify_chain` checks a trajectory file against its run.json (the chain of
:mod:`finenvs.evaluation.runlog`, the seals of :mod:`finenvs.evaluation.seal`) and
gives the signature verdict: ``signed`` (every MAC verifies under this machine's key),
``unsigned here`` (sealed with another key: a run copied from another machine,
whose content the unkeyed chain still verifies), ``unsigned`` (a run of format 3
or older, recorded before the seal); ``finenvs score`` reports the first bad line.
:func:`open_run_to_resume` opens a run folder for continuing only when its chain
holds and this machine's key signed it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finenvs.evaluation import seal as _seal
from finenvs.evaluation.runlog import (
    RUN_FILE,
    SEALED_FORMAT,
    RunFiles,
    RunMeta,
    chain_genesis,
    run_format,
    run_identity,
    sha256_hex,
)


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


#: ``verify_chain(key=...)`` default: this machine's run key, read when the check runs.
MACHINE_KEY: Any = object()


def verify_chain(path: Path, meta: Mapping[str, Any], *, key: bytes | None | Any = MACHINE_KEY) -> ChainCheck:
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


def _check_run_seal(meta: Mapping[str, Any], fmt: int, key: Any, check: ChainCheck, problem: Any) -> bytes | None:
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


def open_run_to_resume(root: Path | str) -> tuple[RunMeta, ChainCheck]:
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
        meta: RunMeta = json.loads(files.run.read_text(encoding="utf-8"))
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
    "MACHINE_KEY",
    "ChainCheck",
    "IntegrityProblem",
    "open_run_to_resume",
    "verify_chain",
]
