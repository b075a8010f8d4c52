"""finenvs.scoring.qa: final-answer extraction, value parsing, kinds, tolerances and multi-part scoring.

The rules under test are the ones the module docstring states: one final answer read
strictly (a dict, a JSON object with an ``"answer"`` key, or an ``Answer:`` line), never
the first number of free text, conflicts score 0 with a reason, and each part is scored
on its own and weight-averaged.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from finenvs.scoring.qa import (
    DEFAULT_REL_TOL,
    KINDS,
    AnswerError,
    Part,
    answer_format,
    final_answer,
    key_of,
    parse_date,
    parse_quantity,
    score_answer,
    score_part,
    split_parts,
)

ONE_BILLION_TWO = [Part("revenue", 1.2e9, label="revenue, $")]
BULL_SPREAD = [
    Part("max_profit", 5.0, label="maximum profit, $ per share", aliases=("profit",)),
    Part("max_loss", 5.0, label="maximum loss, $ per share", aliases=("loss",)),
    Part("breakeven", 105.0, label="breakeven price, $", aliases=("break_even", "be")),
]
CHOICES = ("A", "B", "C")


def only_part(outcome):
    assert len(outcome.parts) == 1
    return outcome.parts[0]


# --------------------------------------------------------------------------- finding the final answer
class TestFinalAnswer:
    def test_dict_with_answer_key(self):
        assert final_answer({"answer": "$1.2B", "why": "10-K"}) == ("$1.2B", "dict")

    def test_dict_without_answer_key_is_the_answer_itself(self):
        answer, via = final_answer({"max_profit": 5, "max_loss": 5})
        assert via == "dict"
        assert answer == {"max_profit": 5, "max_loss": 5}

    def test_json_object_inside_text(self):
        reply = 'The 10-K says revenue was large. {"answer": "1.2 billion"} That is my answer.'
        assert final_answer(reply) == ("1.2 billion", "json")

    def test_fenced_json_block(self):
        reply = 'Working...\n```json\n{"answer": 1200000000}\n```\n'
        assert final_answer(reply) == (1200000000, "json")

    def test_nested_answer_object(self):
        reply = '```json\n{"answer": {"max_profit": 5, "max_loss": {"value": 5}}, "notes": {"a": [1, 2]}}\n```'
        answer, via = final_answer(reply)
        assert via == "json"
        assert answer == {"max_profit": 5, "max_loss": {"value": 5}}

    def test_object_without_answer_key_before_the_answer_is_skipped(self):
        reply = 'Step {"step": {"note": 1}} done. Then {"answer": 7}'
        assert final_answer(reply) == (7, "json")

    def test_answer_line(self):
        assert final_answer("Revenue rose 12%.\nAnswer: $1.2B") == ("$1.2B", "line")

    def test_final_answer_line(self):
        assert final_answer("Some steps: 3 + 4.\nFinal answer: 1.2 billion") == ("1.2 billion", "line")

    @pytest.mark.parametrize("line", ["**Answer**: $1.2B", "**Answer: $1.2B**", "__Final answer__: $1.2B",
                                      "- Answer: $1.2B", "> Answer: $1.2B", "## ANSWER: $1.2B"])
    def test_markdown_around_answer(self, line):
        assert final_answer(f"Thinking about 2023 results.\n{line}") == ("$1.2B", "line")

    @pytest.mark.parametrize("line", ["**Answer:** $1.2B", "**Final Answer:** $1.2B"])
    def test_bold_answer_label_scores_a_number(self, line):
        outcome = score_answer(f"Thinking about 2023 results.\n{line}", ONE_BILLION_TWO)
        assert outcome.score == 1.0 and outcome.via == "line"

    @pytest.mark.parametrize("line, part", [
        ("**Answer:** B", Part("pick", "B", kind="choice", choices=("A", "B"))),
        ("**Answer:** yes", Part("ok", True, kind="bool")),
        ("**Final Answer:** 2026-01-05", Part("day", "2026-01-05", kind="date")),
        ("__Answer:__ B, A", Part("order", ("B", "A"), kind="sequence", choices=("A", "B"))),
    ])
    def test_bold_answer_label_with_non_numeric_parts(self, line, part):
        assert score_answer(f"Reasoning.\n{line}", [part]).score == 1.0

    def test_json_is_preferred_over_answer_line(self):
        answer, via = final_answer('{"answer": 5}\nAnswer: 5')
        assert (answer, via) == (5, "json")

    def test_empty_answer_line_is_no_answer(self):
        with pytest.raises(AnswerError, match="no final answer"):
            final_answer("Answer:   \nwe computed 5")

    def test_bytes_are_decoded(self):
        assert final_answer(b"Answer: 5") == ("5", "line")

    def test_non_utf8_bytes(self):
        with pytest.raises(AnswerError, match="not UTF-8"):
            final_answer(b"\xff\xfe\xfa")

    @pytest.mark.parametrize("reply", [None, 12, 1.5, ["Answer: 5"], object()])
    def test_non_text(self, reply):
        with pytest.raises(AnswerError, match="not text"):
            final_answer(reply)

    @pytest.mark.parametrize("reply", ["", "   \n\t "])
    def test_empty(self, reply):
        with pytest.raises(AnswerError, match="empty answer"):
            final_answer(reply)

    def test_identical_duplicate_json_answers_are_fine(self):
        assert final_answer('{"answer": 5} and again {"answer": 5}') == (5, "json")

    def test_identical_duplicate_answer_lines_are_fine(self):
        # case, trailing full stop and runs of spaces do not make two lines differ
        assert final_answer("Answer: 1.2B\nso\nANSWER:  1.2b.") == ("1.2b.", "line")

    def test_conflicting_json_answers(self):
        with pytest.raises(AnswerError, match="2 conflicting final answers"):
            final_answer('{"answer": 5} ... on reflection {"answer": 6}')

    def test_conflicting_answer_lines(self):
        with pytest.raises(AnswerError, match="conflicting 'Answer:' lines"):
            final_answer("Answer: 5\nWait.\nFinal answer: 6")

    def test_numerically_identical_json_answers_are_not_a_conflict(self):
        answer, via = final_answer('{"answer": 5} and again {"answer": 5.0}')
        assert via == "json" and answer == 5

    def test_json_answer_outside_an_unrelated_code_fence(self):
        reply = '```python\nprint(100 * 0.05)\n```\nSo the result is {"answer": 5}'
        assert final_answer(reply) == (5, "json")

    def test_conflict_between_fenced_and_unfenced_json_answers(self):
        reply = '```json\n{"answer": 5}\n```\nActually I was wrong: {"answer": 6}'
        with pytest.raises(AnswerError, match="conflicting"):
            final_answer(reply)


class TestNeverFirstNumber:
    def test_free_text_without_final_answer_scores_zero(self):
        outcome = score_answer("Revenue rose 12% to $1.2B, up from $1.07B in 2022.", ONE_BILLION_TWO)
        assert outcome.score == 0.0
        assert outcome.via == "none"
        assert not outcome.answered
        assert "no final answer" in outcome.reason
        part = only_part(outcome)
        assert part.read is None and not part.correct and part.reason == outcome.reason

    def test_the_answer_is_phrase_is_not_an_answer_line(self):
        outcome = score_answer("The answer is 1.2 billion", ONE_BILLION_TWO)
        assert outcome.score == 0.0 and "no final answer" in outcome.reason

    def test_numbers_before_the_answer_line_are_ignored(self):
        outcome = score_answer("Revenue rose 12% to 1.1 billion in 2022.\nAnswer: 1.2 billion", ONE_BILLION_TWO)
        assert outcome.score == 1.0 and outcome.via == "line"
        assert only_part(outcome).read == pytest.approx(1.2e9)


class TestScoreAnswerConflictsAndBadReplies:
    def test_conflicting_json_answers_score_zero(self):
        outcome = score_answer('{"answer": "1.2B"} or maybe {"answer": "1.3B"}', ONE_BILLION_TWO)
        assert outcome.score == 0.0 and "conflicting" in outcome.reason

    def test_conflicting_lines_score_zero_even_if_one_is_right(self):
        outcome = score_answer("Answer: 1.2 billion\nAnswer: 1.3 billion", ONE_BILLION_TWO)
        assert outcome.score == 0.0 and "conflicting" in outcome.reason

    def test_identical_duplicates_score(self):
        outcome = score_answer('{"answer": "1.2B"} repeat {"answer": "1.2B"}', ONE_BILLION_TWO)
        assert outcome.score == 1.0 and outcome.reason is None

    @pytest.mark.parametrize("reply, reason", [("", "empty answer"), (None, "not text"), (42, "not text"),
                                               (b"\xff", "not UTF-8")])
    def test_bad_replies_score_zero_with_reason(self, reply, reason):
        outcome = score_answer(reply, ONE_BILLION_TWO)
        assert outcome.score == 0.0 and reason in outcome.reason

    def test_bytes_reply_is_scored(self):
        assert score_answer(b"Answer: $1.2B", ONE_BILLION_TWO).score == 1.0

    def test_no_parts_is_a_programming_error(self):
        with pytest.raises(ValueError, match="at least one part"):
            score_answer("Answer: 5", [])

    def test_null_json_answer_is_missing(self):
        outcome = score_answer('{"answer": null}', ONE_BILLION_TWO)
        assert outcome.score == 0.0 and only_part(outcome).reason == "missing"

    def test_record_is_json_serialisable(self):
        outcome = score_answer({"answer": {"max_profit": 5, "max_loss": [1, 2], "breakeven": 105}}, BULL_SPREAD)
        record = json.loads(json.dumps(outcome.record()))
        assert record["score"] == pytest.approx(2 / 3)
        assert record["via"] == "dict"
        assert [p["name"] for p in record["parts"]] == ["max_profit", "max_loss", "breakeven"]
        assert record["parts"][1]["given"] == "[1, 2]" and record["parts"][1]["correct"] is False

    def test_huge_json_integer_is_out_of_range_not_a_crash(self):
        outcome = score_answer({"answer": 10**400}, ONE_BILLION_TWO)
        assert outcome.score == 0.0 and "out of range" in only_part(outcome).reason

    @pytest.mark.parametrize("reply", ['{"answer": 1e999}', '{"answer": NaN}', "Answer: 1e999"])
    def test_non_finite_numbers_score_zero(self, reply):
        outcome = score_answer(reply, ONE_BILLION_TWO)
        assert outcome.score == 0.0
        assert "finite" in only_part(outcome).reason or "range" in only_part(outcome).reason

    def test_never_raises_on_a_giant_exponent(self):
        outcome = score_answer("Answer: 1e" + "9" * 5000, ONE_BILLION_TWO)
        assert outcome.score == 0.0

    def test_never_raises_on_deeply_nested_json(self):
        reply = '{"a":' * 100_000 + "1" + "}" * 100_000
        outcome = score_answer(reply, ONE_BILLION_TWO)
        assert outcome.score == 0.0


# --------------------------------------------------------------------------- values
class TestParseQuantity:
    @pytest.mark.parametrize("text, value", [
        ("$1.2B", 1.2e9),
        ("1.2 billion", 1.2e9),
        ("1.2bn", 1.2e9),
        ("(3.2)", -3.2),
        ("($3.2)", -3.2),
        ("1,234", 1234.0),
        ("1,234,567.89", 1234567.89),
        ("1 234 567", 1234567.0),
        ("1.5x", 1.5),
        ("\u22125", -5.0),
        ("\u2013 5", -5.0),
        ("-$5", -5.0),
        ("$-5", -5.0),
        ("US$5", 5.0),
        ("5.5M", 5.5e6),
        ("5.5 M", 5.5e6),
        ("5.5 mm", 5.5e6),
        ("5.5mn", 5.5e6),
        ("3k", 3000.0),
        ("3K", 3000.0),
        ("2 thousand", 2000.0),
        ("2 trillion", 2e12),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("about 5.5 million dollars", 5.5e6),
        ("roughly $105 per share at expiry", 105.0),
        ("12 months", 12.0),  # the m of "months" is no scale
    ])
    def test_values(self, text, value):
        q = parse_quantity(text)
        assert q.value == pytest.approx(value, rel=1e-12)
        assert q.percent is False

    @pytest.mark.parametrize("text, value", [("12.5%", 0.125), ("12 percent", 0.12), ("(12.5%)", -0.125),
                                             ("-0.5 pct", -0.005)])
    def test_percentages_are_fractions(self, text, value):
        q = parse_quantity(text)
        assert q.percent is True
        assert q.value == pytest.approx(value, rel=1e-12)

    def test_json_numbers(self):
        assert parse_quantity(3).value == 3.0
        assert parse_quantity(-2.5).value == -2.5

    @pytest.mark.parametrize("text", ["5 or 6", "between 1.2B and 1.3B", "12.5% (0.125)"])
    def test_two_different_numbers_are_an_error(self, text):
        with pytest.raises(AnswerError, match="different numbers"):
            parse_quantity(text)

    def test_the_same_number_twice_is_fine(self):
        assert parse_quantity("5, i.e. 5").value == 5.0

    @pytest.mark.parametrize("value, match", [("no idea", "holds no number"), (None, "not a number"),
                                              (True, "not a number"), ([5], "not a number"),
                                              (float("nan"), "finite"), (float("inf"), "finite")])
    def test_unreadable(self, value, match):
        with pytest.raises(AnswerError, match=match):
            parse_quantity(value)

    @pytest.mark.parametrize("text, value", [("$1.2 Billion", 1.2e9), ("1.2 BILLION", 1.2e9), ("$5.5MM", 5.5e6),
                                             ("5.5 Million", 5.5e6), ("1.2Bn", 1.2e9), ("3 Thousand", 3e3)])
    def test_capitalised_scale_words(self, text, value):
        assert parse_quantity(text).value == pytest.approx(value)


# --------------------------------------------------------------------------- kinds
class TestNumberKind:
    @pytest.mark.parametrize("reply", ["Answer: $1.2B", "Answer: 1.2 billion", "Answer: 1,200,000,000",
                                       '{"answer": 1200000000}', "Answer: 1,200 million",
                                       "Answer: revenue was about $1.2 billion."])
    def test_right(self, reply):
        outcome = score_answer(reply, ONE_BILLION_TWO)
        assert outcome.score == 1.0 and only_part(outcome).read == pytest.approx(1.2e9)

    def test_a_second_number_in_the_value_is_a_conflict(self):
        part = only_part(score_answer("Answer: revenue was about $1.2 billion in FY2023.", ONE_BILLION_TWO))
        assert not part.correct and "different numbers" in part.reason

    def test_words_around_the_number_are_ignored(self):
        outcome = score_answer("Answer: EPS was $5.00 per share", [Part("eps", 5.0)])
        assert outcome.score == 1.0 and only_part(outcome).read == 5.0

    def test_negative_by_parentheses(self):
        assert score_answer("Answer: (3.2)", [Part("net_income", -3.2)]).score == 1.0
        assert score_answer("Answer: 3.2", [Part("net_income", -3.2)]).score == 0.0

    def test_unicode_minus(self):
        assert score_answer("Answer: \u22125", [Part("x", -5.0)]).score == 1.0

    def test_percent_on_a_number_part_is_wrong(self):
        part = only_part(score_answer("Answer: 20%", [Part("ratio", 20.0)]))
        assert not part.correct and part.read == pytest.approx(0.2)
        assert "percentage" in part.reason and "number" in part.reason

    def test_millions_slip(self):
        part = only_part(score_answer("Answer: 5.5", [Part("shares", 5_500_000.0)]))
        assert not part.correct
        assert "wrong unit" in part.reason and "10^6" in part.reason

    def test_billions_and_thousands_slips(self):
        part = only_part(score_answer("Answer: 1.2", ONE_BILLION_TWO))
        assert not part.correct and "wrong unit" in part.reason and "10^9" in part.reason
        part = only_part(score_answer("Answer: 5500", [Part("x", 5.5)]))
        assert not part.correct and "wrong unit" in part.reason and "10^-3" in part.reason

    def test_plain_miss_reason(self):
        part = only_part(score_answer("Answer: 110", [Part("x", 100.0)]))
        assert not part.correct
        assert "wrong unit" not in part.reason and "not within 1" in part.reason

    def test_wrong_answer_near_zero_truth_is_not_called_a_unit_slip(self):
        part = only_part(score_answer("Answer: 5", [Part("x", 0.0, abs_tol=0.01)]))
        assert not part.correct
        assert "wrong unit" not in part.reason


class TestPercentKind:
    GROWTH = [Part("growth", 0.2, kind="percent", label="revenue growth")]

    @pytest.mark.parametrize("reply", ["Answer: 20%", "Answer: 0.2", '{"answer": 0.2}', "Answer: 20 percent",
                                       '{"answer": "20.0%"}'])
    def test_right(self, reply):
        outcome = score_answer(reply, self.GROWTH)
        assert outcome.score == 1.0 and only_part(outcome).read == pytest.approx(0.2)

    @pytest.mark.parametrize("reply", ["Answer: 20", '{"answer": 20}'])
    def test_bare_whole_number_is_a_wrong_unit(self, reply):
        part = only_part(score_answer(reply, self.GROWTH))
        assert not part.correct
        assert part.read == 20.0
        assert "wrong unit" in part.reason and "20%" in part.reason

    def test_percent_of_a_percent_is_a_wrong_unit(self):
        part = only_part(score_answer("Answer: 0.2%", self.GROWTH))
        assert not part.correct and "wrong unit" in part.reason

    def test_negative_percentage(self):
        assert score_answer("Answer: (12.5%)", [Part("margin", -0.125, kind="percent")]).score == 1.0

    def test_tolerance_is_relative_to_the_fraction(self):
        assert score_answer("Answer: 20.2%", self.GROWTH).score == 1.0
        assert score_answer("Answer: 20.3%", self.GROWTH).score == 0.0


class TestChoiceBoolDateSequence:
    PICK = [Part("pick", "B", kind="choice", choices=CHOICES)]

    @pytest.mark.parametrize("reply", ["Answer: B", "Answer: b.", "Answer: Option B", "Answer: (B)",
                                       '{"answer": "option b"}', "Answer: B)"])
    def test_choice_right(self, reply):
        outcome = score_answer(reply, self.PICK)
        assert outcome.score == 1.0 and only_part(outcome).read == "B"

    def test_choice_wrong(self):
        part = only_part(score_answer("Answer: A", self.PICK))
        assert not part.correct and part.read == "A" and "not the answer" in part.reason

    def test_choice_not_offered(self):
        part = only_part(score_answer("Answer: D", self.PICK))
        assert not part.correct and part.read is None and "not one of" in part.reason

    def test_choice_non_string(self):
        part = only_part(score_answer({"answer": 2}, self.PICK))
        assert not part.correct and "not one of" in part.reason

    @pytest.mark.parametrize("reply, value", [("Answer: yes", True), ("Answer: Yes, because cash grew.", True),
                                              ("Answer: TRUE", True), ({"answer": True}, True),
                                              ("Answer: no", False), ("Answer: false.", False)])
    def test_bool(self, reply, value):
        part = only_part(score_answer(reply, [Part("solvent", True, kind="bool")]))
        assert part.read is value and part.correct is value
        if not value:
            assert part.reason == "wrong yes/no"

    def test_bool_unreadable(self):
        part = only_part(score_answer("Answer: maybe", [Part("solvent", True, kind="bool")]))
        assert not part.correct and "not yes or no" in part.reason

    @pytest.mark.parametrize("text", ["2026-01-05", "2026/01/05", "Jan 5, 2026", "January 5, 2026",
                                      "5 January 2026", "5 Jan 2026", "2026-01-05."])
    def test_date_formats(self, text):
        assert parse_date(text) == "2026-01-05"
        assert score_answer(f"Answer: {text}", [Part("d", "2026-01-05", kind="date")]).score == 1.0

    def test_date_wrong_and_unreadable(self):
        wrong = only_part(score_answer("Answer: 2026-01-06", [Part("d", "2026-01-05", kind="date")]))
        assert not wrong.correct and wrong.read == "2026-01-06" and "2026-01-05" in wrong.reason
        bad = only_part(score_answer("Answer: next Tuesday", [Part("d", "2026-01-05", kind="date")]))
        assert not bad.correct and "not a date" in bad.reason

    SEQ = [Part("order", ("C", "A", "B"), kind="sequence", choices=CHOICES)]

    @pytest.mark.parametrize("reply", [{"answer": ["C", "A", "B"]}, "Answer: C, A, B", "Answer: C > A > B",
                                       "Answer: C -> A -> B", "Answer: CAB", "Answer: c; a; b",
                                       '{"answer": ["c", "a", "b"]}'])
    def test_sequence_right(self, reply):
        outcome = score_answer(reply, self.SEQ)
        assert outcome.score == 1.0 and only_part(outcome).read == ["C", "A", "B"]

    def test_sequence_wrong_order(self):
        part = only_part(score_answer("Answer: A, B, C", self.SEQ))
        assert not part.correct and part.read == ["A", "B", "C"]

    @pytest.mark.parametrize("reply", ["Answer: C, A", "Answer: C, A, A", "Answer: C, A, B, D"])
    def test_sequence_must_use_each_choice_once(self, reply):
        part = only_part(score_answer(reply, self.SEQ))
        assert not part.correct and "each exactly once" in part.reason


# --------------------------------------------------------------------------- tolerances
class TestTolerance:
    def test_default_is_one_percent(self):
        assert DEFAULT_REL_TOL == 0.01
        assert Part("x", 100.0).tolerance() == pytest.approx(1.0)

    @pytest.mark.parametrize("given, right", [(101.0, True), (99.0, True), (101.01, False), (98.99, False),
                                              (100.0, True)])
    def test_default_edges(self, given, right):
        assert score_part(given, Part("x", 100.0)).correct is right

    def test_exact_edge_survives_float_rounding(self):
        # 1.1 * 1.01 is not exactly representable; the edge must still count as inside
        assert score_part("1.111", Part("x", 1.1)).correct
        assert not score_part("1.1112", Part("x", 1.1)).correct

    def test_negative_truth_uses_the_magnitude(self):
        assert score_part("-101", Part("x", -100.0)).correct
        assert not score_part("-101.5", Part("x", -100.0)).correct

    def test_abs_tol_override(self):
        part = Part("x", 100.0, abs_tol=2.0)
        assert part.tolerance() == 2.0
        assert score_part("102", part).correct
        assert score_part("98", part).correct
        assert not score_part("102.01", part).correct

    def test_abs_tol_smaller_than_rel_has_no_effect(self):
        assert score_part("101", Part("x", 100.0, abs_tol=0.5)).correct

    def test_per_part_rel_tol_override(self):
        loose = Part("x", 100.0, rel_tol=0.05)
        assert score_part("105", loose).correct and not score_part("105.1", loose).correct
        exact = Part("x", 100.0, rel_tol=0.0)
        assert score_part("100", exact).correct and not score_part("100.0001", exact).correct

    def test_zero_truth_with_relative_tolerance_needs_an_exact_zero(self):
        assert score_part("0", Part("x", 0.0)).correct
        assert not score_part("0.001", Part("x", 0.0)).correct


# --------------------------------------------------------------------------- multi-part answers
class TestMultiPart:
    @pytest.mark.parametrize("reply", [
        {"answer": {"max_profit": 5, "max_loss": 5, "breakeven": 105}},
        {"max_profit": 5, "max_loss": 5, "breakeven": 105},
        '```json\n{"answer": {"max_profit": "$5", "max_loss": "$5", "breakeven": "$105"}}\n```',
        "Answer: max profit $5; max loss $5; breakeven $105",
        "Answer: max_profit: 5; max_loss: 5; breakeven: 105",
        "Answer: max profit: $5, max loss: $5, breakeven: $105",
        "Answer: max_profit=5; max_loss=5; breakeven=105",
        "Final answer: max profit is 5; max loss is 5; breakeven of 105",
    ])
    def test_all_right(self, reply):
        outcome = score_answer(reply, BULL_SPREAD)
        assert outcome.score == 1.0
        assert [p.read for p in outcome.parts] == [5.0, 5.0, 105.0]

    def test_two_of_three(self):
        outcome = score_answer("Answer: max profit $5; max loss $5; breakeven $110", BULL_SPREAD)
        assert outcome.score == pytest.approx(2 / 3)
        assert [p.correct for p in outcome.parts] == [True, True, False]
        assert "not within" in outcome.parts[2].reason

    def test_missing_part_scores_zero_for_that_part(self):
        outcome = score_answer({"answer": {"max_profit": 5}}, BULL_SPREAD)
        assert outcome.score == pytest.approx(1 / 3)
        assert [p.reason for p in outcome.parts[1:]] == ["missing", "missing"]

    def test_weights(self):
        parts = [Part("a", 1.0, weight=3.0), Part("b", 2.0, weight=1.0)]
        assert score_answer("Answer: a: 1; b: 3", parts).score == pytest.approx(0.75)
        assert score_answer("Answer: a: 2; b: 2", parts).score == pytest.approx(0.25)

    def test_aliases(self):
        outcome = score_answer({"answer": {"profit": 5, "loss": 5, "be": 105}}, BULL_SPREAD)
        assert outcome.score == 1.0
        assert score_answer("Answer: profit 5; loss 5; break-even 105", BULL_SPREAD).score == 1.0

    def test_case_and_separator_insensitive_keys(self):
        outcome = score_answer({"answer": {"Max Profit": 5, "MAX-LOSS": "$5", "Break_Even": "105"}}, BULL_SPREAD)
        assert outcome.score == 1.0
        assert key_of("  Max--Profit ($) ") == "max_profit"

    def test_part_given_twice_with_different_values(self):
        outcome = score_answer("Answer: max profit 5; max profit 6; max loss 5; breakeven 105", BULL_SPREAD)
        assert outcome.score == 0.0
        assert "given twice" in outcome.reason

    def test_part_given_twice_with_the_same_value(self):
        outcome = score_answer("Answer: max profit 5; max profit 5; max loss 5; breakeven 105", BULL_SPREAD)
        assert outcome.score == 1.0

    def test_values_with_thousands_separators_are_not_split(self):
        parts = [Part("revenue", 1234.0), Part("cost", 1000.0)]
        assert score_answer("Answer: revenue: 1,234; cost: 1,000", parts).score == 1.0

    @pytest.mark.parametrize("reply, match", [("Answer: 5", "3 parts"), ({"answer": 5}, "3 parts")])
    def test_a_single_value_for_a_multi_part_question(self, reply, match):
        outcome = score_answer(reply, BULL_SPREAD)
        assert outcome.score == 0.0 and match in outcome.reason
        assert all(p.reason == outcome.reason for p in outcome.parts)

    def test_single_part_keyed_answers(self):
        eps = [Part("eps", 5.0)]
        assert split_parts({"eps": "5"}, eps) == ["5"]
        assert split_parts({"value": "5"}, eps) == ["5"]  # one unknown key: its value
        assert split_parts("eps: 5", eps) == ["5"]
        assert score_answer("Answer: EPS: $5", eps).score == 1.0

    def test_mixed_kinds(self):
        parts = [Part("growth", 0.1, kind="percent"), Part("pick", "A", kind="choice", choices=("A", "B")),
                 Part("solvent", False, kind="bool"), Part("date", "2025-12-31", kind="date")]
        reply = {"answer": {"growth": "10%", "pick": "Option A", "solvent": "no", "date": "Dec 31, 2025"}}
        assert score_answer(reply, parts).score == 1.0
        reply["answer"]["growth"] = "10"
        outcome = score_answer(reply, parts)
        assert outcome.score == pytest.approx(0.75) and "wrong unit" in outcome.parts[0].reason


# --------------------------------------------------------------------------- Part and the prompt format
class TestPart:
    def test_unknown_kind(self):
        with pytest.raises(ValueError, match="unknown kind 'money'"):
            Part("x", 1.0, kind="money")

    @pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
    def test_weight_must_be_positive_and_finite(self, weight):
        with pytest.raises(ValueError, match="weight must be positive"):
            Part("x", 1.0, weight=weight)

    @pytest.mark.parametrize("kind", ["choice", "sequence"])
    def test_choices_required(self, kind):
        with pytest.raises(ValueError, match="needs its choices"):
            Part("x", "A", kind=kind)

    @pytest.mark.parametrize("kw", [{"rel_tol": -0.01}, {"abs_tol": -1.0}])
    def test_negative_tolerance(self, kw):
        with pytest.raises(ValueError, match="non-negative"):
            Part("x", 1.0, **kw)

    def test_nan_tolerance_is_rejected(self):
        with pytest.raises(ValueError):
            Part("x", 1.0, rel_tol=float("nan"))

    def test_every_kind_is_constructible(self):
        values = {"number": 1.0, "percent": 0.1, "choice": "A", "bool": True, "date": "2026-01-01",
                  "sequence": ("A", "B")}
        assert set(values) == set(KINDS)
        for kind, value in values.items():
            assert Part("x", value, kind=kind, choices=("A", "B")).kind == kind

    def test_describe(self):
        assert Part("g", 0.125, kind="percent").describe() == "12.5%"
        assert Part("n", 1.2e9).describe() == "1,200,000,000"
        assert Part("s", ("C", "A"), kind="sequence", choices=("A", "C")).describe() == "C, A"
        assert Part("b", False, kind="bool").describe() == "no"


class TestAnswerFormat:
    def test_multi_part_mentions_every_part_name(self):
        text = answer_format(BULL_SPREAD)
        for p in BULL_SPREAD:
            assert f'"{p.name}"' in text
            assert p.label in text
        assert '"answer"' in text and "Answer:" in text

    def test_every_kind_has_its_unit(self):
        parts = [Part("growth", 0.1, kind="percent"), Part("pick", "A", kind="choice", choices=("A", "B")),
                 Part("solvent", True, kind="bool"), Part("day", "2026-01-01", kind="date"),
                 Part("order", ("B", "A"), kind="sequence", choices=("A", "B")), Part("amount", 1.0)]
        text = answer_format(parts)
        for p in parts:
            assert f'"{p.name}"' in text
        for unit in ("percentage", "one of A/B", "yes or no", "YYYY-MM-DD", '["A", "B"]', "a number"):
            assert unit in text

    def test_single_part_uses_its_label(self):
        text = answer_format([Part("eps", 5.0, label="diluted EPS, $")])
        assert "diluted EPS, $" in text and '{"answer": ...}' in text and "a number" in text


# --------------------------------------------------------------------------- properties
@st.composite
def truth_and_answer_text(draw):
    truth = draw(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False))
    # a given value strictly inside the 1% band (a margin of 0.1% is left for formatting)
    f = draw(st.floats(min_value=-0.009, max_value=0.009))
    value = truth * (1.0 + f)
    formats = [repr(value)]
    if abs(value) >= 0.01:
        sign = "-" if value < 0 else ""
        formats.append(f"{sign}${abs(value):,.6f}")
    if abs(value) >= 1e6:
        formats.append(f"{value / 1e6:.12g} million")
    text = draw(st.sampled_from(formats))
    return truth, text


@given(truth_and_answer_text())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_property_answers_within_tolerance_are_right(case):
    truth, text = case
    part = Part("x", truth)
    result = score_part(text, part)
    assert result.correct, (truth, text, result.reason)
    outcome = score_answer(f"Answer: {text}", [part])
    assert outcome.score == 1.0, (truth, text, outcome.parts[0].reason)
    assert score_answer(json.dumps({"answer": text}), [part]).score == 1.0


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), st.floats(min_value=0.0101, max_value=0.5))
def test_property_answers_outside_tolerance_are_wrong(truth, f):
    assume(abs(truth) > 1e-6)
    for given_value in (truth * (1 + f), truth * (1 - f)):
        result = score_part(repr(given_value), Part("x", truth))
        assert not result.correct and result.reason


PROPERTY_PARTS = [Part("max_profit", 5.0), Part("growth", 0.2, kind="percent"),
                  Part("pick", "A", kind="choice", choices=("A", "B")), Part("ok", True, kind="bool"),
                  Part("day", "2026-01-05", kind="date"),
                  Part("order", ("B", "A"), kind="sequence", choices=("A", "B"))]
REPLY_FRAGMENTS = st.sampled_from(['{"answer": ', "}", "Answer: ", "```json\n", "```", "max_profit: ", "; ",
                                   "growth: ", "20%", "(", ")", "1,234", "$", "billion", "\n", "yes", "B, A",
                                   "2026-01-05", '"', "{", "[", "]", "e5", "\u2212", "pick=", "Final answer:"])


@given(st.one_of(st.text(), st.lists(st.one_of(REPLY_FRAGMENTS, st.text(max_size=5)), max_size=12).map("".join)),
       st.integers(min_value=1, max_value=len(PROPERTY_PARTS)))
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_property_score_answer_never_raises(text, n_parts):
    parts = PROPERTY_PARTS[:n_parts]
    outcome = score_answer(text, parts)
    assert 0.0 <= outcome.score <= 1.0
    assert math.isfinite(outcome.score)
    assert len(outcome.parts) == n_parts
    if outcome.reason is not None:
        assert outcome.score == 0.0
    for p in outcome.parts:
        assert p.correct or p.reason  # every zero has its reason
