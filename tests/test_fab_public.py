"""The Finance Agent Benchmark's public questions: data file, rubric scoring, FinQA-v0's ``fab_public`` split.

Checks the shipped data (strict JSON, 50 questions, manifest entry, rebuilt from the source CSV when it is
present), the rubric matcher (the expert answer passes its own deterministic items; every number of it moved
by 15% fails them; a different figure for the same quantity fails a contradiction item, an unrelated one does
not), hostile answers, the optional judge, and the env and baselines on every question.

Not here, on purpose: the counterfactual future-invariance and date-lock tests of the other FinQA-v0 splits.
These questions are closed-book: nothing reads the shipped data (no as-of view is consulted to build or
score them), so there is no future to perturb and no lock to probe.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import gymnasium as gym
import pytest

import finenvs  # noqa: F401  (registers FinQA-v0)
from finenvs.data.manifest import load_manifest, verify_entry
from finenvs.tasks.qa import env as qa_env
from finenvs.tasks.qa import fab_public as fab
from finenvs.tasks.qa.baselines import QA_POLICIES, Reference, ScriptedQAChatAgent, run_qa
from finenvs.tasks.qa.spec import SPLIT_SIZES
from tests.hostile import floods

SOURCE_CSV = Path("/work/shared/data/questions/finance_agent_benchmark_public.csv")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def items():
    return list(fab.shipped_items())


@pytest.fixture(scope="module")
def env():
    e = gym.make("FinQA-v0", split="fab_public")
    yield e
    e.close()


# ----------------------------------------------------------------------------- data
def _strict(name):
    raise ValueError(f"non-strict JSON constant {name}")


def test_data_file_is_strict_json_with_50_questions():
    manifest = load_manifest()
    path = manifest.root / fab.DATA_FILE
    doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_strict)
    assert len(doc["items"]) == 50 == SPLIT_SIZES["fab_public"]
    assert "MIT" in doc["licence"] and "vals-ai" in doc["source"]
    for i, item in enumerate(doc["items"]):
        assert item["id"] == f"fab_public/{i:02d}" and item["question"] and item["answer"] and item["rubric"]
        assert "vals-ai" in item["source"] and {r["operator"] for r in item["rubric"]} <= set(fab.OPERATORS)
    entry = next(e for e in manifest.entries if e.file == fab.DATA_FILE)
    assert entry.kind == "questions" and entry.rows == 50 and "MIT" in entry.licence
    assert verify_entry(manifest, entry).startswith(f"{fab.DATA_FILE}: ok (50 items")


@pytest.mark.skipif(not SOURCE_CSV.is_file(), reason="the gathered source CSV is not on this machine")
def test_data_file_is_the_source_csv_row_for_row():
    from finenvs.envs_data.build_fab_public import read_rows

    shipped = json.loads((load_manifest().root / fab.DATA_FILE).read_text(encoding="utf-8"))["items"]
    assert read_rows(SOURCE_CSV) == shipped


def test_malformed_rubric_names_where(tmp_path):
    with pytest.raises(ValueError, match="row 7 rubric: item 1 needs operator"):
        fab.parse_rubric('[{"operator": "correctness", "criteria": "x"}, {"operator": "maybe"}]', "row 7 rubric")
    with pytest.raises(ValueError, match="row 3 rubric: the rubric is not JSON"):
        fab.parse_rubric("[{", "row 3 rubric")
    bad = tmp_path / "fab.json"
    bad.write_text('{"items": [{"id": "x", "question": "q"}]}')
    with pytest.raises(ValueError, match=r"fab.json item 0: field 'index'"):
        fab.load_items(bad)
    bad.write_text('{"items": [NaN]}')
    with pytest.raises(Exception, match="not strict JSON"):
        fab.load_items(bad)


def test_answer_cap_is_finqas():
    assert fab.MAX_ANSWER_CHARS == qa_env.MAX_ANSWER_CHARS


# ----------------------------------------------------------------------------- classification
def test_classification_rules(items):
    counts = fab.count_items(items)
    assert counts["items"] == sum(len(it.rubric) for it in items) == 250
    assert 0 < counts["deterministic"] < counts["items"]
    assert counts["deterministic"] == counts["deterministic_correctness"] + counts["deterministic_contradiction"]
    for it in items:
        for r in it.rubric:
            if not re.search(r"\d", r.criteria):
                assert not r.deterministic, r.criteria  # no digit, no figure
            if re.search(r"\d\s*(%|bps\b|basis points)", r.criteria) and not fab.read_figures(it.question)[0]:
                assert r.deterministic, r.criteria  # a percent or bps figure the question does not state
    by_text = {r.criteria: r for it in items for r in it.rubric}
    assert not by_text["Production expected to begin in 2025"].deterministic  # a bare year is a label
    assert [f.text for f in by_text["80bps beat from low end"].figures] == ["80bps"]


@pytest.mark.parametrize("text, kind, value", [
    ("$14B", "amount", 14e9), ("$3.25 Billion", "amount", 3.25e9), ("$85,002 thousands", "amount", 85_002_000),
    ("$(149.7) Million", "amount", 149.7e6), ("$14,060M", "amount", 14_060e6), ("22.6%", "percent", 22.6),
    ("140 basis points", "percent", 1.4), ("410bps", "percent", 4.1), ("0.824", "amount", 0.824),
])
def test_read_figures_units(text, kind, value):
    (f,), _ = fab.read_figures(text)
    assert f.kind == kind and f.value == pytest.approx(value)


def test_names_and_years_are_not_figures():
    figures, _ = fab.read_figures("Q1 FY2024 10-K in 2025, Q4'24 H1")
    assert figures == []
    (d1, d2, d3, d4), _ = fab.read_figures("December 18, 2023; 5/31/2024; 2024-05-31; Mar. 1")
    assert (d1.date, d2.date, d3.date, d4.date) == ((2023, 12, 18), (2024, 5, 31), (2024, 5, 31), (None, 3, 1))
    (a, b), _ = fab.read_figures("0.3312-0.4140 shares")  # a range, not a minus
    assert (a.value, b.value) == (0.3312, 0.414)


@pytest.mark.parametrize("expected, given, ok", [
    ("410bps", "4.1%", True), ("4.10%", "410 basis points", True), ("80bps", "0.9%", False),
    ("$3.25 billion", "$3,250 million", True), ("$3.25 billion", "3.25", True), ("$3.25 billion", "$3.3 billion", False),
    ("22.6%", "22.65%", True), ("22.6%", "22.8%", False), ("22.6%", "0.226", False),
    ("2,865,507", "2,865,507 thousand", True), ("2,865,507", "2,880,000", False),
    ("$4B", "$4.4B", True), ("$4B", "$4.6B", False),  # half a unit of the last written digit
    ("December 18, 2023", "2023-12-18", True), ("December 18, 2023", "Dec 19, 2023", False),
    ("-1.2%", "1.2%", True),  # magnitudes: the sign is read from words, not checked
])
def test_matching_tolerance(expected, given, ok):
    (e,), _ = fab.read_figures(expected)
    assert fab.FigureIndex(fab.read_figures(given)[0]).contains(e) is ok
    assert any(fab.matches(e, g) for g in fab.read_figures(given)[0]) is ok


# ----------------------------------------------------------------------------- the expert answer and its perturbation
#: Questions whose expert answer fails one of its own deterministic items, and why. None today: the two the
#: first matcher failed (the "2 year" of "2 year revenue CAGR", the "as of Dec 31, 2024" the question asks at)
#: were figures the question itself states, which are context and not required (see parse_rubric).
KNOWN_REFERENCE_FAILURES: dict[str, str] = {}


def test_expert_answer_passes_its_deterministic_items(items):
    failures = {}
    for it in items:
        record = it.score(it.expert_answer)
        bad = [p["name"] for p in record["parts"] if not p["correct"]]
        if bad:
            failures[it.id] = bad
        assert record["deterministic"]["total"] == sum(r.deterministic for r in it.rubric)
    assert set(failures) == set(KNOWN_REFERENCE_FAILURES), failures


def _perturb(text):
    """Every number of ``text`` times 1.15 (same decimals; a number rounding back to itself moves one unit);
    four-digit years 1900-2099 stay (they label periods)."""
    def move(m):
        raw = m.group(0)
        plain = raw.replace(",", "")
        if re.fullmatch(r"(19|20)\d\d", plain):
            return raw
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        x = float(plain)
        new = round(x * 1.15, decimals)
        if new == x:
            new = x + 10 ** -decimals
        out = f"{new:,.{decimals}f}" if "," in raw else f"{new:.{decimals}f}"
        return out
    return _NUMBER.sub(move, text)


#: Items the 15%-perturbed expert answer still passes, because another perturbed figure lands on theirs:
#: correctness matching is label-free ("every figure it states appears in the answer"), so a collision counts.
KNOWN_PERTURBATION_COLLISIONS = {
    ("fab_public/02", "correctness[0]"): "70bps x 1.15 = 80.5 -> 80bps, the low-end beat's figure",
    ("fab_public/48", "correctness[4]"): "$3.94 x 1.15 = $4.53, within 0.5% of FY2024's $4.52",
    ("fab_public/49", "correctness[4]"): "1.9% x 1.15 = 2.185 -> 2.2%, the average beat's figure",
}


def test_perturbed_expert_answer_fails_deterministic_items(items):
    assert _perturb("FY 2024: $1,000.50 and 2 and 0 in 2019") == "FY 2024: $1,150.57 and 3 and 1 in 2019"
    passed = set()
    for it in items:
        record = it.score(_perturb(it.expert_answer))
        passed |= {(it.id, p["name"]) for p in record["parts"] if p["correct"]}
    assert passed == set(KNOWN_PERTURBATION_COLLISIONS)
    for (qid, name), _ in KNOWN_PERTURBATION_COLLISIONS.items():  # each fails once its own figure is read alone
        it = next(i for i in items if i.id == qid)
        item = next(r for r in it.rubric if r.name == name)
        alone = " ".join(_perturb(f.text) for f in item.figures)
        assert fab.score_reply(alone, (item,), it.question).score == 0.0, (qid, alone)


def test_contradiction_item_fails_on_a_different_figure(items):
    nflx = next(it for it in items if "Average Revenue Per Paying User" in it.question)
    assert "2019: 10.82" in nflx.expert_answer
    wrong = nflx.expert_answer.replace("2019: 10.82", "2019: 12.40")
    record = nflx.score(wrong)
    verdict = {p["name"]: p for p in record["parts"]}
    contradiction = next(p for p in record["parts"] if p["operator"] == "contradiction")
    assert not contradiction["correct"] and "12.40" in contradiction["reason"] and "10.82" in contradiction["reason"]
    assert not verdict["correctness[0]"]["correct"] and verdict["correctness[1]"]["correct"]
    # an unrelated, labelled figure is no contradiction (conservative), nor is restating the question
    extra = nflx.expert_answer + "\nNetflix had 301.6 million paid memberships at the end of 2024."
    assert all(p["correct"] for p in nflx.score(extra)["parts"])


def test_contradiction_rules_on_a_hand_made_rubric():
    rubric = fab.parse_rubric([{"operator": "contradiction", "criteria": "80bps beat from low end and 70bps beat "
                                "from high end"}])
    assert fab.score_reply("We beat by 80bps from the low end and 70bps from the high end.", rubric).score == 1.0
    lost = fab.score_reply("We beat by 80bps from the low end and 95bps from the high end.", rubric)
    assert lost.score == 0.0 and "95bps" in lost.verdicts[0].reason
    assert fab.score_reply("No idea.", rubric).score == 0.0  # states none of the figures: no evidence
    assert fab.score_reply("Beat by 80bps at the low end; revenue was $4.1 billion.", rubric).score == 1.0


# ----------------------------------------------------------------------------- hostile answers and the judge
def _hostile():
    yield "digits", "7" * 60_000
    yield "percent-flood", "%" * 60_000
    yield "numbers-percent", "1% " * 20_000
    yield "deep-brackets", "[" * 30_000 + "1" + "]" * 30_000
    yield "deep-json", '{"answer": ' + "[" * 5_000 + "1" + "]" * 5_000 + "}"
    yield "dates", "December 18, 2023 " * 3_000
    yield "bps-labels", "Q1 2024 revenue: 80bps beat; " * 2_000
    yield from floods(60_000)
    for value in (None, 5, 1.5e308, float("nan"), b"\xff", {"answer": {"a": [1, 2, {"b": None}]}}, ["x"], {}):
        yield repr(value)[:20], value


@pytest.mark.parametrize("name, reply", list(_hostile()), ids=[n for n, _ in _hostile()])
def test_hostile_answers_never_raise(items, name, reply):
    it = max(items, key=lambda i: sum(len(r.figures) for r in i.rubric))  # the question with most figures
    out = fab.score_reply(reply, it.rubric, it.question)
    assert 0.0 <= out.score <= 1.0
    json.dumps(out.record(), allow_nan=False)  # the record is strict JSON, and echoes are bounded
    assert all(len(p["expected"]) <= fab.ECHO_CHARS for p in out.record()["parts"])


def test_hostile_answers_through_the_env(env):
    env.reset(options={"index": 1})
    for _, reply in list(_hostile())[:8]:
        env.reset(options={"index": 1})
        _, reward, terminated, _, info = env.step(reply)
        assert terminated and 0.0 <= reward <= 1.0 and info["qa"]["score"] == reward


def test_number_spraying_scores_zero(items):
    it = next(i for i in items if "Average Revenue Per Paying User" in i.question)
    spray = " ".join(f"{x / 100:.2f}" for x in range(1_000, 1_300))  # every value 10.00..12.99: hits each figure
    out = fab.score_reply(spray, it.rubric, it.question)
    assert out.score == 0.0 and "number spraying" in out.reason
    assert len(fab.read_figures(it.expert_answer)[0]) <= fab.spray_limit(it.rubric)
    for i in items:  # no expert answer comes near the limit
        assert len(fab.read_figures(i.expert_answer)[0]) * 2 <= fab.spray_limit(i.rubric), i.id


def test_judge_is_reported_apart(items):
    it = next(i for i in items if any(not r.deterministic for r in i.rubric) and any(r.deterministic for r in i.rubric))
    base = fab.score_reply(it.expert_answer, it.rubric, it.question)
    seen = []

    def judge(question, answer, item_text):
        seen.append(item_text)
        return 0.25

    judged = fab.score_reply(it.expert_answer, it.rubric, it.question, judge=judge)
    assert judged.score == base.score == 1.0 and seen == [r.criteria for r in it.rubric if not r.deterministic]
    assert judged.record()["judge"]["score"] == 0.25 and base.record()["judge"]["scored"] == 0

    def broken(question, answer, item_text):
        raise RuntimeError("judge offline")

    rec = fab.score_reply(it.expert_answer, it.rubric, it.question, judge=broken).record()
    assert rec["score"] == 1.0 and all("judge offline" in j["error"] for j in rec["judge"]["items"])
    rec = fab.score_reply(it.expert_answer, it.rubric, it.question, judge=lambda *a: 7).record()
    assert rec["judge"]["scored"] == 0 and "not a bool" in rec["judge"]["items"][0]["error"]


# ----------------------------------------------------------------------------- the env and the baselines
def test_every_question_through_the_env(env, items):
    reference = Reference.from_env(env)
    assert len(env.unwrapped.items) == len(items)
    for i, it in enumerate(items):
        obs, info = env.reset(options={"index": i})
        assert env.observation_space.contains(obs) and "Closed-book" in obs and it.expert_answer not in obs
        assert info["closed_book"] is True and "closed-book" in info["closed_book_reason"]
        assert info["task_id"] == it.id and info["section"] == "knowledge" and info["split"] == "fab_public"
        _, reward, terminated, truncated, step = env.step(reference(obs, info))
        qa = step["qa"]
        assert terminated and not truncated and qa["truth"] == {"expert_answer": it.expert_answer}
        assert len(qa["not_scored"]) == sum(not r.deterministic for r in it.rubric)
        if qa["scored"]:
            assert reward == 1.0 and qa["deterministic"]["passed"] == qa["deterministic"]["total"] > 0
        else:  # no deterministic item: 0, and the record says it measures nothing
            assert reward == 0.0 and qa["reason"].startswith("no deterministic rubric item")
        assert env.render() is None


def test_split_arguments_and_pickle(env):
    with pytest.raises(ValueError, match="fab_public"):
        gym.make("FinQA-v0", split="fab_public", section="analysis")
    assert len(gym.make("FinQA-v0", split="fab_public", section="knowledge").unwrapped.items) == 50
    env.reset(options={"index": 3})
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    assert clone.item == env.unwrapped.item
    base = gym.make("FinQA-v0", split="published")
    assert base.reset(options={"index": 0})[1]["closed_book"] is False


def test_every_baseline_runs_on_the_split(env, items):
    for name, (cls, _) in QA_POLICIES.items():
        rows = run_qa(env, cls.from_env(env, 0))
        assert len(rows) == len(items) and all(r["error"] is None for r in rows), name
        assert all(0.0 <= r["score"] <= 1.0 for r in rows)
    scripted = run_qa(env, QA_POLICIES["scripted_agent"][0].from_env(env, 0))
    assert all(r["score"] == 0.0 and r["tool_calls"] == 0 for r in scripted)  # it knows no facts: no answer


def test_scripted_chat_agent_commits_no_answer():
    text_env = gym.make("FinQA-text-v0", split="fab_public")
    prompt, _ = text_env.reset(options={"index": 2})
    reply = ScriptedQAChatAgent().reply([{"role": "user", "content": prompt}], text_env.tool_specs())
    (call,) = reply.tool_calls
    arguments = json.loads(call.arguments)
    assert call.name == "commit_action" and arguments["answer"] is None and "closed-book" in arguments["reasoning"]
    _, reward, terminated, _, info = text_env.step({"name": "commit_action", "arguments": call.arguments})
    assert terminated and reward == 0.0 and info["qa"]["reason"]
    text_env.close()
