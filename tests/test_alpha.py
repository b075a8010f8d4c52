"""FAB++'s Alpha score (finenvs.scoring.alpha): the formula, its undefined points, and the bench's records."""

from __future__ import annotations

import math

import pytest

from finenvs.scoring.alpha import alpha_score


def test_alpha_is_r_times_d_over_c_times_p():
    a = alpha_score(80.0, cost_usd=1.5, lookahead_attempts=3, decisions=12, debate_multiplier=1.1)
    c, p = math.log(2.5), 1.0 + 3 / 12
    assert a.alpha == pytest.approx(80.0 * 1.1 / (c * p), rel=1e-12)
    assert (a.role_score, a.debate_multiplier, a.cost_term, a.lookahead_penalty, a.lookahead_term) == (
        80.0, 1.1, pytest.approx(c), 0.25, 1.25)
    assert a.note == "" and a.record()["alpha"] == a.alpha


def test_zero_cost_is_undefined_not_infinite():
    """The paper's formula divides by ln(1 + 0) = 0 for an offline agent: alpha is None with the reason."""
    a = alpha_score(97.6, cost_usd=0.0, decisions=10)
    assert a.alpha is None and a.cost_term == 0.0 and "zero cost" in a.note


def test_a_cost_floor_makes_it_finite_and_is_recorded():
    a = alpha_score(50.0, cost_usd=0.0, cost_floor=0.01)
    assert a.alpha == pytest.approx(50.0 / math.log1p(0.01)) and a.cost_usd == 0.01 and "floored" in a.note
    above = alpha_score(50.0, cost_usd=2.0, cost_floor=0.01)  # a cost above the floor is used as is
    assert above.alpha == pytest.approx(50.0 / math.log1p(2.0)) and above.note == ""


def test_unknown_cost_or_score_is_undefined():
    assert "unknown" in alpha_score(50.0, cost_usd=None).note
    assert alpha_score(None, cost_usd=1.0).alpha is None


def test_look_ahead_lowers_alpha_and_clipping_holds():
    clean = alpha_score(60.0, cost_usd=1.0, lookahead_attempts=0, decisions=5).alpha
    peeking = alpha_score(60.0, cost_usd=1.0, lookahead_attempts=5, decisions=5).alpha
    assert peeking == pytest.approx(clean / 2)
    assert alpha_score(150.0, cost_usd=1.0, debate_multiplier=3.0).record()["R"] == 100.0
    assert alpha_score(50.0, cost_usd=1.0, debate_multiplier=0.1).debate_multiplier == 0.8


@pytest.mark.parametrize("kwargs", [{"cost_usd": -1.0}, {"cost_usd": float("nan")}, {"cost_usd": 1.0, "decisions": -1},
                                    {"cost_usd": 1.0, "cost_floor": 0.0}, {"cost_usd": True}])
def test_bad_inputs_are_clear_errors(kwargs):
    with pytest.raises(ValueError):
        alpha_score(50.0, **kwargs)


def test_the_bench_records_alpha_for_baselines_and_agents():
    from finenvs.evaluation.bench import alpha_cell, section_aggregate
    from finenvs.tasks import task_of

    qa = task_of("FinQA-v0")
    sections = {"qa": {"tasks": {p: [{"section": "knowledge", "task_id": "k1", "score": 80.0, "error": None},
                                     {"section": "analysis", "task_id": "a1", "score": 60.0, "error": None}]
                                 for p in set(qa.bench.profiles.values())}}}
    run = {"agent": "model-x", "family": "qa", "env": "FinQA-v0",
           "episodes": [{"label": "k1", "status": "complete", "episode": {"section": "knowledge", "task_score": 90.0}},
                        {"label": "a1", "status": "complete", "episode": {"section": "analysis", "task_score": 70.0}}],
           "efficiency": {"cost_usd": 0.25, "look_ahead_attempts": 1, "decisions": 2}}
    out = section_aggregate([qa], sections, [run], "fabpp", [])
    reference = out["profiles"]["reference"]["alpha"]
    assert reference["alpha"] is None and "zero cost" in reference["note"]
    agent = out["profiles"]["model-x"]
    r = agent["overall"]
    assert agent["alpha"]["alpha"] == pytest.approx(r / (math.log1p(0.25) * 1.5))
    assert alpha_cell(agent["alpha"]).startswith(f"{agent['alpha']['alpha']:.2f} (R {r:.2f}")
    floored = section_aggregate([qa], sections, [run], "fabpp", [], cost_floor=0.01)["profiles"]["reference"]
    assert floored["alpha"]["alpha"] == pytest.approx(floored["overall"] / math.log1p(0.01))
