"""The smaller things a user trips on: a Ctrl-C while finenvs starts, counts in output, a directory or an empty
file given as data, the dates ``data list`` states, ``data remove``, the MCP banner and a commit's unknown field,
the progress bar's total and ``--quiet``."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finenvs.cli import main
from finenvs.text.plural import counted, plural

ROOT = Path(__file__).resolve().parents[1]


def default_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it (a test run started in the background inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def layer_dir(tmp_path, monkeypatch):
    """A user layer of the test's own (``FINENVS_USER_DATA``)."""
    from finenvs.data.user_layer import ENV_VAR

    root = tmp_path / "user"
    monkeypatch.setenv(ENV_VAR, str(root))
    return root


# ---------------------------------------------------------------------------- Ctrl-C while finenvs starts
#: The child: the ``finenvs`` console script's own lines, after a finder that delivers a real SIGINT to the process
#: when the named module is about to be imported (a Ctrl-C at that moment, with no timing involved).
TRIP = """
import os, signal, sys
class Trip:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Trip())
sys.argv = [{argv0!r}, "list"]
{body}
"""
CONSOLE_SCRIPT = "from finenvs.cli import main\nsys.exit(main())"


def _tripped(module: str, argv0: str = "finenvs", body: str = CONSOLE_SCRIPT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", TRIP.format(module=module, argv0=argv0, body=body)],
                          capture_output=True, text=True, timeout=300, preexec_fn=default_sigint, cwd=ROOT)


@pytest.mark.parametrize("module", [
    "datetime",  # numpy's C extensions import it: numpy turns the KeyboardInterrupt into an ImportError
    "finenvs.tasks.qa.spec",  # the families, while finenvs registers them
    "finenvs.cli.bench",  # the command modules
])
def test_ctrl_c_while_the_package_loads_is_one_line_and_exit_130(module):
    """Before: a Ctrl-C in the first 1-2 s (importing the families) printed a 20-55-line traceback."""
    proc = _tripped(module)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines() == ["interrupted: finenvs stopped while starting; nothing was run"]


