"""The per-user run key, and the keyed seals (HMAC-SHA256) of run folders.

A run folder's unkeyed chain (:mod:`finenvs.evaluation.runlog`) shows that lines were deleted, moved or
changed, but anyone who knows the format can recompute a sha256. The seals add what a recomputation cannot
forge without the key:

* every trajectory line ends with ``"mac":"<hex>"``, the HMAC of the line's bytes as they were before the MAC
  was appended (:func:`seal_line`); the next line's ``prev`` is the sha256 of the whole written line, so the
  unkeyed chain still verifies the content on a machine without the key;
* ``run.json`` carries a ``seal`` block: the HMAC of the canonical JSON of everything else in it (integrity
  block, status, outcomes, configuration, agent: all of it), plus a short HMAC of each top-level field (and of
  each field of the ``integrity`` block) so a failed seal names what was changed (:func:`seal_run`).

The key is 32 random bytes in a file outside every run folder: ``$FINENVS_RUN_KEY`` if set, else
``$XDG_CONFIG_HOME/finenvs/run-key``, else ``~/.config/finenvs/run-key`` (:func:`run_key_path`), created on
first use with mode 0600 in a folder of mode 0700. A seal names its key by ``key_id`` (the first 16 hex digits of
the key's sha256; public). A run sealed with another key (a run copied from another machine) verifies its
content with the unkeyed chain only: "unsigned here". Copying the key file to another machine (or pointing
``FINENVS_RUN_KEY`` at a shared copy) is how a team verifies each other's runs as "signed".
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from finenvs.errors import FinEnvsError

#: Environment variable holding the path of the run key file.
RUN_KEY_ENV = "FINENVS_RUN_KEY"
KEY_BYTES = 32
ALGORITHM = "hmac-sha256"
#: The name of a trajectory line's MAC field (always the line's last field).
MAC_FIELD = "mac"
#: run.json fields whose own fields are sealed one by one (so a failed seal names e.g. ``integrity.lines``).
DETAILED_FIELDS = ("integrity",)
#: Hex digits of each per-field MAC in a seal (they only name what changed; the whole-file MAC decides).
FIELD_MAC_HEX = 16
_SUFFIX = re.compile(rb',"mac":"([0-9a-f]{64})"\}')
_SUFFIX_BYTES = len(b',"mac":""}') + 64

#: Signature verdicts of a run folder (see :func:`seal_verdict` and ``finenvs score``).
SIGNED, UNSIGNED_HERE, UNSIGNED, INVALID = "signed", "unsigned here", "unsigned", "invalid"


class RunSeal(TypedDict):
    """run.json's ``seal`` block (:func:`seal_run`)."""

    algorithm: str
    key_id: str
    #: the key's MAC of the canonical JSON of the rest of run.json
    mac: str
    #: a short MAC of each top-level field (and of each field of ``integrity``): what a failed seal names
    fields: dict[str, str]


class RunKeyError(FinEnvsError, OSError):
    """The run key file cannot be used (unreadable, not a key, or it cannot be created); the CLI prints it as one
    line (exit 2)."""


def run_key_path() -> Path:
    """Where this user's run key lives (no side effects: the file and its folder may not exist yet)."""
    explicit = os.environ.get(RUN_KEY_ENV)
    if explicit:
        return Path(explicit).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME")
    base = Path(config).expanduser() if config else Path.home() / ".config"
    return base / "finenvs" / "run-key"


def _read_key(path: Path) -> bytes:
    try:
        key = path.read_bytes()
    except OSError as exc:
        raise RunKeyError(f"the run key {path} cannot be read ({exc.strerror or exc}); set {RUN_KEY_ENV} to "
                          "a readable key file, or remove it to create a new key") from None
    if len(key) != KEY_BYTES:
        raise RunKeyError(f"the run key {path} holds {len(key)} bytes, not {KEY_BYTES}: not a finenvs run key "
                          f"(remove it to create a new one, or set {RUN_KEY_ENV})")
    return key


def load_key() -> bytes | None:
    """This user's run key, or None when none was created yet (verification never creates one).

    Raises:
        RunKeyError: The key file exists but is unreadable or not a key.
    """
    path = run_key_path()
    if not path.exists():
        return None
    return _read_key(path)


