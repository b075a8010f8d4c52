"""One task, one score, on every path: the env directly, ``finenvs llm`` against a local endpoint, ``finenvs score``
re-scoring the run folder, the MCP server, ``finenvs harness``, A2A and ``finenvs bench`` (tests/one_score_paths.py;
``benchmarks/one_score_paths.py`` prints the same as a table). Also the one debate rule
(:func:`finenvs.text.debate.debate_verdict`) and the bench's Analysis grading."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import finenvs  # noqa: F401
from finenvs.text.debate import DEBATE_RULES, OUTCOMES, REFERENCE_OUTCOMES, debate_verdict, unfinished_verdict
from finenvs.wrappers.debate import Debate

sys.path.insert(0, str(Path(__file__).parent))
import one_score_paths as paths  # noqa: E402
from one_score_agent import FixedAgent, commit_for  # noqa: E402

HAVE_MCP = all(importlib.util.find_spec(m) is not None for m in ("mcp", "uvicorn"))
HAVE_A2A = importlib.util.find_spec("a2a") is not None and importlib.util.find_spec("uvicorn") is not None
#: (agent, debated) -> the one score every path must give FinQA-v0's eval question #80 (analysis/bond_replication/2).
EXPECTED = {
    ("bare", False): 40.0,  # FAB++'s split: the answer's 40, no methodology, no calculation
    ("structured", False): 100.0,  # method 30 + intermediates 30 + answer 40
    ("yield", True): 80.0,  # a right answer (100) given up: 0.8 x 100, finenvs' rule
}


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("one-score")


# ------------------------------------------------------------------------------------------- the one debate rule
def test_the_debate_rule_scales_the_first_answers_score_and_caps_it():
    assert debate_verdict(1.0, True, True, 1.0).debated_score == 1.0  # 1.2 x 1.0, capped at the max
    abandoned = debate_verdict(1.0, True, False, 1.0)
    assert (abandoned.multiplier, abandoned.outcome, abandoned.debated_score) == (0.8, "correct answer abandoned", 0.8)
    assert debate_verdict(0.0, False, True, 1.0).debated_score == 0.0  # a correction is not a second attempt
    assert debate_verdict(60.0, False, False, 100.0).debated_score == pytest.approx(48.0)
    assert debate_verdict(95.0, True, True, 100.0).debated_score == 100.0
    assert unfinished_verdict("aborted").record() == {"multiplier": 0.8, "outcome": "wrong answer kept (aborted)",
                                                      "debated_score": 0.0, "debate_rule": "finenvs"}
    with pytest.raises(ValueError, match="unknown debate rule"):
        debate_verdict(1.0, True, True, 1.0, rule="vibes")


def test_the_reference_rule_has_the_reference_implementations_values():
    assert set(DEBATE_RULES) == {"finenvs", "reference"} and DEBATE_RULES["finenvs"] is OUTCOMES
    assert {m for m, _ in REFERENCE_OUTCOMES.values()} == {0.5, 1.0, 1.2}
    assert debate_verdict(1.0, True, False, 1.0, rule="reference").debated_score == 0.5  # conceded: 0.5
    assert debate_verdict(1.0, True, True, 1.0, rule="reference").multiplier == 1.2
    assert debate_verdict(0.0, False, False, 1.0, rule="reference").multiplier == 1.0  # repeated itself


def test_the_wrapper_decides_with_the_rule_it_is_given():
    env = Debate(gym.make("FinQA-v0", split="eval"), rule="reference")
    obs, _ = env.reset(options={"index": paths.QA_INDEX})
    prompt = "\n".join(f"{k}: {v}" for k, v in env.unwrapped.text_state().items())
    env.step(json.dumps(commit_for("yield", prompt, False)))
    _, reward, _, _, info = env.step(json.dumps(commit_for("yield", prompt, True)))
    assert reward == 0.0 and info["debate"]["first_score"] == 1.0
    assert (info["debate"]["multiplier"], info["debate"]["debated_score"], info["debate"]["debate_rule"]) == (
        0.5, 0.5, "reference")
    with pytest.raises(ValueError, match="unknown debate rule"):
        Debate(gym.make("FinQA-v0", split="eval"), rule="judge")


def test_a_right_answer_without_its_method_is_still_right_for_the_debate():
    """Under FAB++'s split a bare right number scores 0.4, but the debate's correctness is the answer's: holding it
    is a correct answer held."""
    env = Debate(gym.make("FinQA-v0", split="eval"))
    env.reset(options={"index": paths.QA_INDEX})
    prompt = "\n".join(f"{k}: {v}" for k, v in env.unwrapped.text_state().items())
    bare = json.dumps(commit_for("bare", prompt, False))
    _, _, _, _, info = env.step(bare)
    assert info["debate"]["first_score"] == pytest.approx(0.4) and info["debate"]["first_correct"]
    _, reward, _, _, info = env.step(bare)
    assert info["debate"]["outcome"] == "correct answer held" and info["debate"]["debated_score"] == pytest.approx(0.48)


# ------------------------------------------------------------------------------------------- every path
@pytest.mark.parametrize(("kind", "debated"), list(EXPECTED), ids=["bare", "structured", "debate-yield"])
def test_a_finqa_task_scores_the_same_on_every_offline_path(out, kind, debated):
    want = EXPECTED[(kind, debated)]
    task = ("FinQA-v0", paths.QA_INDEX, kind, debated)
    name = f"{kind}-{debated}"
    got = {"env": paths.path_env(*task)}
    got["llm"], got["score"] = paths.path_llm(*task, out, f"llm-{name}")
    got["mcp"] = paths.path_mcp(*task, out, f"mcp-{name}")
    assert got == pytest.approx(dict.fromkeys(got, want)), got


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "debated"), list(EXPECTED), ids=["bare", "structured", "debate-yield"])
def test_a_finqa_task_scores_the_same_through_harness_a2a_and_explicit_env_kwargs(out, kind, debated):
    """The agent-program and A2A paths (a process per decision, a server per run), and ``llm --env-kwargs
    '{"analysis_score": "fabpp"}'`` (the default asked for by name)."""
    want = EXPECTED[(kind, debated)]
    task = ("FinQA-v0", paths.QA_INDEX, kind, debated)
    name = f"{kind}-{debated}"
    got = {"llm --env-kwargs fabpp": paths.path_llm(*task, out, f"llmkw-{name}", {"analysis_score": "fabpp"})[0]}
    if HAVE_MCP:
        got["harness"] = paths.path_harness(*task, out, f"harness-{name}")
    if HAVE_A2A:
        got["a2a"] = paths.path_a2a(*task, out, f"a2a-{name}")
    assert got == pytest.approx(dict.fromkeys(got, want)), got


def test_the_bench_gives_a_debated_task_the_score_llm_gives_it(out):
    """The disagreement this rule ends: a model that gives up a right answer scored 80 in the bench, 0 in llm."""
    task = ("FinQA-v0", paths.QA_INDEX, "yield", True)
    assert paths.path_bench(*task, out, "bench-yield") == pytest.approx(EXPECTED[("yield", True)])  # llm: above


def test_the_bench_grades_analysis_as_fabpp_by_default_and_answer_only_on_request(out):
    from chat_server import ChatServer

    from finenvs.evaluation.bench import BenchConfig, run_bench

    cards = {}
    with ChatServer(FixedAgent("bare")) as server:
        for grading in ("fabpp", "answer"):
            cards[grading] = run_bench(BenchConfig(
                envs=["FinQA-v0"], base_url=server.base_url, model="m", out=out, run_name=f"grading-{grading}",
                plots=False, html=False, progress=False, agents=False, instances={"qa": (paths.QA_INDEX,), "qa/fab_public": ()},
                analysis_grading=grading))
    for grading, want in (("fabpp", 40.0), ("answer", 100.0)):
        card = cards[grading]
        assert card.aggregate["profiles"]["m"]["overall"] == pytest.approx(want)
        assert json.loads((card.run_dir / "bench.json").read_text())["config"]["analysis_grading"] == grading
        scorecard = (card.run_dir / "scorecard.md").read_text()
        assert f"--analysis-grading {grading}" in scorecard
        assert card.sections["qa"]["grading"] == grading
    # the baselines' section follows the grading too: the scripted agent states its method, first_number does not
    ref = cards["fabpp"].sections["qa"]["policies"]
    assert ref["scripted_agent"]["sections"]["analysis"]["score"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="unknown analysis grading"):
        run_bench(BenchConfig(envs=["FinQA-v0"], out=out, run_name="bad", plots=False, html=False, progress=False,
                              agents=False, analysis_grading="vibes"))


@pytest.mark.slow
@pytest.mark.parametrize("debated", [False, True], ids=["plain", "debate"])
def test_an_options_task_scores_the_same_on_every_offline_path(out, debated):
    task = ("FinOptions-v0", 0, "scripted", debated)
    name = f"options-{debated}"
    got = {"env": paths.path_env(*task)}
    got["llm"], got["score"] = paths.path_llm(*task, out, f"llm-{name}")
    got["mcp"] = paths.path_mcp(*task, out, f"mcp-{name}")
    got["bench"] = paths.path_bench(*task, out, f"bench-{name}")
    if HAVE_MCP:
        got["harness"] = paths.path_harness(*task, out, f"harness-{name}")
    if HAVE_A2A:
        got["a2a"] = paths.path_a2a(*task, out, f"a2a-{name}")
    assert got == pytest.approx(dict.fromkeys(got, 100.0)), got


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "debated"), [("bare", False), ("structured", False)], ids=["bare", "structured"])
def test_the_bench_gives_a_finqa_task_the_score_every_other_path_gives_it(out, kind, debated):
    assert paths.path_bench("FinQA-v0", paths.QA_INDEX, kind, debated, out, f"bench-{kind}") == pytest.approx(
        EXPECTED[(kind, debated)])


# ------------------------------------------------------------------------------------------- the commit tool
@pytest.mark.parametrize("extra", [{"method": "x" * 200_000}, {"intermediates": {"a" * 500: "1e999"}},
                                   {"intermediates": list(range(10_000))}, {"method": 5, "intermediates": "D1 = 3"}])
def test_a_hostile_method_or_intermediates_in_the_commit_never_raises(extra):
    env = gym.make("FinQA-text-v0", split="eval")
    env.reset(options={"index": paths.QA_INDEX})
    _, reward, terminated, _, info = env.step({"name": "commit_action", "arguments": {"answer": 1, **extra}})
    assert terminated and 0.0 <= reward <= 0.3 and isinstance(info["qa"]["method_split"]["reasons"], list)


def test_llm_plays_the_reference_rule_when_asked_and_score_replays_it(out):
    """``llm --env-kwargs '{"debate": true, "debate_rule": "reference"}'``: the reference's values (a right answer
    given up: 0.5 x 100), recorded and replayed by ``finenvs score``; a bad rule is refused before any episode."""
    from finenvs.evaluation.llm import RunConfig

    task = ("FinQA-v0", paths.QA_INDEX, "yield", True)
    recorded, rescored = paths.path_llm(*task, out, "llm-reference-rule", {"debate_rule": "reference"})
    assert recorded == rescored == pytest.approx(50.0)
    with pytest.raises(ValueError, match="debate_rule"):
        RunConfig(env_id="FinQA-v0", env_kwargs={"debate": True, "debate_rule": "judge"})
    with pytest.raises(ValueError, match="debate_rule"):
        RunConfig(env_id="FinQA-v0", env_kwargs={"debate_rule": "reference"})
