"""The user layer of the catalog (``finenvs data add``): appends, checks, digests and the date lock.

Every test points ``FINENVS_USER_DATA`` at a temporary folder, so the session's catalog cache is untouched.
"""

from __future__ import annotations

import json
import sys
import threading

import numpy as np
import pandas as pd
import pytest

from finenvs.data.catalog import Catalog, cache_dir
from finenvs.data.user_layer import (
    ENV_VAR,
    UserLayer,
    add_filings,
    add_news,
    add_prices,
    cli_data_add,
    cli_data_list,
    user_data_dir,
)
from finenvs.errors import DataError, DataFileError, UnknownSymbolError

BASE_END = "2026-04-15"
STEP1 = ("2026-04-16", "2026-04-22")
STEP2 = ("2026-04-23", "2026-04-30")


@pytest.fixture
def layer_dir(tmp_path, monkeypatch):
    root = tmp_path / "user"
    monkeypatch.setenv(ENV_VAR, str(root))
    return root


@pytest.fixture(scope="module")
def tsla(catalog):
    return catalog.shipped_series("TSLA")


def bars(series, lo=None, hi=None) -> pd.DataFrame:
    """Rows of ``series`` dated in ``[lo, hi]`` as a frame without a symbol column (dates as text)."""
    keep = np.ones(len(series), dtype=bool)
    if lo is not None:
        keep &= series.dates >= np.datetime64(lo)
    if hi is not None:
        keep &= series.dates <= np.datetime64(hi)
    frame = series.to_frame().drop(columns="symbol")[keep].reset_index(drop=True)
    frame["date"] = frame["date"].dt.strftime("%Y-%m-%d")
    return frame


def write(frame: pd.DataFrame, path) -> str:
    frame.to_csv(path, index=False)
    return str(path)


def assert_same_bars(got, want) -> None:
    np.testing.assert_array_equal(got.dates, want.dates)
    for field in ("open", "high", "low", "close", "volume"):
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-15, atol=0)


def seed_tsla2(tsla, tmp_path):
    """TSLA2 = TSLA's bars up to BASE_END, then the two steps; returns the step files."""
    add_prices(bars(tsla, hi=BASE_END), "TSLA2")
    return write(bars(tsla, *STEP1), tmp_path / "step1.csv"), write(bars(tsla, *STEP2), tmp_path / "step2.csv")


# ---------------------------------------------------------------------------- location
def test_layer_folder_follows_the_cache_unless_set(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("FINENVS_DATA", str(tmp_path / "cache"))
    assert user_data_dir() == cache_dir() / "user" == tmp_path / "cache" / "user"
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "mine"))
    assert user_data_dir() == tmp_path / "mine"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG layout is Linux's")
