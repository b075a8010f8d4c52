"""finenvs.scoring.aggregate: section means, weight redistribution, errored tasks, multipliers, presets."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from finenvs.scoring.aggregate import (
    DEFAULT_PRESET,
    MULTIPLIER_RANGE,
    SECTION_NAMES,
    WEIGHT_PRESETS,
    TaskScore,
    aggregate,
    aggregate_sections,
    normalise,
    resolve_weights,
)

SECTIONS = ("knowledge", "analysis", "options")


def by_name(result):
    return {s.name: s for s in result.sections}


def tasks_with_mean(section, scores):
    return [TaskScore(section, f"{section}-{i}", s) for i, s in enumerate(scores)]


# --------------------------------------------------------------------------- the FAB++ worked example
class TestWorkedExample:
    def test_default_weights(self):
        assert DEFAULT_PRESET == "fabpp"
        assert WEIGHT_PRESETS["fabpp"] == {"knowledge": 0.30, "analysis": 0.35, "options": 0.35}

    def test_section_scores_give_60_44(self):
        result = aggregate_sections({"knowledge": 83.33, "analysis": 50.00, "options": 51.25})
        assert result.overall == pytest.approx(0.30 * 83.33 + 0.35 * 50.00 + 0.35 * 51.25)
        assert round(result.overall, 2) == 60.44

    def test_from_tasks_whose_means_are_the_section_scores(self):
        tasks = (
            # (100 + 100 + 50) / 3 = 83.33...
            tasks_with_mean("knowledge", [100.0, 100.0, 50.0])
            + tasks_with_mean("analysis", [100.0, 0.0, 75.0, 25.0])  # 50.00
            + tasks_with_mean("options", [80.0, 22.5, 51.25, 51.25])  # 51.25
        )
        result = aggregate(tasks)
        sections = by_name(result)
        assert sections["knowledge"].score == pytest.approx(250 / 3)
        assert sections["analysis"].score == pytest.approx(50.0)
        assert sections["options"].score == pytest.approx(51.25)
        assert [sections[n].tasks for n in SECTIONS] == [3, 4, 4]
        assert round(result.overall, 2) == 60.44
        assert result.overall == pytest.approx(0.30 * 250 / 3 + 0.35 * 50.0 + 0.35 * 51.25)

    def test_explicit_preset_and_none_are_the_default(self):
        scores = {"knowledge": 83.33, "analysis": 50.00, "options": 51.25}
        default = aggregate_sections(scores).overall
        assert aggregate_sections(scores, "fabpp").overall == pytest.approx(default)
        assert aggregate_sections(scores, None).overall == pytest.approx(default)

    def test_record(self):
        record = aggregate_sections({"knowledge": 83.33, "analysis": 50.00, "options": 51.25}).record()
        assert round(record["overall"], 2) == 60.44
        assert set(record["sections"]) == set(SECTIONS)
        assert record["sections"]["knowledge"]["title"] == SECTION_NAMES["knowledge"] == "Knowledge Retrieval"
        assert record["sections"]["options"]["effective_weight"] == pytest.approx(0.35)


# --------------------------------------------------------------------------- redistribution
class TestRedistribution:
    def test_inactive_section_weight_is_redistributed(self):
        result = aggregate_sections({"knowledge": 83.33, "analysis": 50.00})
        s = by_name(result)
        assert s["knowledge"].effective_weight == pytest.approx(0.30 / 0.65)
        assert s["analysis"].effective_weight == pytest.approx(0.35 / 0.65)
        assert s["knowledge"].effective_weight + s["analysis"].effective_weight == pytest.approx(1.0)
        assert s["options"].score is None
        assert s["options"].effective_weight == 0.0
        assert s["options"].tasks == 0 and s["options"].errored == 0
        assert s["options"].weight == pytest.approx(0.35)  # the nominal weight is kept in the record
        assert result.overall == pytest.approx((0.30 * 83.33 + 0.35 * 50.00) / 0.65)

    def test_none_score_in_aggregate_sections_is_inactive(self):
        with_none = aggregate_sections({"knowledge": 83.33, "analysis": 50.00, "options": None})
        without = aggregate_sections({"knowledge": 83.33, "analysis": 50.00})
        assert with_none.overall == pytest.approx(without.overall)
        assert by_name(with_none)["options"].score is None

    def test_single_active_section_is_the_overall(self):
        result = aggregate_sections({"options": 42.0})
        assert result.overall == pytest.approx(42.0)
        assert by_name(result)["options"].effective_weight == pytest.approx(1.0)

    @pytest.mark.parametrize("active", [("knowledge",), ("analysis", "options"), SECTIONS])
    def test_effective_weights_sum_to_one(self, active):
        result = aggregate_sections({n: 10.0 * (i + 1) for i, n in enumerate(active)}, "reasoning")
        total = sum(s.effective_weight for s in result.sections)
        assert total == pytest.approx(1.0)
        for s in result.sections:
            assert (s.effective_weight > 0) == (s.name in active)

    def test_no_task_at_all(self):
        result = aggregate([])
        assert result.overall is None
        assert all(s.score is None and s.effective_weight == 0.0 and s.tasks == 0 for s in result.sections)
        assert aggregate_sections({"knowledge": None}).overall is None

    def test_zero_weight_section_contributes_nothing(self):
        result = aggregate_sections({"knowledge": 0.0, "analysis": 80.0},
                                    {"knowledge": 0.0, "analysis": 1.0, "options": 1.0})
        assert result.overall == pytest.approx(80.0)
        assert by_name(result)["knowledge"].score == 0.0
        assert by_name(result)["knowledge"].effective_weight == 0.0


# --------------------------------------------------------------------------- errored tasks
class TestErroredTasks:
    def test_errored_task_counts_zero_and_is_not_dropped(self):
        tasks = [TaskScore("knowledge", "q1", 100.0), TaskScore("knowledge", "q2", None, error="timeout")]
        result = aggregate(tasks)
        k = by_name(result)["knowledge"]
        assert k.score == pytest.approx(50.0)
        assert k.tasks == 2 and k.errored == 1
        assert result.overall == pytest.approx(50.0)

    def test_errored_task_with_a_score_still_counts_zero(self):
        tasks = [TaskScore("analysis", "a1", 100.0), TaskScore("analysis", "a2", 90.0, error="crashed late")]
        assert by_name(aggregate(tasks))["analysis"].score == pytest.approx(50.0)

    def test_errored_task_score_is_not_validated(self):
        # an errored task may carry garbage; it counts 0 instead of raising
        tasks = [TaskScore("options", "o1", float("nan"), error="parse"), TaskScore("options", "o2", 60.0)]
        assert by_name(aggregate(tasks))["options"].score == pytest.approx(30.0)

    def test_points(self):
        assert TaskScore("knowledge", "t", 70.0).points == 70.0
        assert TaskScore("knowledge", "t", 70.0, error="x").points == 0.0
        assert TaskScore("knowledge", "t", None, error="x").points == 0.0

    def test_all_errored_section_is_active_with_zero(self):
        tasks = [TaskScore("knowledge", "k", None, error="x"), TaskScore("analysis", "a", 100.0)]
        result = aggregate(tasks)
        k = by_name(result)["knowledge"]
        assert k.score == 0.0 and k.effective_weight == pytest.approx(0.30 / 0.65)
        assert result.overall == pytest.approx(100.0 * 0.35 / 0.65)


# --------------------------------------------------------------------------- multipliers
class TestMultipliers:
    def test_range(self):
        assert MULTIPLIER_RANGE == (0.8, 1.2)

    @pytest.mark.parametrize("given_m, used", [(1.5, 1.2), (0.1, 0.8), (-3.0, 0.8), (1.1, 1.1), (1.2, 1.2),
                                               (0.8, 0.8), (1, 1.0)])
    def test_clipped(self, given_m, used):
        result = aggregate_sections({"knowledge": 50.0}, multipliers={"knowledge": given_m})
        k = by_name(result)["knowledge"]
        assert k.multiplier == pytest.approx(used)
        assert k.score == pytest.approx(50.0 * used)
        assert result.overall == pytest.approx(50.0 * used)

    def test_section_score_is_clipped_to_100(self):
        result = aggregate_sections({"knowledge": 90.0, "analysis": 90.0},
                                    multipliers={"knowledge": 1.5, "analysis": 0.1})
        s = by_name(result)
        assert s["knowledge"].score == 100.0  # 90 x 1.2 = 108 -> 100
        assert s["analysis"].score == pytest.approx(72.0)  # 90 x 0.8
        assert result.overall == pytest.approx((0.30 * 100.0 + 0.35 * 72.0) / 0.65)

    def test_multiplier_of_inactive_section_is_recorded_and_harmless(self):
        result = aggregate_sections({"knowledge": 50.0}, multipliers={"options": 1.2})
        assert result.overall == pytest.approx(50.0)
        assert by_name(result)["options"].multiplier == pytest.approx(1.2)
        assert by_name(result)["options"].score is None

    def test_unknown_section(self):
        with pytest.raises(ValueError, match="multiplier for unknown section 'trading'"):
            aggregate_sections({"knowledge": 50.0}, multipliers={"trading": 1.0})

    @pytest.mark.parametrize("m", [float("nan"), float("inf"), True, "1.1"])
    def test_bad_multiplier(self, m):
        with pytest.raises(ValueError, match="must be a finite number"):
            aggregate_sections({"knowledge": 50.0}, multipliers={"knowledge": m})


# --------------------------------------------------------------------------- presets and custom weights
class TestWeights:
    SCORES = {"knowledge": 90.0, "analysis": 60.0, "options": 30.0}

    @pytest.mark.parametrize("preset, expected", [
        ("fabpp", 0.30 * 90 + 0.35 * 60 + 0.35 * 30),
        ("equal", (90 + 60 + 30) / 3),
        ("reasoning", 0.20 * 90 + 0.50 * 60 + 0.30 * 30),
    ])
    def test_presets(self, preset, expected):
        assert aggregate_sections(self.SCORES, preset).overall == pytest.approx(expected)

    def test_presets_sum_to_one(self):
        for name, w in WEIGHT_PRESETS.items():
            assert set(w) == set(SECTIONS), name
            assert sum(w.values()) == pytest.approx(1.0), name

    def test_resolve_weights_returns_a_copy(self):
        w = resolve_weights("fabpp")
        w["knowledge"] = 99.0
        assert WEIGHT_PRESETS["fabpp"]["knowledge"] == 0.30

    def test_custom_weights_need_not_sum_to_one(self):
        result = aggregate_sections(self.SCORES, {"knowledge": 2, "analysis": 1, "options": 1})
        assert result.overall == pytest.approx((2 * 90 + 60 + 30) / 4)
        assert by_name(result)["knowledge"].weight == 2.0
        assert by_name(result)["knowledge"].effective_weight == pytest.approx(0.5)

    def test_custom_sections(self):
        tasks = [TaskScore("risk", "r1", 40.0), TaskScore("risk", "r2", 60.0), TaskScore("tax", "t1", 100.0)]
        result = aggregate(tasks, {"risk": 3.0, "tax": 1.0})
        assert result.overall == pytest.approx(0.75 * 50.0 + 0.25 * 100.0)
        assert result.record()["sections"]["risk"]["title"] == "risk"

    @pytest.mark.parametrize("weights, match", [
        ({"knowledge": -0.1, "analysis": 1.0}, "finite non-negative"),
        ({"knowledge": float("nan"), "analysis": 1.0}, "finite non-negative"),
        ({"knowledge": float("inf")}, "finite non-negative"),
        ({"knowledge": "0.3"}, "finite non-negative"),
        ({"knowledge": True}, "finite non-negative"),
        ({"knowledge": 0.0, "analysis": 0}, "must not all be zero"),
        ({}, "must not all be zero"),
        ("fab++", "unknown weight preset 'fab\\+\\+'"),
    ])
    def test_bad_weights(self, weights, match):
        with pytest.raises(ValueError, match=match):
            resolve_weights(weights)
        with pytest.raises(ValueError, match=match):
            aggregate([TaskScore("knowledge", "k", 50.0)], weights)

    def test_unknown_preset_lists_the_presets(self):
        with pytest.raises(ValueError, match="equal.*fabpp.*reasoning"):
            resolve_weights("nope")


# --------------------------------------------------------------------------- bad tasks
class TestBadTasks:
    def test_task_in_a_section_without_weight(self):
        with pytest.raises(ValueError, match="task 'x1' is in section 'trading', which has no weight"):
            aggregate([TaskScore("trading", "x1", 50.0)])

    def test_section_missing_from_custom_weights(self):
        with pytest.raises(ValueError, match="'options', which has no weight"):
            aggregate([TaskScore("options", "o1", 50.0)], {"knowledge": 1.0})

    @pytest.mark.parametrize("score", [120.0, -0.5, float("nan"), float("inf"), None, True])
    def test_score_not_on_0_100_and_not_errored(self, score):
        with pytest.raises(ValueError, match="is not on 0-100"):
            aggregate([TaskScore("knowledge", "k1", score)])

    @pytest.mark.parametrize("score", [0, 0.0, 100, 100.0])
    def test_score_bounds_are_inclusive(self, score):
        assert aggregate([TaskScore("knowledge", "k1", score)]).overall == pytest.approx(float(score))


# --------------------------------------------------------------------------- the overall's range
class TestOverallRange:
    def test_perfect_sections_give_100_with_presets(self):
        for preset in ("fabpp", "reasoning"):
            assert aggregate_sections(dict.fromkeys(SECTIONS, 100.0), preset).overall == 100.0
        assert aggregate_sections(dict.fromkeys(SECTIONS, 100.0), "equal").overall == pytest.approx(100.0)

    def test_overall_never_exceeds_100(self):
        result = aggregate_sections(dict.fromkeys(SECTIONS, 100.0),
                                    {"knowledge": 0.1, "analysis": 0.1, "options": 0.7})
        assert result.overall <= 100.0


# --------------------------------------------------------------------------- normalise
class TestNormalise:
    @pytest.mark.parametrize("value, lo, hi, expected", [
        (0.5, 0.0, 1.0, 50.0),
        (0.0, 0.0, 1.0, 0.0),
        (1.0, 0.0, 1.0, 100.0),
        (0.25, 0.0, 1.0, 25.0),
        (3.0, 1.0, 5.0, 50.0),
        (-0.5, -1.0, 1.0, 25.0),
        (1.5, 0.0, 1.0, 100.0),  # clipped
        (-0.2, 0.0, 1.0, 0.0),  # clipped
        (1e9, 0.0, 10.0, 100.0),
    ])
    def test_linear_and_clipped(self, value, lo, hi, expected):
        assert normalise(value, lo, hi) == pytest.approx(expected)

    @pytest.mark.parametrize("value, lo, hi", [(float("nan"), 0.0, 1.0), (0.5, float("-inf"), 1.0),
                                               (0.5, 0.0, float("nan")), (0.5, 1.0, 1.0), (0.5, 2.0, 1.0)])
    def test_bad(self, value, lo, hi):
        with pytest.raises(ValueError, match="cannot normalise"):
            normalise(value, lo, hi)

    def test_feeds_aggregate(self):
        tasks = [TaskScore("knowledge", "q1", normalise(0.9)), TaskScore("knowledge", "q2", normalise(0.6))]
        assert aggregate(tasks).overall == pytest.approx(75.0)

    @given(st.floats(min_value=-1e6, max_value=1e6), st.floats(min_value=-1e6, max_value=1e6),
           st.floats(min_value=1e-3, max_value=1e6))
    def test_property_range_and_monotone(self, value, lo, width):
        hi = lo + width
        assume(hi > lo)
        out = normalise(value, lo, hi)
        assert 0.0 <= out <= 100.0
        assert normalise(value + width / 10, lo, hi) >= out


# --------------------------------------------------------------------------- property
SCORE = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
WEIGHT = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False)


@given(st.dictionaries(st.sampled_from(SECTIONS), st.lists(SCORE, min_size=1, max_size=6), min_size=1),
       st.one_of(st.sampled_from(sorted(WEIGHT_PRESETS)),
                 st.fixed_dictionaries({n: WEIGHT for n in SECTIONS})))
def test_property_overall_between_min_and_max_section_score(scores_by_section, weights):
    tasks = [t for name, scores in scores_by_section.items() for t in tasks_with_mean(name, scores)]
    result = aggregate(tasks, weights)
    active = [s for s in result.sections if s.score is not None]
    assert {s.name for s in active} == set(scores_by_section)
    lo, hi = min(s.score for s in active), max(s.score for s in active)
    slack = 1e-9 * max(1.0, hi)  # a weighted mean in floating point may round past the extremes by an ulp
    assert lo - slack <= result.overall <= hi + slack
    assert 0.0 - slack <= result.overall <= 100.0 + slack
    assert sum(s.effective_weight for s in result.sections) == pytest.approx(1.0)
    for s in active:
        assert s.score == pytest.approx(math.fsum(scores_by_section[s.name]) / len(scores_by_section[s.name]))
