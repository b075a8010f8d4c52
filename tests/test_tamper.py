"""Run folders are tamper-evident: ``finenvs score`` tells a reproduced run (exit 0) from an interrupted one
(incomplete, exit 3) and from one changed after it was written (tampered, exit 1, naming the first bad line).

One small real run is made once for the module: the offline scripted trading agent over three short episodes,
behind a wrapper that does what real models do — a look-ahead attempt at every decision, a reply without an
action (holding a lone surrogate) at the third decision of each episode, token usage — so every field a variant
edits has something in it. Each variant edits a copy of the run and scores it through the CLI entry.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from finenvs.cli import main
from finenvs.evaluation import seal
from finenvs.evaluation.llm import RunConfig, run_llm, run_llm_async
from finenvs.evaluation.runlog import (
    TrajectoryWriter,
    chain_genesis,
    json_line,
    read_trajectories,
    run_identity,
    write_run_json,
)
from finenvs.tasks.trading.agent import ScriptedTradingAgent
from finenvs.text.chat import ChatReply, ToolCall, current_turn, first_prompt

TRAJECTORY = "trajectories.jsonl"
USAGE = {"prompt_tokens": 100, "completion_tokens": 7}
CONFIG = dict(env_id="FinTrading-v0", split="eval", env_kwargs={"start": "2025-10-01", "end": "2025-10-15"},
              concurrency=1)
SYMBOLS = ["AAPL", "MSFT", "TSLA"]


class Peeker:
    """The scripted trading agent with a real model's habits (see the module docstring); deterministic."""

    name = "peeker"

    def __init__(self) -> None:
        self.inner = ScriptedTradingAgent()

    def describe(self) -> dict[str, Any]:
        return {"kind": "test", "name": self.name, "model": "peeker-1"}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        decision = int(re.search(r"decision (\d+) of", first_prompt(messages)).group(1))
        if not current_turn(messages):  # asks for prices past the decision date: a look-ahead attempt
            return ChatReply(None, [ToolCall("peek", "get_prices", json.dumps({"end": "2030-01-02"}))],
                             usage=dict(USAGE))
        if decision == 3:
            return ChatReply("Not sure today \ud800.", usage=dict(USAGE))
        reply = self.inner.reply(messages, tools)
        reply.usage = dict(USAGE)
        return reply


class StopAtThirdEpisode(Peeker):
    """Blocks at the first request of the third episode (TSLA), as a run interrupted there."""

    def __init__(self, event: asyncio.Event) -> None:
        super().__init__()
        self.event = event

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        if "Symbol: TSLA" in first_prompt(messages):
            self.event.set()
            await asyncio.sleep(3600)
        return await super().complete(messages, tools)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("tamper")
    base = run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), out=out, name="base", progress=False)
    assert base.status == "complete"
    assert main(["score", str(base.run_dir)]) == 0  # writes score.json, as `finenvs llm` does
    other = run_llm(RunConfig(symbols=["AAPL"], **CONFIG), Peeker(), out=out, name="other", progress=False)

    async def interrupted() -> None:
        event = asyncio.Event()
        task = asyncio.create_task(run_llm_async(RunConfig(symbols=SYMBOLS, **CONFIG), StopAtThirdEpisode(event),
                                                 out=out, name="cut", progress=False))
        await event.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    return {"base": base.run_dir, "other": other.run_dir, "cut": out / "cut"}


@pytest.fixture(scope="module")
def where(runs) -> dict[Any, int]:
    """Line number (1-based) of each record of the base run: ``("step", episode, step)``, ``("episode", e)``."""
    out: dict[Any, int] = {}
    for n, line in enumerate(lines_of(runs["base"]), 1):
        r = json.loads(line)
        out[("step", r["episode"], r["step"]) if r["type"] == "step" else ("episode", r["episode"])] = n
    return out


# ---------------------------------------------------------------------------- editing a copy
def lines_of(folder: Path) -> list[bytes]:
    return (folder / TRAJECTORY).read_bytes().split(b"\n")[:-1]


def write_lines(folder: Path, lines: list[bytes], end: bytes = b"\n") -> None:
    (folder / TRAJECTORY).write_bytes(b"\n".join(lines) + end)