def test_cache_folders_on_linux_are_the_xdg_cache_home_ones(tmp_path, monkeypatch):
    from finenvs.tools.sandbox import SANDBOX_DIR_ENV, sandbox_dir

    for var in ("FINENVS_DATA", ENV_VAR, SANDBOX_DIR_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg, root in ((str(tmp_path / "xdg"), tmp_path / "xdg"), ("", tmp_path / "home" / ".cache"),
                      (None, tmp_path / "home" / ".cache")):
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert cache_dir() == root / "finenvs"
        assert user_data_dir() == root / "finenvs" / "user"
        assert sandbox_dir() == (root / "finenvs" / "sandbox").resolve()


def test_a_second_writer_waits_for_the_layer_lock(tmp_path):
    first, second = UserLayer(tmp_path / "layer"), UserLayer(tmp_path / "layer")
    entered = threading.Event()

    def write() -> None:
        with second._exclusive():
            entered.set()

    with first._exclusive():
        assert (tmp_path / "layer" / ".lock").is_file()
        worker = threading.Thread(target=write, daemon=True)
        worker.start()
        assert not entered.wait(0.5)  # held by the first writer
    assert entered.wait(60)  # released: the second one goes in
    worker.join(60)


# ---------------------------------------------------------------------------- prices
def test_append_in_two_steps_equals_the_concatenation(layer_dir, tmp_path, catalog, tsla):
    assert "TSLA2" not in catalog.symbols()
    step1, step2 = seed_tsla2(tsla, tmp_path)
    first = add_prices(step1, "TSLA2")
    second = add_prices(step2, "TSLA2")
    want = bars(tsla, hi=STEP2[1])
    assert (first.added, first.skipped, first.date_min, first.date_max) == (len(bars(tsla, *STEP1)), 0, *STEP1)
    assert (second.date_min, second.date_max, second.rows) == (*STEP2, len(want))
    fresh = Catalog().series("TSLA2")
    assert_same_bars(fresh, tsla.slice(0, len(want)))
    assert fresh.symbol == "TSLA2" and "TSLA2" in Catalog().symbols("core")
    on_disk = pd.read_csv(layer_dir / "prices" / "core" / "TSLA2.csv")
    assert list(on_disk.columns) == ["date", "open", "high", "low", "close", "volume"]
    assert not [p for p in layer_dir.rglob("*.tmp")]  # atomic writes leave no temporaries
    manifest = json.loads((layer_dir / "MANIFEST.json").read_text())
    (record,) = manifest["files"]
    assert (record["rows"], record["date_min"], record["date_max"]) == (len(want), want["date"].iloc[0], STEP2[1])


def test_shipped_symbol_appends_after_its_last_shipped_bar(layer_dir, tmp_path, catalog, tsla):
    last = tsla.dates[-1]
    nxt = str(last + np.timedelta64(3, "D"))
    extra = pd.DataFrame({"date": [nxt], "open": [100.0], "high": [101.0], "low": [99.0], "close": [100.5],
                          "volume": [1e6]})
    overlap = pd.concat([bars(tsla, lo=str(tsla.dates[-2])), extra], ignore_index=True)
    result = add_prices(overlap, "TSLA")  # two held bars (equal), one new
    assert (result.added, result.skipped) == (1, 2)
    merged = catalog.series("TSLA")
    assert len(merged) == len(tsla) + 1 and merged.dates[-1] == np.datetime64(nxt) and merged.close[-1] == 100.5
    assert_same_bars(merged.slice(0, len(tsla)), tsla)


def test_re_adding_held_days_is_idempotent(layer_dir, tmp_path, tsla):
    step1, _ = seed_tsla2(tsla, tmp_path)
    add_prices(step1, "TSLA2")
    layer = UserLayer()
    digest, content = layer.digest, (layer_dir / "prices/core/TSLA2.csv").read_bytes()
    again = add_prices(step1, "TSLA2")
    assert (again.added, again.skipped, again.digest) == (0, len(bars(tsla, *STEP1)), digest)
    assert (layer_dir / "prices/core/TSLA2.csv").read_bytes() == content
    straddle = write(bars(tsla, "2026-04-20", STEP2[1]), tmp_path / "straddle.csv")  # part held, part new
    result = add_prices(straddle, "TSLA2")
    assert result.skipped == len(bars(tsla, "2026-04-20", STEP1[1])) and result.date_max == STEP2[1]
    assert_same_bars(Catalog().series("TSLA2"), tsla.slice(0, len(bars(tsla, hi=STEP2[1]))))


def test_conflicting_overlap_names_file_row_column_and_held_value(layer_dir, tmp_path, tsla):
    step1, _ = seed_tsla2(tsla, tmp_path)
    add_prices(step1, "TSLA2")
    frame = bars(tsla, STEP1[0], STEP2[1])
    held = float(frame.loc[1, "close"])
    frame.loc[1, "close"] = held * (1 + 1e-6)
    frame.loc[1, "high"] = max(frame.loc[1, "high"], frame.loc[1, "close"])
    path = write(frame, tmp_path / "conflict.csv")
    with pytest.raises(DataError) as err:
        add_prices(path, "TSLA2")
    message = str(err.value)
    assert "conflict.csv" in message and "row 2" in message and "'close'" in message and repr(held) in message
    tiny = bars(tsla, *STEP1)
    tiny.loc[0, "volume"] = tiny.loc[0, "volume"] * (1 + 1e-12)  # within 1e-9 relative: the same bar
    assert add_prices(tiny, "TSLA2").added == 0


def test_bars_cannot_go_into_a_held_history(layer_dir, tmp_path, tsla):
    seed_tsla2(tsla, tmp_path)
    frame = bars(tsla, "2026-04-10", "2026-04-10")
    frame.loc[0, "date"] = "2026-04-11"  # a Saturday: before the last held date but not held
    with pytest.raises(DataError, match=r"row 1, column 'date': 2026-04-11 is on or before 2026-04-15"):
        add_prices(write(frame, tmp_path / "inside.csv"), "TSLA2")


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("unsorted", r"unsorted\.csv: row 3 \(TSLA2 2026-04-17\): date goes back"),
        ("nan", r"nan\.csv: row 2 \(TSLA2 2026-04-17\): close=nan is missing"),
        ("missing", r"missing\.csv: missing column\(s\) \['volume'\]"),
        ("symbol", r"symbol\.csv: column 'symbol': row 1 holds 'TSLA'"),
    ],
)
def test_broken_price_files_name_file_row_and_column(layer_dir, tmp_path, tsla, breakage, expected):
    seed_tsla2(tsla, tmp_path)
    frame = bars(tsla, *STEP1)
    if breakage == "unsorted":
        frame = frame.iloc[[0, 2, 1, 3]].reset_index(drop=True)
    elif breakage == "nan":
        frame.loc[1, "close"] = np.nan
    elif breakage == "missing":
        frame = frame.drop(columns="volume")
    else:
        frame.insert(0, "symbol", "TSLA")
    digest = UserLayer().digest
    with pytest.raises(DataError, match=expected):
        add_prices(write(frame, tmp_path / f"{breakage}.csv"), "TSLA2")
    assert UserLayer().digest == digest  # nothing written


