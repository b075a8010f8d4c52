"""The run key and the keyed seals (finenvs.evaluation.seal): where the key lives, how it is made, and that a seal
covers exactly the bytes and fields it says (the run-folder scenarios are in test_tamper.py)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat

import pytest

from finenvs.evaluation import seal
from finenvs.evaluation.runlog import json_line
from helpers import SUBPROCESS_TIMEOUT

KEY = bytes(range(32))


def test_the_key_path_is_the_env_var_then_xdg_config_then_home_and_reading_it_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(tmp_path / "k" / "key"))
    assert seal.run_key_path() == tmp_path / "k" / "key"
    monkeypatch.delenv(seal.RUN_KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert seal.run_key_path() == tmp_path / "xdg" / "finenvs" / "run-key"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert seal.run_key_path() == tmp_path / "home" / ".config" / "finenvs" / "run-key"
    assert seal.load_key() is None  # verification never creates a key
    assert not (tmp_path / "home").exists() and not (tmp_path / "xdg").exists() and not (tmp_path / "k").exists()


def test_a_new_key_is_32_random_bytes_readable_by_its_user_only(tmp_path, monkeypatch):
    path = tmp_path / "cfg" / "finenvs" / "run-key"
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(path))
    key = seal.load_or_create_key()
    assert len(key) == 32 and path.read_bytes() == key and seal.load_or_create_key() == key == seal.load_key()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["run-key"]  # no temporary file left
    assert seal.key_id(key) == hashlib.sha256(key).hexdigest()[:16]
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(tmp_path / "other"))
    assert seal.load_or_create_key() != key  # random, not derived


def _create(path: str, start: multiprocessing.synchronize.Event) -> str:
    os.environ[seal.RUN_KEY_ENV] = path
    start.wait()
    return seal.load_or_create_key().hex()


def test_processes_creating_the_key_at_once_all_get_the_one_that_won(tmp_path):
    path = tmp_path / "race" / "run-key"
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(6) as pool:
            pending = [pool.apply_async(_create, (str(path), start)) for _ in range(6)]
            start.set()
            keys = {p.get(timeout=SUBPROCESS_TIMEOUT) for p in pending}
    assert keys == {path.read_bytes().hex()} and len(path.read_bytes()) == 32
    assert [p.name for p in path.parent.iterdir()] == ["run-key"]


def test_a_key_file_that_is_not_a_key_is_refused_naming_it(tmp_path, monkeypatch):
    path = tmp_path / "run-key"
    path.write_bytes(b"short")
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(path))
    for load in (seal.load_key, seal.load_or_create_key):
        with pytest.raises(seal.RunKeyError, match=f"{path} holds 5 bytes, not 32"):
            load()
    assert path.read_bytes() == b"short"  # never replaced: the runs it signed would read "unsigned here"


def test_the_cli_reports_an_unusable_key_in_one_line(tmp_path, monkeypatch, capsys):
    from finenvs.cli import main

    (tmp_path / "run-key").write_bytes(b"x")
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(tmp_path / "run-key"))
    assert main(["llm", "--env", "FinQA-v0", "--limit", "1", "--quiet", "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run-key holds 1 bytes" in err


@pytest.mark.parametrize("record", [
    {"type": "step", "raw_text": "café \ud800", "seq": 3, "prev": "ab" * 32},
    {"type": "step", "raw_text": ',"mac":"' + "0" * 64 + '"}', "seq": 1, "prev": "cd" * 32},  # a forged suffix inside
])
def test_a_sealed_line_is_the_written_bytes_with_a_mac_field_appended(record):
    line = json_line(record)
    sealed = seal.seal_line(KEY, line)
    body, mac = seal.split_line(sealed)
    assert body == line and seal.mac_ok(KEY, body, mac) and mac == seal.mac_hex(KEY, line)
    assert json.loads(sealed) == {**json.loads(line), "mac": mac}
    assert seal.mac_ok(b"\x00" * 32, body, mac) is False and seal.split_line(line) is None
    flipped = sealed.replace(b'"seq":', b'"seq": ', 1)  # the same JSON, other bytes: not the bytes that were MACed
    assert seal.mac_ok(KEY, *seal.split_line(flipped)) is False


def test_run_json_seal_covers_every_field_and_names_the_one_changed():
    meta = {"format": 4, "status": "complete", "config": {"max_tool_calls": 8},
            "integrity": {"lines": 33, "final": "ab" * 32}}
    sealed = seal.seal_run(meta, KEY)
    assert sealed["seal"]["algorithm"] == "hmac-sha256" and sealed["seal"]["key_id"] == seal.key_id(KEY)
    assert seal.run_seal_ok(sealed, KEY) and not seal.run_seal_ok(sealed, b"\x00" * 32)
    assert seal.run_seal_ok(json.loads(json.dumps(sealed, indent=2)), KEY)  # key order and spacing do not matter
    for change, named in [(lambda m: m.update(status="running"), ["status"]),
                          (lambda m: m["integrity"].update(lines=34), ["integrity.lines"]),
                          (lambda m: m["config"].update(max_tool_calls=99), ["config"]),
                          (lambda m: m.update(pending="BUY"), ["pending"]),
                          (lambda m: m.pop("status"), ["status"])]:
        edited = json.loads(json.dumps(sealed))
        change(edited)
        assert not seal.run_seal_ok(edited, KEY) and seal.changed_fields(edited, KEY) == named
    assert seal.changed_fields({**sealed, "seal": {"mac": "0"}}, KEY) == []  # a seal without its field list
    assert not seal.run_seal_ok({k: v for k, v in sealed.items() if k != "seal"}, KEY)