def edit_line(folder: Path, n: int, change: Callable[[dict[str, Any]], Any]) -> None:
    """Change one record's values and write it back exactly as the writer would (only the values differ)."""
    lines = lines_of(folder)
    record = json.loads(lines[n - 1])
    change(record)
    lines[n - 1] = json_line(record)
    write_lines(folder, lines)


def edit_json(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def score_cli(folder: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["score", str(folder)])
    return code, capsys.readouterr().out


def rechain_from(lines: list[bytes], start: int) -> list[bytes]:
    """What someone who knows the chain does after an edit: recompute ``prev`` of every line from ``start`` on."""
    for i in range(max(start, 1), len(lines)):
        record = json.loads(lines[i])
        record["prev"] = hashlib.sha256(lines[i - 1]).hexdigest()
        lines[i] = json_line(record)
    return lines


def recompute_digests(folder: Path, change_meta: Callable[[dict[str, Any]], Any] | None = None,
                      change_lines: Callable[[list[bytes]], list[bytes]] | None = None, *,
                      strip_macs: bool = False) -> None:
    """Everything someone who knows the unkeyed format, but not the key, can redo after an edit: run.json's identity
    digests and genesis, every line's ``prev`` from it, the line count and the final digest (the seal and the
    lines' MACs stay as they were, or are removed)."""
    meta = json.loads((folder / "run.json").read_text())
    if change_meta is not None:
        change_meta(meta)
    lines = lines_of(folder)
    if change_lines is not None:
        lines = change_lines(lines)
    identity = run_identity(meta)
    prev = chain_genesis(identity)
    meta["integrity"].update(identity=identity, genesis=prev)
    for i, line in enumerate(lines):
        record = json.loads(line)
        if strip_macs:
            record.pop("mac", None)
        record["prev"] = prev
        lines[i] = json_line(record)
        prev = hashlib.sha256(lines[i]).hexdigest()
    meta["integrity"].update(lines=len(lines), final=prev)
    write_lines(folder, lines)
    (folder / "run.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def downgrade(meta: dict[str, Any]) -> None:
    """Set a keyed run back to the unkeyed run format 3."""
    meta.pop("seal", None)
    meta["format"] = 3


# ---------------------------------------------------------------------------- the variants
def _swap(lines: list[bytes], i: int) -> list[bytes]:
    lines[i - 1], lines[i] = lines[i], lines[i - 1]
    return lines


def _step(w, e, s):
    return w[("step", e, s)]


def _flip_action(r):
    r["action"], r["env_action"] = ("SELL", 0) if r["action"] != "SELL" else ("BUY", 2)


def _zero_look_ahead(r):
    assert r["look_ahead"] > 0
    r["look_ahead"] = 0
    for call in r["tool_calls"]:
        call["look_ahead"] = 0


def _null_invalid(r):
    assert r["invalid"]
    r["invalid"] = None


def _reward_and_rechain(folder, w):
    lines = lines_of(folder)
    n = _step(w, 1, 4)
    record = json.loads(lines[n - 1])
    record["reward"] += 0.01
    lines[n - 1] = json_line(record)
    write_lines(folder, rechain_from(lines, n))


def _append_other_episode(folder, w, runs):
    write_lines(folder, lines_of(folder) + lines_of(runs["other"]))


def _reorder_episodes(folder, w):
    lines = lines_of(folder)
    first, second = w[("episode", 0)], w[("episode", 1)]
    write_lines(folder, lines[first:second] + lines[:first] + lines[second:])


def _drop_plan_episode(meta):
    meta["episodes"].pop()
    meta["plan"]["episodes"] -= 1
    meta["plan"]["labels"].pop()


def _strip_chain(r):
    del r["seq"], r["prev"]


def _drop_last_line_and_recount(folder, w):
    recompute_digests(folder, change_lines=lambda lines: lines[:-1])


# name: (edit(folder, where, runs), expected start of the first bad line's report)
VARIANTS: dict[str, tuple[Callable[..., Any], Callable[[dict[Any, int]], str]]] = {
    "delete a step line": (
        lambda f, w, r: write_lines(f, [x for i, x in enumerate(lines_of(f), 1) if i != _step(w, 1, 3)]),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 3)}"),
    "delete an episode record": (
        lambda f, w, r: write_lines(f, [x for i, x in enumerate(lines_of(f), 1) if i != w[("episode", 0)]]),
        lambda w: f"{TRAJECTORY} line {w[('episode', 0)]}"),
    "delete a whole episode": (
        lambda f, w, r: write_lines(f, lines_of(f)[:w[("episode", 0)]] + lines_of(f)[w[("episode", 1)]:]),
        lambda w: f"{TRAJECTORY} line {w[('episode', 0)] + 1}"),
    "duplicate a line": (
        lambda f, w, r: write_lines(f, (lambda x, i: x[:i] + [x[i - 1]] + x[i:])(lines_of(f), _step(w, 1, 4))),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 4) + 1}"),
    "swap two lines": (
        lambda f, w, r: write_lines(f, _swap(lines_of(f), _step(w, 1, 4))),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 4)}"),
    "insert a garbage line": (
        lambda f, w, r: write_lines(f, (lambda x, i: x[:i] + [b"garbage"] + x[i:])(lines_of(f), _step(w, 0, 5))),
        lambda w: f"{TRAJECTORY} line {_step(w, 0, 5) + 1}"),
    "insert a blank line in the middle": (
        lambda f, w, r: write_lines(f, (lambda x, i: x[:i] + [b""] + x[i:])(lines_of(f), _step(w, 1, 5))),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 5) + 1}"),
    "truncate the last line": (
        lambda f, w, r: write_lines(f, lines_of(f)[:-1] + [lines_of(f)[-1][:200]], end=b""),
        lambda w: f"{TRAJECTORY} line {w[('episode', 2)]}"),
    "edit the first line": (
        lambda f, w, r: edit_line(f, 1, lambda rec: rec.update(date="2025-09-30")),
        lambda w: f"{TRAJECTORY} line 1"),
    "edit an action": (
        lambda f, w, r: edit_line(f, _step(w, 0, 5), _flip_action),
        lambda w: f"{TRAJECTORY} line {_step(w, 0, 5)}"),
    "edit a reward": (
        lambda f, w, r: edit_line(f, _step(w, 1, 6), lambda rec: rec.update(reward=rec["reward"] + 0.01)),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 6)}"),
    "edit a metric in an episode record": (
        lambda f, w, r: edit_line(f, w[("episode", 1)], lambda rec: rec["metrics"]["standard"].update(sharpe=3.0)),
        lambda w: f"{TRAJECTORY} line {w[('episode', 1)]}"),
    "edit a metric in the last line": (
        lambda f, w, r: edit_line(f, w[("episode", 2)], lambda rec: rec["metrics"].update(final_equity=1.5)),
        lambda w: f"{TRAJECTORY} line {w[('episode', 2)]}"),
    "null an invalid reason": (
        lambda f, w, r: edit_line(f, _step(w, 1, 2), _null_invalid),
        lambda w: f"{TRAJECTORY} line {_step(w, 1, 2)}"),
    "zero a look-ahead count": (
        lambda f, w, r: edit_line(f, _step(w, 0, 6), _zero_look_ahead),
        lambda w: f"{TRAJECTORY} line {_step(w, 0, 6)}"),
    "change a reply text": (
        lambda f, w, r: edit_line(f, _step(w, 2, 2), lambda rec: rec.update(raw_text="Action: BUY")),
        lambda w: f"{TRAJECTORY} line {_step(w, 2, 2)}"),
    "change a prompt": (
        lambda f, w, r: edit_line(f, _step(w, 2, 5), lambda rec: rec.update(prompt=rec["prompt"].replace("Close", "C"))),
        lambda w: f"{TRAJECTORY} line {_step(w, 2, 5)}"),
    "change token usage": (
        lambda f, w, r: edit_line(f, _step(w, 0, 7), lambda rec: rec["usage"].update(prompt_tokens=1)),
        lambda w: f"{TRAJECTORY} line {_step(w, 0, 7)}"),
    "strip the chain fields from a line": (
        lambda f, w, r: edit_line(f, _step(w, 0, 4), _strip_chain),
        lambda w: f"{TRAJECTORY} line {_step(w, 0, 4)}"),
    "edit a reward and re-chain every later line": (
        lambda f, w, r: _reward_and_rechain(f, w),
        lambda w: f"{TRAJECTORY} line {w[('episode', 2)]}"),
    "reorder episodes": (
        lambda f, w, r: _reorder_episodes(f, w),
        lambda w: f"{TRAJECTORY} line 1"),
    "append a copied episode from another run": (
        _append_other_episode,
        lambda w: f"{TRAJECTORY} line {w[('episode', 2)] + 1}"),
    "edit run.json's model": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m["agent"].update(model="gpt-5")),
        lambda w: "run.json: agent"),
    "edit run.json's config": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m["config"].update(max_tool_calls=99)),
        lambda w: "run.json: config"),
    "edit run.json's plan": (
        lambda f, w, r: edit_json(f / "run.json", _drop_plan_episode),
        lambda w: "run.json: episodes, plan"),
    "change the data manifest digest in run.json": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m.update(data_manifest="0" * 64)),
        lambda w: "run.json: data_manifest"),
    "remove the final digest from run.json": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m["integrity"].pop("final")),
        lambda w: "run.json: integrity records no line count and final digest"),
    "remove the integrity block from run.json": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m.pop("integrity")),
        lambda w: "run.json: has no integrity block"),
    "edit run.json's outcomes": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m["outcomes"][1].update(decisions=9)),
        lambda w: "run.json: outcomes say episode 1"),
    "delete the score file's digest": (
        lambda f, w, r: edit_json(f / "score.json", lambda s: s.pop("integrity")),
        lambda w: "score.json: carries no chain digest"),
    "change the score file's data manifest digest": (
        lambda f, w, r: edit_json(f / "score.json", lambda s: s["integrity"].update(data_manifest="0" * 64)),
        lambda w: "score.json: its data manifest digest differs"),
    # what a key stops: edits whose unkeyed digests were all recomputed
    "edit integrity.lines in run.json": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m["integrity"].update(lines=m["integrity"]["lines"] + 2)),
        lambda w: "run.json: integrity.lines changed after the run wrote it: its seal"),
    "drop the last line and recount integrity.lines and final": (
        lambda f, w, r: _drop_last_line_and_recount(f, w),
        lambda w: "run.json: integrity.lines, integrity.final changed after the run wrote it"),
    "edit run.json's status": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m.update(status="running")),
        lambda w: "run.json: status changed after the run wrote it"),
    "edit run.json's outcomes and note": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m.update(note="resume me")),
        lambda w: "run.json: note changed after the run wrote it"),
    "edit the config and recompute every digest": (
        lambda f, w, r: recompute_digests(f, lambda m: m["config"].update(max_tool_calls=99)),
        lambda w: "run.json: config, integrity.identity, integrity.genesis, integrity.final changed"),
    "edit an episode's env arguments and recompute every digest": (
        lambda f, w, r: recompute_digests(f, lambda m: m["episodes"][0]["env_kwargs"].update(fee_bps=0)),
        lambda w: "run.json: episodes, integrity.identity"),
    "edit the agent and recompute every digest": (
        lambda f, w, r: recompute_digests(f, lambda m: m["agent"].update(model="gpt-5")),
        lambda w: "run.json: agent, integrity.identity"),
    "edit a reward and recompute every digest": (
        lambda f, w, r: recompute_digests(f, change_lines=lambda lines: _reward_up(lines, _step(w, 1, 4))),
        lambda w: "run.json: integrity.final changed"),
    "strip run.json's seal": (
        lambda f, w, r: edit_json(f / "run.json", lambda m: m.pop("seal")),
        lambda w: "run.json: has no hmac-sha256 seal"),
    "strip the seal and the MACs, keep the keyed format, recompute every digest": (
        lambda f, w, r: recompute_digests(f, lambda m: m.pop("seal"), strip_macs=True),
        lambda w: "run.json: has no hmac-sha256 seal"),
    "set the format back to 3 and recompute every digest, the lines' MACs kept": (
        lambda f, w, r: recompute_digests(f, downgrade),
        lambda w: f"{TRAJECTORY} line 1: carries a MAC, yet run.json says run format 3"),
    "set the format back to 3 with the seal kept": (
        lambda f, w, r: recompute_digests(f, lambda m: m.update(format=3), strip_macs=True),
        lambda w: "run.json: carries a seal, yet says run format 3"),
}