def test_unknown_dataset_and_bad_symbol_are_refused(layer_dir, tsla):
    with pytest.raises(DataError, match="unknown dataset 'nope'"):
        add_prices(bars(tsla, hi=BASE_END), "TSLA2", dataset="nope")
    with pytest.raises(DataError, match="symbol '../x'"):
        add_prices(bars(tsla, hi=BASE_END), "../x")


# ---------------------------------------------------------------------------- catalog: caches and digests
def test_a_catalog_made_before_an_add_sees_the_new_rows(layer_dir, tmp_path, catalog, tsla):
    before = Catalog()
    with pytest.raises(UnknownSymbolError):
        before.series("TSLA2")
    step1, step2 = seed_tsla2(tsla, tmp_path)
    assert len(before.series("TSLA2")) == len(bars(tsla, hi=BASE_END))
    add_prices(step1, "TSLA2")
    assert before.series("TSLA2").dates[-1] == np.datetime64(STEP1[1])
    assert catalog.as_of(STEP1[1]).prices("TSLA2", lookback=1)  # the process-wide catalog too
    add_prices(step2, "TSLA2")
    assert before.series("TSLA2").dates[-1] == np.datetime64(STEP2[1])


def test_digests_change_on_add_and_not_on_a_no_op(layer_dir, tmp_path, catalog, tsla):
    layer = UserLayer()
    assert layer.digest is None and catalog.data_digest == catalog.manifest.digest
    step1, step2 = seed_tsla2(tsla, tmp_path)
    d1, data1 = layer.digest, catalog.data_digest
    assert d1 is not None and data1 not in (catalog.manifest.digest, d1)
    add_prices(step1, "TSLA2")
    d2 = layer.digest
    assert d2 != d1 and catalog.data_digest != data1
    add_prices(step1, "TSLA2")
    assert layer.digest == d2


def test_verify_reports_a_hand_edited_file(layer_dir, tmp_path, tsla):
    seed_tsla2(tsla, tmp_path)
    layer = UserLayer()
    assert layer.verify().ok and len(layer.verify().checked) == 1
    path = layer_dir / "prices" / "core" / "TSLA2.csv"
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")
    cells[4] = repr(float(cells[4]) * 1.0001)  # a close edited by hand
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    result = layer.verify()
    assert not result.ok and "TSLA2.csv" in result.problems[0] and "sha256" in result.problems[0]
    with pytest.raises(DataFileError, match="TSLA2.csv: sha256"):
        Catalog().series("TSLA2")
    (layer_dir / "prices" / "core" / "STRAY.csv").write_text("date,open,high,low,close,volume\n")
    assert any("STRAY.csv" in p and "not in its MANIFEST" in p for p in layer.verify().problems)


# ---------------------------------------------------------------------------- news and filings
def _news(rows: list[dict]) -> pd.DataFrame:
    base = {"symbol": "TSLA2", "title": "headline", "summary": "text", "source": "Reuters",
            "url": "https://example.com/a", "provider": "mine", "provider_sentiment": ""}
    return pd.DataFrame([{**base, **row} for row in rows])


