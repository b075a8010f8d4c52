"""finenvs.scoring.bootstrap: closed forms, the NaN policy, pairing, clusters and determinism."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from finenvs.scoring.bootstrap import Interval, bootstrap_ci, distribution, paired_difference


def test_a_constant_series_has_a_zero_width_interval():
    lo, hi = bootstrap_ci([0.1] * 37)
    assert lo == hi and lo == pytest.approx(0.1)
    assert bootstrap_ci([2.5] * 10, np.median) == (2.5, 2.5)


def test_the_interval_of_the_mean_of_a_large_normal_sample_is_mean_pm_1_96_se():
    x = np.random.default_rng(1).normal(0.02, 0.1, 4000)
    se = x.std(ddof=1) / math.sqrt(x.size)
    lo, hi = bootstrap_ci(x, n_boot=4000, seed=3)
    assert lo == pytest.approx(x.mean() - 1.96 * se, abs=0.1 * se)
    assert hi == pytest.approx(x.mean() + 1.96 * se, abs=0.1 * se)


def test_level_widens_the_interval_and_median_is_a_statistic():
    x = np.random.default_rng(2).normal(size=200)
    assert bootstrap_ci(x, level=0.99).width > bootstrap_ci(x, level=0.8).width
    lo, hi = bootstrap_ci(x, np.median)
    assert lo < np.median(x) < hi


def test_a_statistic_without_axis_is_applied_per_replicate():
    x = np.arange(30, dtype=float)
    assert bootstrap_ci(x, lambda v: float(np.mean(v)), n_boot=300) == bootstrap_ci(x, np.mean, n_boot=300)


def test_nans_are_dropped_and_counted_never_zeroed():
    x = [0.1, math.nan, 0.3, 0.2, math.nan]
    ci = bootstrap_ci(x)
    assert (ci.n, ci.dropped) == (3, 2)
    assert ci == bootstrap_ci([0.1, 0.3, 0.2])
    assert 0.1 <= ci.lo <= ci.hi <= 0.3


@pytest.mark.parametrize("values", [[], [1.0], [math.nan, 2.0], [math.nan] * 4])
def test_fewer_than_two_values_give_nan(values):
    lo, hi = bootstrap_ci(values)
    assert math.isnan(lo) and math.isnan(hi)


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    x = np.random.default_rng(5).normal(size=50)
    assert bootstrap_ci(x, seed=7) == bootstrap_ci(x, seed=7)
    assert bootstrap_ci(x, seed=7) != bootstrap_ci(x, seed=8)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_ci([1.0, 2.0], n_boot=0)
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([1.0, 2.0], level=1.0)
    with pytest.raises(ValueError, match="inf"):
        bootstrap_ci([1.0, math.inf])
    with pytest.raises(ValueError, match="groups"):
        bootstrap_ci([1.0, 2.0], groups=["a"])


def test_an_interval_is_a_pair_that_pickles():
    ci = Interval(0.1, 0.2, 5, 1)
    assert tuple(ci) == (0.1, 0.2) and pickle.loads(pickle.dumps(ci)).dropped == 1


def test_clusters_resample_whole_groups():
    # two perfectly correlated "symbols" per window: the cluster interval equals the interval over window means
    rng = np.random.default_rng(4)
    per_window = rng.normal(size=30)
    values = np.repeat(per_window, 2)
    groups = np.repeat(np.arange(30), 2)
    clustered = bootstrap_ci(values, groups=groups, seed=9)
    assert clustered == pytest.approx(bootstrap_ci(per_window, seed=9))
    assert clustered.width > bootstrap_ci(values, seed=9).width  # naive pooling overstates the precision
    # unbalanced clusters (a NaN removed from one) take the general path and stay inside the data
    values[3] = math.nan
    lo, hi = bootstrap_ci(values, groups=groups)
    assert np.nanmin(values) < lo < hi < np.nanmax(values)


def test_a_policy_paired_with_itself_differs_by_exactly_zero():
    a = np.random.default_rng(6).normal(size=40)
    d = paired_difference(a, a.copy())
    assert (d.estimate, d.lo, d.hi, d.win_rate, d.tie_rate) == (0.0, 0.0, 0.0, 0.0, 1.0)


def test_paired_difference_cancels_the_shared_market():
    rng = np.random.default_rng(8)
    market = rng.normal(0, 0.2, 60)
    a, b = market + 0.01, market.copy()
    d = paired_difference(a, b)
    assert d.estimate == pytest.approx(0.01) and d.lo == pytest.approx(0.01) and d.win_rate == 1.0
    assert paired_difference(b, a).win_rate == 0.0
    b[0] = math.nan
    assert (paired_difference(a, b).n, paired_difference(a, b).dropped) == (59, 1)
    with pytest.raises(ValueError, match="length"):
        paired_difference([1.0], [1.0, 2.0])


def test_distribution_closed_form():
    d = distribution([-1.0, 1.0, 2.0, 3.0, math.nan])
    assert d["n"] == 4 and d["dropped"] == 1 and d["mean"] == 1.25 and d["median"] == 1.5
    assert d["sd"] == pytest.approx(np.std([-1, 1, 2, 3], ddof=1)) and d["share_positive"] == 0.75
    assert (d["q1"], d["q3"]) == (0.5, 2.25)
    assert math.isnan(distribution([])["mean"]) and math.isnan(distribution([1.0])["sd"])