def _reward_up(lines: list[bytes], n: int) -> list[bytes]:
    record = json.loads(lines[n - 1])
    record["reward"] += 0.01
    lines[n - 1] = json_line(record)
    return lines


def test_the_untouched_run_reproduces_with_its_chain_recorded(runs, capsys):
    base = runs["base"]
    code, out = score_cli(base, capsys)
    assert code == 0 and "the live scores exactly" in out and "outcome: reproduced (exit 0)" in out
    meta = json.loads((base / "run.json").read_text())
    score = json.loads((base / "score.json").read_text())
    lines = lines_of(base)
    assert meta["plan"] == {"episodes": 3, "labels": [f"#{i} FinTrading-v0 {s} seed=0" for i, s in enumerate(SYMBOLS)]}
    assert meta["integrity"]["lines"] == score["integrity"]["lines"] == len(lines) == 33
    assert meta["integrity"]["final"] == score["integrity"]["final"] == hashlib.sha256(lines[-1]).hexdigest()
    assert score["integrity"]["data_manifest"] == meta["data_manifest"] and score["status"] == "reproduced"
    assert [o["decisions"] for o in meta["outcomes"]] == [10, 10, 10]
    assert json.loads(lines[0])["prev"] == meta["integrity"]["genesis"]
    steps = [r for r in read_trajectories(base / TRAJECTORY)[0] if r["type"] == "step"]
    assert all("seq" not in r and "prev" not in r for r in steps)  # readers strip the chain fields
    assert sum(r["look_ahead"] for r in steps) == 30 and sum(bool(r["invalid"]) for r in steps) == 3
    assert all("\ud800" in r["raw_text"] for r in steps if r["step"] == 2)  # the lone surrogate, recorded
    assert main(["score", str(base), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "reproduced"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_tampered_copy_is_detected_and_the_first_bad_line_named(runs, where, variant, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(runs["base"], copy)
    edit, expected = VARIANTS[variant]
    edit(copy, where, runs)
    code, out = score_cli(copy, capsys)
    assert code == 1, out[-600:]
    assert "TAMPERED" in out and f"first bad line: {expected(where)}" in out, out[-800:]
    assert json.loads((copy / "score.json").read_text())["status"] == "tampered"


def test_dropping_the_last_line_of_a_stopped_run_is_tampered_not_incomplete(runs, where, tmp_path, capsys):
    """run.json (sealed) recorded 33 lines when the run stopped; a file of 32 is not what a crash leaves (the writer
    syncs its lines before run.json records them), so it is not offered for resuming."""
    copy = tmp_path / "copy"
    shutil.copytree(runs["base"], copy)
    write_lines(copy, lines_of(copy)[:-1])
    code, out = score_cli(copy, capsys)
    assert code == 1 and "INCOMPLETE" not in out and "--resume" not in out
    assert f"first bad line: {TRAJECTORY} line {where[('episode', 2)]}: is missing: run.json recorded 33" in out


def test_an_interrupted_run_is_incomplete_and_resuming_continues_the_chain(runs, tmp_path, capsys):
    cut = tmp_path / "cut"
    shutil.copytree(runs["cut"], cut)
    meta = json.loads((cut / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["plan"]["episodes"] == 3
    records = read_trajectories(cut / TRAJECTORY)[0]
    assert sorted(r["episode"] for r in records if r["type"] == "episode") == [0, 1]  # planned 3, wrote 2
    code, out = score_cli(cut, capsys)
    assert code == 3 and "INCOMPLETE: 2 of 3 planned episodes finished" in out and "episode 2 has not started" in out
    assert f"finenvs llm --resume {cut}" in out and "TAMPERED" not in out
    assert json.loads((cut / "score.json").read_text())["status"] == "incomplete"

    summary = run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=cut, progress=False)
    assert summary.status == "complete"
    code, out = score_cli(cut, capsys)
    assert code == 0, out[-800:]
    ours = [json.loads(x) for x in lines_of(cut)]
    whole = [json.loads(x) for x in lines_of(runs["base"])]
    assert [r["seq"] for r in ours] == list(range(1, 34))
    assert [(r.get("env_action"), r.get("reward")) for r in ours] == [(r.get("env_action"), r.get("reward"))
                                                                      for r in whole]


def as_the_runner_wrote(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    """run.json changed and sealed again with this machine's key, through the runner's own writer: how a test sets
    up a state the runner itself leaves (a crash); an attacker has no key to do this."""
    meta = json.loads(path.read_text())
    change(meta)
    write_run_json(path, meta)


def test_a_crash_leaves_a_partial_line_that_is_incomplete_and_repaired_on_resume(runs, tmp_path, capsys):
    crashed = tmp_path / "crashed"
    shutil.copytree(runs["cut"], crashed)
    # what a killed process leaves: run.json as it was written (and sealed) at the start, its validly-MACed lines
    # after that run.json's count, and a line cut mid-write
    as_the_runner_wrote(crashed / "run.json", lambda m: (
        m.update(status="running"), m.pop("finished_utc"), m.pop("outcomes", None), m.pop("note"),
        m["integrity"].update(lines=0, final=m["integrity"]["genesis"])))
    with open(crashed / TRAJECTORY, "ab") as fh:
        fh.write(b'{"type":"step","episode":2,"ste')
    code, out = score_cli(crashed, capsys)
    assert code == 3 and "partial last line" in out and "TAMPERED" not in out and "signature: signed" in out
    assert run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=crashed, progress=False).status == "complete"
    code, out = score_cli(crashed, capsys)
    assert code == 0, out[-800:]


def test_resume_refuses_a_tampered_run(runs, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(runs["cut"], cut)
    edit_line(cut, 3, lambda rec: rec.update(invalid=None))
    with pytest.raises(ValueError, match=f"{TRAJECTORY} line 3"):
        run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=cut, progress=False)


def test_a_lone_surrogate_is_written_safely_and_chained_by_the_bytes_written(tmp_path):
    path = tmp_path / TRAJECTORY
    genesis = "ab" * 32
    writer = TrajectoryWriter(path, genesis=genesis)
    broken = {"type": "step", "raw_text": "half an emoji \ud83d and a lone \udc00", "note": "café"}
    writer.write(broken)
    writer.write({"type": "step", "raw_text": "café"})
    writer.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    records, dropped = read_trajectories(path)
    assert dropped == 0 and records == [broken, {"type": "step", "raw_text": "café"}]
    first, second = json.loads(lines[0]), json.loads(lines[1])
    assert (first["seq"], first["prev"]) == (1, genesis)
    assert (second["seq"], second["prev"]) == (2, hashlib.sha256(lines[0]).hexdigest())
    assert writer.digest == hashlib.sha256(lines[1]).hexdigest() and "café" in lines[1].decode("utf-8")
    continued = TrajectoryWriter(path, genesis=genesis)  # a resumed run continues from the last line
    assert (continued.lines, continued.digest) == (2, writer.digest)
    continued.close()


# ---------------------------------------------------------------------------- the keyed chain: scenarios
@pytest.fixture(scope="module")
def live(tmp_path_factory) -> tuple[Path, Path, Any]:
    """A live run waiting at its newest bar (2026-04-15) with the decision there recorded as pending; its data file
    and the bars up to the window's end."""
    import pandas as pd

    from finenvs.data.catalog import default_catalog

    out = tmp_path_factory.mktemp("live")
    series = default_catalog().series("TSLA")
    bars = pd.DataFrame({"date": series.dates.astype(str), "open": series.open, "high": series.high,
                         "low": series.low, "close": series.close, "volume": series.volume})
    bars = bars[bars.date <= "2026-04-30"]
    data = out / "tsla.csv"
    bars[bars.date <= "2026-04-15"].to_csv(data, index=False)
    summary = run_llm(live_config(data), ScriptedTradingAgent(), out=out, name="live", progress=False)
    assert summary.status == "waiting"
    return summary.run_dir, data, bars


def live_config(data: Path) -> RunConfig:
    return RunConfig(env_id="FinTrading-v0", symbols=["TSLA"], split="live",
                     env_kwargs={"data": str(data), "end": "2026-04-30"}, live=True)


def test_an_edited_pending_decision_with_recomputed_digests_is_tampered_and_never_stepped(live, tmp_path, capsys):
    """The measured attack: change the live decision waiting for its bar, recompute every unkeyed digest; before the
    key, ``finenvs score`` passed it and ``--resume --live`` stepped the edited action."""
    run, data, bars = live
    edited, untouched = tmp_path / "edited", tmp_path / "untouched"
    shutil.copytree(run, edited)
    shutil.copytree(run, untouched)
    n = next(i for i, line in enumerate(lines_of(run), 1) if json.loads(line)["type"] == "pending")
    original = json.loads(lines_of(run)[n - 1])["action"]
    flipped = {"action": "SELL", "env_action": 0} if original != "SELL" else {"action": "BUY", "env_action": 2}

    def flip(lines: list[bytes]) -> list[bytes]:
        record = json.loads(lines[n - 1])
        record.update(flipped)
        lines[n - 1] = json_line(record)
        return lines

    recompute_digests(edited, change_lines=flip)
    code, out = score_cli(edited, capsys)
    assert code == 1 and "TAMPERED" in out, out[-800:]
    assert "first bad line: run.json: integrity.final changed after the run wrote it" in out
    assert f"{TRAJECTORY} line {n}: its MAC does not verify under this machine's run key" in out
    assert "signature: INVALID" in out
    bars.to_csv(data, index=False)  # the next bars arrive
    try:
        with pytest.raises(ValueError, match="tampered.*integrity.final changed"):
            run_llm(live_config(data), ScriptedTradingAgent(), resume=edited, progress=False)
        assert b'"decided_pending"' not in (edited / TRAJECTORY).read_bytes()  # nothing was stepped
        # the control: the untouched copy steps the decision its verified pending line holds
        assert run_llm(live_config(data), ScriptedTradingAgent(), resume=untouched, progress=False).status == "complete"
        code, out = score_cli(untouched, capsys)
        assert code == 0 and "signature: signed" in out, out[-600:]
    finally:
        bars[bars.date <= "2026-04-15"].to_csv(data, index=False)
    stepped = [r for r in read_trajectories(untouched / TRAJECTORY)[0] if r.get("decided_pending")]
    assert [r["action"] for r in stepped] == [original]


def test_a_line_made_with_another_key_is_named(runs, where, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(runs["base"], copy)
    other = b"\x07" * seal.KEY_BYTES
    n = _step(where, 2, 3)

    def remac(lines: list[bytes]) -> list[bytes]:  # the line's content unchanged, its MAC another key's
        record = json.loads(lines[n - 1])
        record.pop("mac")
        lines[n - 1] = seal.seal_line(other, json_line(record))
        return lines

    recompute_digests(copy, change_lines=remac)
    code, out = score_cli(copy, capsys)
    assert code == 1 and "first bad line: run.json: integrity.final changed" in out, out[-800:]
    assert f"{TRAJECTORY} line {n}: its MAC does not verify under this machine's run key" in out
    assert json.loads((copy / "score.json").read_text())["signature"] == "invalid"


@pytest.fixture
def another_machine(tmp_path, monkeypatch) -> Path:
    """This process on a machine whose run key is another (a new key file); returns the first machine's key file."""
    mine = seal.run_key_path()
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(tmp_path / "other-machine" / "run-key"))
    seal.load_or_create_key()
    return mine


def test_a_run_moved_to_a_machine_with_another_key_is_unsigned_here_and_not_resumed(runs, where, tmp_path, capsys,
                                                                                      another_machine, monkeypatch):
    moved, cut = tmp_path / "moved", tmp_path / "cut"
    shutil.copytree(runs["base"], moved)
    shutil.copytree(runs["cut"], cut)
    code, out = score_cli(moved, capsys)
    assert code == 0 and "outcome: reproduced (exit 0)" in out, out[-800:]
    key_id = json.loads((moved / "run.json").read_text())["seal"]["key_id"]
    assert f"signature: unsigned here (sealed with run key {key_id}, not this machine's" in out
    assert json.loads((moved / "score.json").read_text())["signature"] == "unsigned here"
    code, out = score_cli(cut, capsys)
    assert code == 3 and "INCOMPLETE" in out and "it cannot be resumed here (unsigned here" in out
    with pytest.raises(ValueError, match=r"cannot resume: it is unsigned here \(sealed with run key"):
        run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=cut, progress=False)
    capsys.readouterr()
    assert main(["llm", "--resume", str(cut), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unsigned here" in err and len(err.splitlines()) == 1
    # the unkeyed chain still checks the content there: an edit is tampered, not "unsigned here"
    edit_line(moved, _step(where, 0, 5), _flip_action)
    code, out = score_cli(moved, capsys)
    assert code == 1 and f"first bad line: {TRAJECTORY} line {_step(where, 0, 5)}" in out
    # a team shares verification by sharing the key file
    shared = tmp_path / "shared-key"
    shutil.copyfile(another_machine, shared)
    monkeypatch.setenv(seal.RUN_KEY_ENV, str(shared))
    code, out = score_cli(runs["base"], capsys)
    assert code == 0 and "signature: signed" in out


def test_a_run_signed_again_with_another_key_is_unsigned_here_never_signed(runs, tmp_path, capsys):
    """Someone with a key of their own can edit and re-sign a run; it then reads "unsigned here" on this machine
    (only its content is checked) and is never resumed here: the limit the docs state."""
    copy = tmp_path / "copy"
    shutil.copytree(runs["base"], copy)
    other = b"\x01" * seal.KEY_BYTES
    recompute_digests(copy, lambda m: m.update(note="re-signed"), strip_macs=True)
    lines = [seal.seal_line(other, line) for line in lines_of(copy)]
    recompute_digests(copy, change_lines=lambda _: lines)
    write_run_json(copy / "run.json", json.loads((copy / "run.json").read_text()), key=other)
    (copy / "score.json").unlink()
    code, out = score_cli(copy, capsys)
    assert code == 0 and "signature: unsigned here" in out and "signature: signed" not in out, out[-600:]
    with pytest.raises(ValueError, match="unsigned here"):
        run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=copy, progress=False)


@pytest.mark.parametrize("folder", ["base", "cut"])
def test_a_run_set_back_to_the_unkeyed_format_is_unsigned_and_not_resumed(runs, folder, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(runs[folder], copy)
    recompute_digests(copy, downgrade, strip_macs=True)
    (copy / "score.json").unlink(missing_ok=True)
    code, out = score_cli(copy, capsys)
    assert code == (0 if folder == "base" else 3), out[-600:]
    assert "signature: unsigned (run format 3, recorded before run folders were keyed" in out
    assert "signed" not in out.replace("unsigned", "")
    assert json.loads((copy / "score.json").read_text())["signature"] == "unsigned"
    with pytest.raises(ValueError, match=r"cannot resume: it is unsigned \(run format 3"):
        run_llm(RunConfig(symbols=SYMBOLS, **CONFIG), Peeker(), resume=copy, progress=False)


def test_the_cli_resumes_of_llm_and_harness_refuse_a_tampered_run_before_reading_its_setup(runs, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(runs["cut"], copy)
    edit_json(copy / "run.json", lambda m: m["agent"].update(kind="harness", command="touch pwned"))
    for command in ("llm", "harness"):
        capsys.readouterr()
        assert main([command, "--resume", str(copy), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "tampered" in err and "run.json: agent changed" in err, err
    assert not (copy / "harness").exists() and not Path("pwned").exists()


def test_a_signed_run_keeps_its_seal_fresh_through_every_write(runs):
    meta = json.loads((runs["base"] / "run.json").read_text())
    key = seal.load_key()
    assert meta["format"] == 4 and meta["seal"]["key_id"] == seal.key_id(key) and seal.run_seal_ok(meta, key)
    assert meta["status"] == "complete" and meta["integrity"]["lines"] == 33  # sealed after the last write
    for line in lines_of(runs["base"]):
        body, mac = seal.split_line(line)
        assert seal.mac_hex(key, body) == mac and json.loads(body).keys() == json.loads(line).keys() - {"mac"}