def load_or_create_key() -> bytes:
    """This user's run key, created on first use (32 bytes from :mod:`secrets`, mode 0600, its folder 0700).

    Creation is atomic: the key is written to a private temporary file that is then hard-linked into place,
    so parallel processes (pytest-xdist workers, runs started together) all end up with the one key that won
    and never read a half-written file.

    Raises:
        RunKeyError: The key file exists but is unreadable or not a key, or it cannot be created.
    """
    path = run_key_path()
    if path.exists():
        return _read_key(path)
    folder = path.parent
    try:
        if not folder.is_dir():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)  # mkdir's mode is narrowed by the umask; never widened
        tmp = folder / f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
        finally:
            tmp.unlink(missing_ok=True)
    except RunKeyError:
        raise
    except OSError as exc:
        raise RunKeyError(f"the run key {path} cannot be created ({exc.strerror or exc}); set {RUN_KEY_ENV} to "
                          "a writable file path") from None
    return _read_key(path)


def key_id(key: bytes) -> str:
    """The public name of a key: the first 16 hex digits of its sha256."""
    return hashlib.sha256(key).hexdigest()[:16]


def mac_hex(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------- trajectory lines
def seal_line(key: bytes, line: bytes) -> bytes:
    """A JSON-object line (no newline) with its MAC appended as the last field: ``B[:-1] + ,"mac":"<hex>"}``."""
    return line[:-1] + b',"' + MAC_FIELD.encode() + b'":"' + mac_hex(key, line).encode() + b'"}'


def split_line(line: bytes) -> tuple[bytes, str] | None:
    """``(the bytes the MAC was computed over, the MAC)`` of a sealed line, taken apart textually (byte exact, no
    re-serialisation); None when the line does not end in a MAC field."""
    match = _SUFFIX.fullmatch(line, max(0, len(line) - _SUFFIX_BYTES))
    if match is None:
        return None
    return line[:match.start()] + b"}", match.group(1).decode("ascii")


def mac_ok(key: bytes, body: bytes, mac: str) -> bool:
    """Whether ``mac`` is the key's MAC of ``body`` (a line's two parts, :func:`split_line`); constant time."""
    return hmac.compare_digest(mac_hex(key, body), mac)


# ---------------------------------------------------------------------------- run.json
def canonical(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, ASCII, no spaces (as read back from the file)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _field_macs(key: bytes, body: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, value in body.items():
        if name in DETAILED_FIELDS and isinstance(value, dict):
            for sub, item in value.items():
                out[f"{name}.{sub}"] = mac_hex(key, canonical([name, sub, item]))[:FIELD_MAC_HEX]
        else:
            out[name] = mac_hex(key, canonical([name, value]))[:FIELD_MAC_HEX]
    return out


def seal_run(meta: dict[str, Any], key: bytes) -> dict[str, Any]:
    """``meta`` (strict JSON values, as written) with a fresh ``seal`` block over everything else in it."""
    body = {k: v for k, v in meta.items() if k != "seal"}
    return {**body, "seal": {"algorithm": ALGORITHM, "key_id": key_id(key), "mac": mac_hex(key, canonical(body)),
                             "fields": _field_macs(key, body)}}


def changed_fields(meta: Mapping[str, Any], key: bytes) -> list[str]:
    """The fields of a sealed run.json whose per-field MACs no longer match (added and removed ones too);
    empty when the seal's field list was itself edited beyond telling."""
    seal = meta.get("seal")
    recorded = seal.get("fields") if isinstance(seal, dict) else None
    if not isinstance(recorded, dict):
        return []
    now = _field_macs(key, {k: v for k, v in meta.items() if k != "seal"})
    return [name for name in dict.fromkeys([*recorded, *now]) if recorded.get(name) != now.get(name)]


def run_seal_ok(meta: Mapping[str, Any], key: bytes) -> bool:
    """Whether run.json's seal is the key's MAC of the rest of it (the seal's key id is not trusted)."""
    seal = meta.get("seal")
    if not isinstance(seal, dict) or not isinstance(seal.get("mac"), str):
        return False
    body = {k: v for k, v in meta.items() if k != "seal"}
    try:
        expected = mac_hex(key, canonical(body))
    except ValueError:  # a non-finite number: never written by the runner
        return False
    return hmac.compare_digest(expected, seal["mac"])


__all__ = [
    "ALGORITHM",
    "INVALID",
    "KEY_BYTES",
    "MAC_FIELD",
    "RUN_KEY_ENV",
    "SIGNED",
    "UNSIGNED",
    "UNSIGNED_HERE",
    "RunKeyError",
    "RunSeal",
    "canonical",
    "changed_fields",
    "key_id",
    "mac_ok",
    "load_key",
    "load_or_create_key",
    "mac_hex",
    "run_key_path",
    "run_seal_ok",
    "seal_line",
    "seal_run",
    "split_line",
]