def test_ctrl_c_while_a_users_own_import_finenvs_runs_stays_a_keyboard_interrupt():
    proc = _tripped("finenvs.tasks.qa.spec", argv0="my_script.py", body="import finenvs")
    assert proc.returncode != 0 and proc.stderr.rstrip().endswith("KeyboardInterrupt")
    assert "interrupted: finenvs" not in proc.stderr


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps (Linux)")
def test_a_real_ctrl_c_soon_after_start_is_one_line_and_exit_130(tmp_path):
    """The signal goes in once the child has loaded numpy (past the interpreter's own start, most likely still
    importing finenvs): wherever it lands from there on, one line and exit 130. No sleep decides the outcome."""
    proc = subprocess.Popen([sys.executable, "-m", "finenvs.cli", "bench", "--out", str(tmp_path), "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 120
    while proc.poll() is None and "_multiarray_umath" not in maps.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the child never loaded numpy"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    [line] = err.strip().splitlines()
    assert line.startswith("interrupted: finenvs") and "Traceback" not in err


#: The child: ``finenvs list`` whose handler runs a DuckDB query that would take hours (a 10^12-row join, on one
#: DuckDB thread, which checks for the signal between its vectors); a thread delivers the Ctrl-C 1 s into it. The
#: handler notes which error ended the query in the file given, then lets it go on.
DUCKDB_QUERY = """
import os, signal, sys, threading, time
import duckdb
from finenvs import cli
def slow(args):
    con = duckdb.connect(config={{"threads": 1}})
    threading.Thread(target=lambda: (time.sleep(1.0), os.kill(os.getpid(), signal.SIGINT)), daemon=True).start()
    try:
        con.execute("SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b").fetchall()
    except BaseException as exc:
        open({marker!r}, "w").write(type(exc).__name__)
        raise
    return 0
cli.list_command.handle = slow
sys.exit(cli.main(["list"]))
"""


def test_a_ctrl_c_duckdb_turns_into_its_own_error_is_still_one_line_and_exit_130(tmp_path):
    """Before: ``finenvs: error: unexpected RuntimeError: Query interrupted``, exit 1 (a Ctrl-C while the catalog
    is read, as 1.2 s into ``bench``)."""
    marker = tmp_path / "ended-by"
    proc = subprocess.run([sys.executable, "-c", DUCKDB_QUERY.format(marker=str(marker))], capture_output=True,
                          text=True, timeout=300, preexec_fn=default_sigint)
    assert marker.read_text() in ("RuntimeError", "InterruptException")  # DuckDB's own error, not the Ctrl-C
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines() == ["interrupted: finenvs list stopped; nothing to resume"]


# ---------------------------------------------------------------------------- counts
def test_counted_agrees_with_its_count():
    assert [counted(n, "episode") for n in (0, 1, 2)] == ["0 episodes", "1 episode", "2 episodes"]
    assert counted(1, "agent episode") == "1 agent episode" and counted(3, "agent episode") == "3 agent episodes"
    assert [plural(w) for w in ("entry", "day", "pass", "batch", "analysis", "series")] == [
        "entries", "days", "passes", "batches", "analyses", "series"]
    assert counted(2, "datum", "data") == "2 data"


def test_one_episode_reads_as_one_episode(tmp_path, capsys):
    """Before: "over 1 complete episode(s)", "all 1 finished episode(s) reproduce", "over 2 line(s)"."""
    assert main(["llm", "--env", "FinQA-v0", "--limit", "1", "--out", str(tmp_path), "--name", "one"]) == 0
    out = capsys.readouterr().out
    assert "FinQA-v0 over 1 complete episode: " in out and "the 1 finished episode reproduces" in out
    assert "chain intact over 2 lines" in out
    assert not re.search(r"\b1 [a-z-]+s\b|\(s\)", out.replace("1 finished episode reproduces", ""))


def test_a_bench_interrupted_before_any_agent_episode_says_so(tmp_path):
    """Before: "interrupted: 0 of 0 agent episodes saved in ..."."""
    import argparse

    from finenvs.cli import bench

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bench.json").write_text("{}")
    args = argparse.Namespace(resume=None, out=tmp_path)
    line = bench.interrupted(args, began=time.time() - 5)
    assert line.startswith(f"interrupted: no agent episode saved yet in {tmp_path / 'b'}") and "0 of 0" not in line


# ---------------------------------------------------------------------------- data files
def test_a_directory_or_an_empty_file_given_as_data_is_named_as_such(tmp_path, capsys, layer_dir):
    """Before: a directory was "price file not found"; a 0-byte file listed six missing columns, found []."""
    folder, empty, blank = tmp_path / "bars", tmp_path / "empty.csv", tmp_path / "blank.csv"
    folder.mkdir()
    empty.write_bytes(b"")
    blank.write_text("\n \n")
    for args, expected in (
        (["data", "verify", "--file", str(folder)], f"{folder}: is a directory, not a price file"),
        (["data", "verify", "--file", str(empty)], f"{empty}: empty file (0 bytes)"),
        (["data", "verify", "--file", str(blank)], f"{blank}: empty file (only blank lines)"),
        (["data", "add", "--news", str(folder)], f"{folder}: is a directory"),
        (["data", "add", "--prices", str(empty), "--symbol", "X"], f"{empty}: empty file (0 bytes)"),
    ):
        assert main(args) == 1
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"finenvs: error: {expected}") and "missing column" not in line, line


# ---------------------------------------------------------------------------- data list
def _spans(listing: str, dataset: str) -> dict[str, str]:
    """symbol -> "first..last" from ``data list``'s lines of ``dataset``."""
    block = listing.split(f"{dataset}: ", 1)[1].split("\n")[1:]
    out = {}
    for line in block:
        if not line.startswith("  "):
            break
        span, *symbols = line.split()
        out |= dict.fromkeys(symbols, span)
    return out


def test_data_list_names_every_symbol_with_the_last_date_the_window_error_names(capsys, catalog, layer_dir):
    """Before: ``data list`` gave core's last date as 2026-10-06 (its latest symbol) while a window after AAPL's
    data said "data covers 2024-01-02..2026-09-25"; and it named no symbol."""
    assert main(["data", "list"]) == 0
    listing = capsys.readouterr().out
    for dataset in catalog.datasets():
        spans = _spans(listing, dataset)
        assert sorted(spans) == sorted(catalog.symbols(dataset)), dataset
    core = _spans(listing, "core")
    assert main(["run", "--env", "FinTrading-v0", "--policy", "momentum", "--symbol", "AAPL", "--start",
                 "2027-01-02", "--end", "2027-03-01"]) == 2
    err = capsys.readouterr().err
    assert f"AAPL data covers {core['AAPL']};" in err
    assert core["AAPL"].endswith(str(catalog.series("AAPL").dates[-1]))


# ---------------------------------------------------------------------------- data remove
def test_data_remove_takes_user_bars_out_and_never_shipped_ones(tmp_path, capsys, catalog, layer_dir):
    from finenvs.data.user_layer import UserLayer, add_news, add_prices

    tsla = catalog.series("TSLA")
    shipped_digest = catalog.data_digest
    frame = tsla.to_frame().drop(columns="symbol").tail(20)
    frame["date"] = frame["date"].dt.strftime("%Y-%m-%d")
    add_prices(frame, "TSLA2")
    add_prices(frame, "TSLA3")
    news = [{"id": f"n{i}", "symbol": sym, "published_at": "2026-04-16T19:59:00Z", "title": "t", "source": "s",
             "url": f"https://example.com/{i}"} for i, sym in enumerate(["TSLA2", "TSLA3", "TSLA3"])]
    import pandas as pd

    pd.DataFrame(news).to_csv(tmp_path / "news.csv", index=False)
    add_news(tmp_path / "news.csv")
    assert "TSLA2" in catalog.symbols("core") and catalog.data_digest != shipped_digest

    assert main(["data", "remove", "--prices", "TSLA2"]) == 0
    out = capsys.readouterr().out
    assert "removed 20 user bars of TSLA2 (" in out and "from dataset 'core'" in out
    assert "TSLA2" not in catalog.symbols("core") and "TSLA3" in catalog.symbols("core")
    assert not (layer_dir / "prices" / "core" / "TSLA2.csv").exists()
    assert set(UserLayer().entries()) == {"prices/core/TSLA3.csv", "news.csv"}

    # shipped bars are never removed; nothing is removed when one named symbol has no user bars
    assert main(["data", "remove", "--prices", "TSLA3", "TSLA"]) == 2
    err = capsys.readouterr().err
    assert "no bars of 'TSLA' in dataset 'core'; its shipped bars are part of finenvs and cannot be removed" in err
    assert "TSLA3" in catalog.symbols("core") and len(catalog.series("TSLA")) == len(tsla)
    assert main(["data", "remove", "--prices", "TSLA3", "--dataset", "nope"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err

    assert main(["data", "remove", "--news", "TSLA3"]) == 0
    assert "removed 2 user news items of TSLA3; 1 user news item left" in capsys.readouterr().out
    assert [r["id"] for r in catalog.as_of("2026-04-17").news("TSLA2")] == ["n0"]
    assert main(["data", "remove", "--news", "TSLA3"]) == 2
    assert "holds no news items of 'TSLA3' (it holds news items of: TSLA2)" in capsys.readouterr().err
    assert main(["data", "remove", "--filings"]) == 2
    assert "holds no filing sections" in capsys.readouterr().err

    assert main(["data", "remove", "--all"]) == 0
    out = capsys.readouterr().out
    assert "removed news.csv (1 row" in out and "removed prices/core/TSLA3.csv (20 rows" in out
    assert UserLayer().entries() == {} and catalog.data_digest == shipped_digest  # back to the shipped data
    assert main(["data", "verify"]) == 0
    capsys.readouterr()


# ---------------------------------------------------------------------------- MCP
def test_mcp_banner_reads_as_a_sentence(tmp_path):
    """Before: ``finenvs mcp: serving FinAudit-v0 #0 FinAudit-v0 3 seed=0 on stdio``."""
    pytest.importorskip("mcp")
    proc = subprocess.run([sys.executable, "-m", "finenvs.cli", "mcp", "--env", "FinAudit-v0", "--instance", "3",
                           "--out", str(tmp_path), "--name", "s"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300)
    assert proc.stderr.splitlines()[0] == (f"finenvs mcp: serving FinAudit-v0 instance 3 (eval split, seed 0) over "
                                           f"stdio; results in {tmp_path / 's'}")


def test_episode_descriptions_name_what_the_episode_is():
    from finenvs.tasks import EpisodeSpec

    assert EpisodeSpec(0, "FinTrading-v0", {"split": "eval", "symbol": "MSFT"}, 0).describe() == (
        "FinTrading-v0 MSFT (eval split, seed 0)")
    assert EpisodeSpec(0, "FinTrading-v0", {"symbol": "AAPL", "start": "2026-01-02", "end": "2026-02-27"},
                       1).describe() == "FinTrading-v0 AAPL (2026-01-02..2026-02-27, seed 1)"
    assert EpisodeSpec(0, "FinHedging-v0", {"symbols": ["AAPL", "MSFT"]}, None).describe() == (
        "FinHedging-v0 universe AAPL MSFT")


@pytest.fixture
def audit_episode(tmp_path):
    from finenvs.evaluation.mcp_server import McpEpisode
    from finenvs.tasks import Selection, task_of

    spec = task_of("FinAudit-v0").plan(Selection(split="eval", instances=(0,)))[0]
    episode = McpEpisode(spec, out=tmp_path, name="audit")
    yield episode
    episode.close()


def test_an_mcp_commit_with_an_unknown_field_names_it(audit_episode):
    """Before: the commit was taken and the field passed over in silence."""
    reply, is_error = audit_episode.call("commit_action", {"reported_value": 1, "calculated_value": 2,
                                                           "calculted_value": 3})
    assert not is_error and reply["accepted"] is True
    assert reply["ignored_fields"] == ["calculted_value"]
    assert reply["note"] == ("commit_action has no field 'calculted_value'; ignored (its fields: reported_value, "
                             "calculated_value, reasoning)")


def test_unknown_field_names_are_bounded_and_escaped():
    from finenvs.tools.registry import MAX_FIELD_NAME_CHARS, ignored_fields_note

    schema = {"properties": {"action": {}}}
    hostile = {"action": "BUY", "x\n\x1b[2J" + "y" * 100_000: 1, **{f"k{i}": i for i in range(5_000)}}
    began = time.perf_counter()
    note = ignored_fields_note(hostile, schema)
    assert time.perf_counter() - began < 5.0  # one pass over the keys (milliseconds)
    names = note["ignored_fields"]
    assert len(names) == 11 and names[-1] == "... 4991 more"
    assert names[0] == "x\\n\\x1b[2J" + "y" * (MAX_FIELD_NAME_CHARS - 6) + "..."  # 40 characters, then escaped
    assert len(note["note"]) < 1_000 and "\n" not in note["note"] and "\x1b" not in note["note"]
    assert ignored_fields_note({"action": "BUY"}, schema) == {} and ignored_fields_note("BUY", schema) == {}


# ---------------------------------------------------------------------------- progress and --quiet
def test_the_progress_bar_counts_the_runs_episodes(tmp_path, monkeypatch):
    """Before: FinQA's bar read ``0/1 decision`` for a run of many questions (its total grew as episodes began)."""
    import io

    import tqdm.auto

    from finenvs.evaluation.agents import make_agent
    from finenvs.evaluation.llm import RunConfig, run_llm

    bars = []

    class Recorded(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.update(disable=False, file=io.StringIO())
            super().__init__(*args, **kwargs)
            self.first_total = self.total
            bars.append(self)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorded)
    config = RunConfig(env_id="FinQA-v0", split="eval", limit=3)
    run_llm(config, make_agent("FinQA-v0"), out=tmp_path, name="bar", progress=True)
    [bar] = bars
    assert (bar.first_total, bar.n, bar.unit) == (3, 3, "episode")
    assert bar.postfix == "3 decisions"


def test_quiet_prints_only_the_last_line(tmp_path, capsys):
    """Before: ``--quiet`` only hid the progress bar: every table still went to standard output."""
    assert main(["llm", "--env", "FinQA-v0", "--limit", "2", "--out", str(tmp_path), "--name", "q", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [captured.out.strip()]
    assert re.fullmatch(rf"run complete: {re.escape(str(tmp_path / 'q'))}/ \(\d+\.\d s\)\n", captured.out)
    assert captured.err == ""
    assert json.loads((tmp_path / "q" / "score.json").read_text())  # scored all the same