def test_news_is_visible_only_from_its_publication_time(layer_dir, tmp_path, catalog, tsla):
    seed_tsla2(tsla, tmp_path)
    day, next_day = "2026-04-16", "2026-04-17"  # close of 04-16 (EDT) = 20:00 UTC
    early = _news([{"id": "u1", "published_at": "2026-04-16T19:59:00Z"}])
    add_news(write(early, tmp_path / "early.csv"))
    seen_before = catalog.as_of(day).news("TSLA2")
    assert [item["id"] for item in seen_before] == ["u1"]
    late = _news([{"id": "u2", "published_at": "2026-04-16T16:30:00-04:00", "url": "https://example.com/b"}])
    result = add_news(write(late, tmp_path / "late.csv"))
    assert (result.added, result.date_min) == (1, day)
    assert catalog.as_of(day).news("TSLA2") == seen_before  # counterfactual: the later item changes nothing at t
    with pytest.raises(DataError, match="no news item with id 'u2' is visible"):
        catalog.as_of(day).news_item("u2")
    assert [item["id"] for item in catalog.as_of(next_day).news("TSLA2")] == ["u2", "u1"]
    item = catalog.as_of(next_day).news_item("u2")
    assert item["published_at"] == "2026-04-16T20:30:00Z" and item["source"] == "Reuters"
    assert len(catalog.news()) == len(catalog.shipped_documents("news")["id"]) + 2
    assert add_news(write(late, tmp_path / "again.csv")).added == 0  # identical re-add


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"published_at": "2026-04-16 14:00"}, r"row 1, column 'published_at': '2026-04-16 14:00' is not an ISO"),
        ({"url": ""}, r"row 1, column 'url': is empty"),
        ({"url": "example.com/x"}, r"row 1, column 'url': 'example.com/x' is not an http"),
        ({"source": None}, r"missing column\(s\) \['source'\]"),
    ],
)
def test_broken_news_names_file_row_and_column(layer_dir, tmp_path, change, expected):
    frame = _news([{"id": "u1", "published_at": "2026-04-16T19:59:00Z"}])
    for column, value in change.items():
        if value is None:
            frame = frame.drop(columns=column)
        else:
            frame[column] = value
    with pytest.raises(DataError, match=r"bad\.csv: " + expected):
        add_news(write(frame, tmp_path / "bad.csv"))


def test_changed_news_item_is_an_error(layer_dir, tmp_path):
    add_news(write(_news([{"id": "u1", "published_at": "2026-04-16T19:59:00Z"}]), tmp_path / "a.csv"))
    changed = _news([{"id": "u1", "published_at": "2026-04-16T19:59:00Z", "title": "other"}])
    with pytest.raises(DataError, match=r"b\.csv: row 1, column 'title': 'other' differs .* 'headline'"):
        add_news(write(changed, tmp_path / "b.csv"))


def test_filings_are_visible_after_their_filing_date(layer_dir, tmp_path, catalog):
    frame = pd.DataFrame([{"filing_id": "tsla2-8k-1", "symbol": "TSLA2", "form": "8-K", "filed": "2026-04-16",
                           "section": "item_2_02", "title": "Results", "text": "Revenue rose.", "document": ""}])
    add_filings(write(frame, tmp_path / "filings.csv"))
    assert catalog.as_of("2026-04-16").filings("TSLA2") == []
    (filing,) = catalog.as_of("2026-04-17").filings("TSLA2")
    assert filing["id"] == "tsla2-8k-1" and filing["filed"] == "2026-04-16"
    no_date = frame.assign(filed="04/16/2026")
    with pytest.raises(DataError, match=r"bad\.csv: row 1, column 'filed': '04/16/2026' is not a date"):
        add_filings(write(no_date, tmp_path / "bad.csv"))
    with pytest.raises(DataError, match=r"empty\.csv: row 1, column 'text': is empty"):
        add_filings(write(frame.assign(text=""), tmp_path / "empty.csv"))


def _sections(*rows: tuple[str, str, str]) -> pd.DataFrame:
    """Filing sections ``(filing_id, section, filed)`` of TSLA2 10-Qs."""
    return pd.DataFrame([{"filing_id": fid, "symbol": "TSLA2", "form": "10-Q", "filed": filed, "section": section,
                          "title": section, "text": f"{section} text", "document": ""} for fid, section, filed in rows])


