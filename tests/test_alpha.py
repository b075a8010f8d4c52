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


def _bench_with_model(tmp_path, name, *flags, faults=()):
    """``finenvs bench --envs FinQA-v0`` with the test chat server as the model (2 questions of each split)."""
    pytest.importorskip("openai")
    import json

    from chat_server import ChatServer

    from finenvs.cli import main

    with ChatServer() as server:
        server.faults.extend(faults)
        code = main(["bench", "--envs", "FinQA-v0", "--base-url", server.base_url, "--model", "router",
                     "--agent-limit", "2", "--no-agents", "--out", str(tmp_path), "--name", name, "--quiet",
                     "--no-plots", "--no-html", *flags])
    assert code == 0
    return json.loads((tmp_path / name / "scorecard.json").read_text()), (tmp_path / name / "scorecard.md").read_text()


def test_bench_prices_give_a_model_its_dollar_cost_and_alpha(tmp_path):
    """``--price-in/--price-out`` (dollars per million prompt/completion tokens): the model's cost is its FAB++ runs'
    tokens at those prices, and its Alpha score is defined; the baselines stay at the zero-cost rule (n/a)."""
    from finenvs.evaluation.bench import alpha_cell

    card, md = _bench_with_model(tmp_path, "priced", "--price-in", "3", "--price-out", "15")
    runs = [r for r in card["agents"] if r["agent"] == "router"]
    assert {r["split"] for r in runs} == {"eval", "fab_public"}  # the public questions are played too
    prompt = sum(r["efficiency"]["prompt_tokens"] for r in runs)
    completion = sum(r["efficiency"]["completion_tokens"] for r in runs)
    cost = prompt * 3 / 1e6 + completion * 15 / 1e6
    assert prompt > 0 and completion > 0
    router = card["aggregate"]["profiles"]["router"]
    assert router["cost"] == {"cost_usd": pytest.approx(cost), "input_per_million": 3.0, "output_per_million": 15.0,
                              "prompt_tokens": prompt, "completion_tokens": completion}
    decisions = sum(r["efficiency"]["decisions"] for r in runs)
    attempts = sum(r["efficiency"]["look_ahead_attempts"] for r in runs)
    assert router["alpha"]["alpha"] == pytest.approx(
        router["overall"] / (math.log1p(cost) * (1 + attempts / decisions)))
    assert alpha_cell(router["alpha"]).startswith(f"{router['alpha']['alpha']:.2f} (R ")
    assert card["aggregate"]["profiles"]["reference"]["alpha"]["alpha"] is None  # a baseline costs 0: n/a
    assert "the zero-cost rule" in md and f"router: {prompt:,} prompt and {completion:,} completion tokens at $3 / $15" \
        f" per million = ${cost:.4f}." in md
    assert card["config"]["prices"] == {"price_in": 3.0, "price_out": 15.0, "file": None}
    table = tmp_path / "prices.json"
    table.write_text('{"router": {"input_per_million": 3, "output_per_million": 15}, "other": '
                     '{"input_per_million": 1, "output_per_million": 2}}')
    again, _ = _bench_with_model(tmp_path, "table", "--prices", str(table))
    assert again["aggregate"]["profiles"]["router"]["cost"]["input_per_million"] == 3.0
    assert again["aggregate"]["profiles"]["router"]["alpha"]["alpha"] is not None


def test_unknown_token_counts_keep_the_cost_unknown_never_zero(tmp_path):
    """One reply without token usage makes the model's cost unknown, priced or not: alpha n/a (never a cost of 0)."""
    from finenvs.evaluation.bench import alpha_cell

    card, md = _bench_with_model(tmp_path, "nousage", "--price-in", "3", "--price-out", "15", faults=["no_usage"])
    router = card["aggregate"]["profiles"]["router"]
    assert router["cost"]["cost_usd"] is None and router["alpha"]["cost_usd"] is None
    assert router["alpha"]["alpha"] is None and "unknown" in router["alpha"]["note"]
    assert alpha_cell(router["alpha"]).startswith("n/a: cost unknown")
    assert "tokens unknown at $3 / $15 per million = cost unknown." in md
    unpriced, _ = _bench_with_model(tmp_path, "unpriced")
    assert unpriced["aggregate"]["profiles"]["router"]["alpha"]["alpha"] is None
    assert "cost" not in unpriced["aggregate"]["profiles"]["router"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--price-in", "3"], "--price-in and --price-out go together"),
    (["--price-in", "-1", "--price-out", "2"], "--price-in: a price is a finite number"),
    (["--price-in", "1", "--price-out", "2", "--prices", "p.json"], "not both"),
    (["--prices", "p.json"], "no entry for model 'router'"),
])
def test_bad_prices_are_refused_before_any_work(flags, message, tmp_path, monkeypatch):
    from finenvs.evaluation.bench import BenchConfig
    from finenvs.evaluation.bench.agents import model_prices

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text('{"other": {"input_per_million": 1, "output_per_million": 2}}')
    kw = {"price_in": None, "price_out": None, "prices": None}
    it = iter(flags)
    for flag, value in zip(it, it, strict=True):
        kw[flag[2:].replace("-", "_")] = value if flag == "--prices" else float(value)
    with pytest.raises(ValueError, match=message):
        model_prices(BenchConfig(model="router", **kw), "router")


def test_prices_without_a_model_are_an_error_naming_the_flags(tmp_path, capsys):
    from finenvs.cli import main

    assert main(["bench", "--envs", "FinQA-v0", "--price-in", "1", "--price-out", "2", "--out", str(tmp_path),
                 "--quiet", "--no-plots", "--no-html"]) == 2
    err = capsys.readouterr().err
    assert "--price-in, --price-out: only a model's runs play them" in err
    assert not any(tmp_path.iterdir())  # refused before any work