def test_sections_of_one_filing_with_different_dates_are_refused(layer_dir, tmp_path, catalog):
    mixed = _sections(("q1", "part1", "2026-04-16"), ("q1", "part2", "2026-04-16"), ("q1", "part3", "2026-05-20"))
    with pytest.raises(DataError, match=r"mixed\.csv: row 3, column 'filed': '2026-05-20' differs from '2026-04-16', "
                                        r"the filing date of section 'part1' in row 1 of filing 'q1'; every section of "
                                        r"one filing has the same filing date \(a section filed later belongs to another filing"):
        add_filings(write(mixed, tmp_path / "mixed.csv"))
    assert UserLayer().digest is None  # nothing was written
    # the same sections, the later one as its own filing (an amendment), are accepted
    add_filings(write(_sections(("q1", "part1", "2026-04-16"), ("q1", "part2", "2026-04-16"),
                                ("q1-a", "part3", "2026-05-20")), tmp_path / "split.csv"))
    # a section added later to a held filing must carry its date: against the user layer and the shipped filings
    with pytest.raises(DataError, match=r"late\.csv: row 1, column 'filed': '2026-04-17' differs from '2026-04-16', "
                                        r"the filing date of section 'part\d' held by the user layer of filing 'q1'"):
        add_filings(write(_sections(("q1", "part4", "2026-04-17")), tmp_path / "late.csv"))
    shipped = _sections(("AAPL-10-K-2024-11-01", "item_9_added", "2026-04-16")).assign(symbol="AAPL", form="10-K")
    with pytest.raises(DataError, match=r"shipped\.csv: row 1, column 'filed': '2026-04-16' differs from "
                                        r"'2024-11-01', the filing date of section '\w+' held by the shipped filings"):
        add_filings(write(shipped, tmp_path / "shipped.csv"))
    other_form = _sections(("q1", "part4", "2026-04-16")).assign(form="10-K")
    with pytest.raises(DataError, match=r"form\.csv: row 1, column 'form': '10-K' differs from '10-Q'"):
        add_filings(write(other_form, tmp_path / "form.csv"))
    add_filings(write(_sections(("q1", "part4", "2026-04-16")), tmp_path / "same_day.csv"))  # same date: accepted
    view = catalog.as_of("2026-04-17")
    assert [f["id"] for f in view.filings("TSLA2")] == ["q1"]
    assert [s["section"] for s in view.filings("TSLA2")[0]["sections"]] == ["part1", "part2", "part4"]


# ---------------------------------------------------------------------------- CLI functions
def test_cli_add_and_list_print_what_was_added(layer_dir, tmp_path, tsla, capsys):
    assert cli_data_add(prices=write(bars(tsla, hi=BASE_END), tmp_path / "base.csv"), symbol="TSLA2") == 0
    out = capsys.readouterr().out
    assert "added" in out and "TSLA2" in out and str(layer_dir) in out and UserLayer().digest in out
    assert cli_data_list() == 0
    listing = capsys.readouterr().out
    assert "core: 10 symbols shipped, 1 added (TSLA2)" in listing and " TSLA2" in listing.split("added")[1]
    with pytest.raises(ValueError, match="exactly one"):
        cli_data_add(prices="x.csv", symbol="TSLA2", news="y.csv")


def test_bench_leaves_out_a_user_symbol_a_family_refuses_and_says_why(layer_dir, tsla):
    """A symbol added to the core dataset is played by FinTrading-v0; FinReport-v0 has no peer basket for it: the
    bench leaves it out of that family before any work (a scorecard note with the env's reason), not failing."""
    from finenvs.data.catalog import default_catalog
    from finenvs.evaluation.bench import BenchConfig, agent_selection, split_skips
    from finenvs.tasks import task_of
    from finenvs.tasks.market_section import playable_symbols

    add_prices(bars(tsla, hi=BASE_END), "TSLA2")
    catalog = default_catalog()
    assert "TSLA2" in catalog.symbols("core")
    config = BenchConfig(split="eval")
    report, trading = task_of("FinReport-v0"), task_of("FinTrading-v0")
    notes = split_skips([report, trading], config, catalog)
    assert len(notes) == 1 and notes[0].startswith("FinReport-v0: TSLA2 not played (its env refuses it: TSLA2 has "
                                                   "no peer basket")
    symbols = catalog.symbols("core")
    assert "TSLA2" not in playable_symbols(report, symbols, config, catalog)
    assert "TSLA2" in playable_symbols(trading, symbols, config, catalog)
    assert "TSLA2" not in agent_selection(report, "eval", config, model=False, catalog=catalog).symbols
    # the family's own argument makes it playable: peers given in the bench's env arguments
    with_peers = BenchConfig(split="eval", env_kwargs={"peers": {"TSLA2": ["AAPL", "MSFT"]}})
    assert "TSLA2" in playable_symbols(report, symbols, with_peers, catalog)
    assert not [n for n in split_skips([report], with_peers, catalog) if "TSLA2" in n]
