"""FinTradingVectorEnv: equality with N FinTrading-v0 envs, autoreset, reset, bad input, date lock and SB3.

The batched env claims to be ``SyncVectorEnv`` over ``num_envs`` copies of
``FinTradingEnv``: the equality tests step both side by side with the same
seeds and actions and demand bit-identical books and observations.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from finenvs.tasks.trading import vector as trading_vector
from finenvs.tasks.trading.core import BUY, HOLD, RUIN_LOG_RETURN, SELL
from finenvs.tasks.trading.env import FinTradingEnv
from finenvs.tasks.trading.vector import STEP_INFO_KEYS, FinTradingVectorEnv
from helpers import perturb_after

MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
#: reset-info keys of FinTrading-v0 that the vector env also reports for every (auto)reset sub-env
RESET_KEYS = ("symbol", "window_start", "window_end", "n_decisions", "date", "price")
#: keys only a reset produces (in SyncVectorEnv step infos too), so their masks must agree exactly
RESET_ONLY_KEYS = ("symbol", "window_start", "window_end", "n_decisions")
#: a short-side blow-up market: a 600 % annual volatility GBM ruins short books within an episode
HIGH_VOL = {"source": "synthetic", "synthetic": {"model": "gbm", "params": {"sigma": 6.0}}, "episode_length": 40}
JUMPY = {
    "source": "synthetic",
    "synthetic": {"model": "merton", "params": {"jump_intensity": 60.0, "jump_mean": 0.3, "jump_std": 0.3}},
    "episode_length": 40,
}
SELL_HEAVY = (0.6, 0.2, 0.2)

#: name -> (FinTradingEnv kwargs, steps, action probabilities or None, must some episode be ruined)
CASES = {
    "default": ({}, 1000, None, False),
    "episode_length": ({"episode_length": 25}, 300, None, False),
    "next_open": ({"fill": "next_open", "episode_length": 30}, 300, None, False),
    "dsr": ({"reward": "dsr", "dsr_eta": 0.05, "episode_length": 50}, 300, None, False),
    "long_only": ({"allow_short": False, "episode_length": 30}, 300, None, False),
    "zero_fee": ({"fee_bps": 0.0, "episode_length": 30}, 300, None, False),
    "short_exit_on_equity": ({"short_exit_fee": "equity", "episode_length": 30}, 300, None, False),
    "short_exit_on_equity_next_open": (
        {"short_exit_fee": "equity", "fill": "next_open", "episode_length": 30}, 300, None, False
    ),
    "split_eval": ({"split": "eval"}, 300, None, False),
    "split_live": ({"split": "live"}, 300, None, False),
    "explicit_window": ({"split": None, "start": "2025-06-02", "end": "2025-07-31"}, 300, None, False),
    "symbols_subset": ({"symbols": ["MSFT", "NVDA", "SPY"], "episode_length": 40}, 300, None, False),
    "single_symbol": ({"symbol": "TSLA", "split": "eval"}, 300, None, False),
    "window5": ({"window": 5, "episode_length": 30}, 300, None, False),
    "synthetic_gbm": ({"source": "synthetic", "synthetic": {"model": "gbm"}, "episode_length": 30}, 300, None, False),
    "synthetic_heston": (
        {"source": "synthetic", "synthetic": {"model": "heston"}, "episode_length": 30}, 300, None, False
    ),
    "synthetic_merton": (
        {"source": "synthetic", "synthetic": {"model": "merton"}, "episode_length": 30, "fill": "next_open"},
        300, None, False,
    ),
    "ruin_close": (HIGH_VOL, 400, SELL_HEAVY, True),
    "ruin_next_open": ({**HIGH_VOL, "fill": "next_open"}, 400, SELL_HEAVY, True),
    "ruin_dsr_jumps": ({**JUMPY, "reward": "dsr"}, 400, SELL_HEAVY, True),
    "ruin_long_only_next_open": ({**HIGH_VOL, "allow_short": False, "fill": "next_open"}, 200, None, False),
}


def _sync(n, mode="next_step", **kwargs):
    return SyncVectorEnv([lambda: FinTradingEnv(**kwargs)] * n, autoreset_mode=MODES[mode])


def _mask(info, key, n):
    return info.get(f"_{key}", np.zeros(n, dtype=bool))


def _assert_reset_infos_equal(vec_info, ref_info, n):
    """Reset infos of the sub-envs the vector env says it reset agree with FinTrading-v0's reset infos."""
    for key in RESET_ONLY_KEYS:
        assert np.array_equal(_mask(vec_info, key, n), _mask(ref_info, key, n)), key
    for key in RESET_KEYS:
        for i in np.flatnonzero(_mask(vec_info, key, n)):
            assert _mask(ref_info, key, n)[i] and vec_info[key][i] == ref_info[key][i], (key, i)


def compare_with_sync(kwargs, mode, steps, *, n=6, seed=3, probs=None, rtol=1e-12):
    """Step FinTradingVectorEnv(n) and SyncVectorEnv of n FinTradingEnv side by side; assert equality.

    Returns:
        (terminations, truncations, fraction of bit-identical rewards) over the rollout.
    """
    vec = FinTradingVectorEnv(n, autoreset_mode=mode, **kwargs)
    ref = _sync(n, mode, **kwargs)
    obs_v, info_v = vec.reset(seed=seed)
    obs_r, info_r = ref.reset(seed=seed)
    assert obs_v.dtype == np.float32 and np.array_equal(obs_v, obs_r)
    _assert_reset_infos_equal(info_v, info_r, n)
    rng = np.random.default_rng(seed)
    n_term = n_trunc = exact = 0
    for k in range(steps):
        actions = rng.choice(3, size=n, p=probs)
        obs_v, rew_v, term_v, trunc_v, info_v = vec.step(actions)
        obs_r, rew_r, term_r, trunc_r, info_r = ref.step(actions)
        where = f"step {k}"
        assert obs_v.dtype == np.float32 and np.array_equal(obs_v, obs_r), where
        assert np.array_equal(term_v, term_r) and np.array_equal(trunc_v, trunc_r), where
        for key in ("equity", "position", "fees"):
            assert np.array_equal(info_v[key], info_r[key]), f"{where}: info[{key!r}]"
        np.testing.assert_allclose(rew_v, rew_r, rtol=rtol, atol=1e-15, err_msg=where)
        if kwargs.get("reward", "log_return") == "log_return":
            assert np.all(rew_v[term_v] == RUIN_LOG_RETURN), where
        exact += int(np.sum(rew_v == rew_r))
        _assert_reset_infos_equal(info_v, info_r, n)
        done = term_v | trunc_v
        if mode == "same_step":
            assert np.array_equal(_mask(info_v, "final_obs", n), done), where
            assert np.array_equal(_mask(info_r, "final_obs", n), done), where
            for i in np.flatnonzero(done):
                final = info_v["final_obs"][i]
                assert final.dtype == np.float32 and np.array_equal(final, info_r["final_obs"][i]), where
                for key in ("equity", "position", "fees"):
                    assert info_v["final_info"][key][i] == info_r["final_info"][key][i], f"{where}: final {key}"
        else:
            assert "final_obs" not in info_v
        n_term += int(term_v.sum())
        n_trunc += int(trunc_v.sum())
    return n_term, n_trunc, exact / (steps * n)


# ---------------------------------------------------------------- equality with N single envs
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", list(CASES))
def test_equals_sync_vector_env_of_single_envs(case, mode):
    kwargs, steps, probs, must_ruin = CASES[case]
    rtol = 1e-10 if kwargs.get("reward") == "dsr" else 1e-12
    n_term, n_trunc, exact = compare_with_sync(kwargs, mode, steps, probs=probs, rtol=rtol)
    assert n_trunc > 0, "the rollout never reached an autoreset"
    if must_ruin:
        assert n_term > 0, "the high-volatility case ruined no episode"
    # vectorised log/power may differ from libm in the last place, but only rarely
    assert exact >= 0.9, f"only {exact:.1%} of rewards are bit-identical"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_synthetic_without_observation_table_equals_single_envs(monkeypatch, mode):
    """Past OBS_TABLE_BYTES the slots keep only features and steps gather the windows: same results."""
    monkeypatch.setattr(trading_vector, "OBS_TABLE_BYTES", 0)
    kwargs = {"source": "synthetic", "synthetic": {"model": "heston"}, "episode_length": 30, "window": 7}
    assert not FinTradingVectorEnv(2, **kwargs)._use_table
    n_term, n_trunc, exact = compare_with_sync(kwargs, mode, 200)
    assert n_trunc > 0 and exact >= 0.9


def test_reset_options_match_single_envs():
    """Options apply to every sub-env; a symbol outside the universe joins the pool on the fly."""
    options = {"symbol": "QQQ", "start": "2026-02-02", "end": "2026-02-27"}
    kwargs = {"symbols": ["AAPL", "MSFT"], "episode_length": 10}
    vec = FinTradingVectorEnv(3, **kwargs)
    ref = _sync(3, **kwargs)
    obs_v, info_v = vec.reset(seed=4, options=dict(options))
    obs_r, info_r = ref.reset(seed=4, options=dict(options))
    assert np.array_equal(obs_v, obs_r)
    _assert_reset_infos_equal(info_v, info_r, 3)
    assert list(info_v["symbol"]) == ["QQQ"] * 3 and vec.symbols == ["QQQ"] * 3
    assert set(info_v["window_start"]) <= set(pd.bdate_range("2026-02-02", "2026-02-27").strftime("%Y-%m-%d"))
    # options apply to that reset only: later autoresets draw from the constructor's universe and split
    rng = np.random.default_rng(0)
    symbols = set()
    for _ in range(40):
        a = rng.integers(0, 3, 3)
        out_v, out_r = vec.step(a), ref.step(a)
        assert np.array_equal(out_v[0], out_r[0])
        np.testing.assert_allclose(out_v[1], out_r[1], rtol=1e-12, atol=1e-15)
        assert np.array_equal(out_v[4]["equity"], out_r[4]["equity"])
        _assert_reset_infos_equal(out_v[4], out_r[4], 3)
        if "symbol" in out_v[4]:
            symbols.update(out_v[4]["symbol"][out_v[4]["_symbol"]])
    assert symbols == {"AAPL", "MSFT"}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_one_sub_env_equals_one_single_env(mode):
    n_term, n_trunc, _ = compare_with_sync({**HIGH_VOL, "episode_length": 8}, mode, 600, n=1, probs=SELL_HEAVY)
    assert n_trunc > 0 and n_term > 0


# ---------------------------------------------------------------- autoreset semantics
def _desynchronised(mode, kwargs=None):
    """A 3-env vector env, 5-decision episodes, sub-env 0 two steps behind (reset by mask at step 2)."""
    kwargs = kwargs or {"split": "eval", "episode_length": 5}
    vec = FinTradingVectorEnv(3, autoreset_mode=mode, **kwargs)
    vec.reset(seed=21)
    for a in ([BUY, SELL, HOLD], [SELL, BUY, BUY]):
        vec.step(np.array(a))
    vec.reset(options={"reset_mask": np.array([True, False, False])})
    return vec


def test_next_step_autoreset_returns_terminal_obs_then_ignores_the_action():
    assert FinTradingVectorEnv(1).metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    vec = _desynchronised("next_step")
    for _ in range(2):
        *_, term, trunc, _ = vec.step(np.array([BUY, BUY, SELL]))
        assert not (term | trunc).any()
    obs, rew, term, trunc, info = vec.step(np.array([BUY, BUY, SELL]))
    assert list(trunc) == [False, True, True] and not term.any()
    assert np.all(obs[1:, -2] == 0.0) and np.all(obs[1:, -3] == 0.0)  # terminal obs: no time left, closed out
    assert "final_obs" not in info and "_symbol" not in info
    # the next step resets sub-envs 1 and 2: their actions are ignored, whatever they are
    twins = [copy.deepcopy(vec) for _ in range(3)]
    with pytest.raises(ValueError, match=r"at sub-env\(s\) \[1\]"):  # a bad action consumes no pending reset
        twins[0].step(np.array([HOLD, 3, BUY]))
    outs = [t.step(np.array([HOLD, a, b])) for t, (a, b) in zip(twins, [(SELL, SELL), (BUY, HOLD), (HOLD, BUY)], strict=True)]
    for out in outs[1:]:
        assert np.array_equal(out[0], outs[0][0]) and np.array_equal(out[1], outs[0][1])
        assert np.array_equal(out[2], outs[0][2]) and np.array_equal(out[3], outs[0][3])
        for key in STEP_INFO_KEYS:
            assert np.array_equal(out[4][key], outs[0][4][key])
        assert all(a.state(i) == b.state(i) for a, b in zip(twins, twins[1:], strict=False) for i in range(3))
    obs, rew, term, trunc, info = outs[0]
    assert list(rew[1:]) == [0.0, 0.0] and not (term | trunc).any()
    assert np.all(obs[1:, -2] == 1.0) and np.all(obs[1:, -3:][:, [0, 2]] == 0.0)  # a new episode's first obs
    assert list(info["_window_start"]) == [False, True, True]
    assert list(info["equity"][1:]) == [1.0, 1.0] and list(info["fees"][1:]) == [0.0, 0.0]
    assert list(info["position"][1:]) == [0.0, 0.0] and list(info["fee"][1:]) == [0.0, 0.0]
    # ...while sub-env 0 stepped: its action matters (it is long: HOLD exits and pays, BUY keeps it for free)
    other = copy.deepcopy(vec).step(np.array([BUY, SELL, SELL]))
    assert other[4]["fee"][0] == 0.0 and outs[0][4]["fee"][0] > 0.0 and other[1][0] != rew[0]
    # and the step after that steps the reset sub-envs with their actions
    after = [t.step(np.array([HOLD, a, a])) for t, a in zip(twins[:2], (BUY, HOLD), strict=True)]
    assert after[0][4]["fee"][1] > 0.0 and after[1][4]["fee"][1] == 0.0


def test_next_step_reset_obs_is_the_single_env_reset_after_the_episode():
    """After an episode the pending sub-env plays the single env's next reset (same generator)."""
    kwargs = {"episode_length": 7}
    vec = FinTradingVectorEnv(2, **kwargs)
    vec.reset(seed=30)
    singles = [FinTradingEnv(**kwargs) for _ in range(2)]
    for i, env in enumerate(singles):
        env.reset(seed=30 + i)
    for _ in range(7):
        vec.step(np.array([BUY, SELL]))
        for env, a in zip(singles, (BUY, SELL), strict=True):
            env.step(a)
    obs, *_, info = vec.step(np.array([HOLD, HOLD]))
    for i, env in enumerate(singles):
        first, first_info = env.reset()
        assert np.array_equal(obs[i], first)
        assert info["window_start"][i] == first_info["window_start"] and info["symbol"][i] == first_info["symbol"]


def test_same_step_autoreset_returns_new_obs_and_final_obs():
    vec = _desynchronised("same_step")
    assert vec.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert vec.metadata["autoreset_mode"] == _sync(1, "same_step").metadata["autoreset_mode"]
    twin = _desynchronised("next_step")  # the same episodes and actions, next-step convention
    actions = np.array([BUY, BUY, SELL])
    for _ in range(2):
        *_, term, trunc, info = vec.step(actions)
        twin.step(actions)
        assert not (term | trunc).any() and "final_obs" not in info
    obs, rew, term, trunc, info = vec.step(actions)
    t_obs, t_rew, t_term, t_trunc, t_info = twin.step(actions)
    done = term | trunc
    assert list(done) == [False, True, True]
    assert np.array_equal(rew, t_rew) and np.array_equal(term, t_term) and np.array_equal(trunc, t_trunc)
    assert np.all(obs[1:, -2] == 1.0) and np.all(obs[1:, -3] == 0.0)  # already the new episodes
    assert np.array_equal(obs[0], t_obs[0])
    assert list(info["_final_obs"]) == [False, True, True] and info["final_obs"][0] is None
    for i in (1, 2):
        assert np.array_equal(info["final_obs"][i], t_obs[i])  # the terminal obs the next-step env returns
        assert info["final_obs"][i][-2] == 0.0
        for key in STEP_INFO_KEYS:
            assert info["final_info"][key][i] == t_info[key][i]
    assert list(info["_final_info"]) == [False, True, True]
    assert list(info["_window_start"]) == [False, True, True]
    assert list(info["equity"][1:]) == [1.0, 1.0]
    # the next-step env resets on its next step: the very first obs the same-step env already returned
    nxt = twin.step(actions)[0]
    assert np.array_equal(nxt[1:], obs[1:])


def test_autoreset_mode_accepts_the_gymnasium_enum():
    for name, mode in MODES.items():
        vec = FinTradingVectorEnv(2, autoreset_mode=mode, split="eval")
        assert vec.autoreset_mode == mode and vec.metadata["autoreset_mode"] == mode
        assert vec.metadata["autoreset_mode"] == _sync(1, name, split="eval").metadata["autoreset_mode"]
    with pytest.raises(ValueError, match="valid modes"):
        FinTradingVectorEnv(2, autoreset_mode=AutoresetMode.DISABLED)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_gymnasium_record_episode_statistics_agrees_with_sync_vector_env(mode):
    """gymnasium's vector wrappers read the autoreset mode from metadata: episode stats come out the same."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    kwargs = {"episode_length": 10, "fill": "next_open"}
    vec = RecordEpisodeStatistics(FinTradingVectorEnv(3, autoreset_mode=mode, **kwargs))
    ref = RecordEpisodeStatistics(_sync(3, mode, **kwargs))
    vec.reset(seed=0)
    ref.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes = 0
    for k in range(40):
        a = rng.integers(0, 3, 3)
        info_v, info_r = vec.step(a)[4], ref.step(a)[4]
        assert ("episode" in info_v) == ("episode" in info_r), k
        if "episode" in info_v:
            assert np.array_equal(info_v["_episode"], info_r["_episode"])
            assert np.array_equal(info_v["episode"]["l"], info_r["episode"]["l"])
            np.testing.assert_allclose(info_v["episode"]["r"], info_r["episode"]["r"], rtol=1e-12, atol=1e-15)
            episodes += int(info_v["_episode"].sum())
    assert episodes >= 9


# ---------------------------------------------------------------- reset
@pytest.mark.parametrize(
    "kwargs", [{"episode_length": 20}, {"source": "synthetic", "synthetic": {"model": "merton"}, "episode_length": 20}]
)
def test_int_seed_gives_sub_env_i_the_seed_plus_i(kwargs):
    vec = FinTradingVectorEnv(5, **kwargs)
    obs, info = vec.reset(seed=11)
    starts = set()
    for i in range(5):
        first, first_info = FinTradingEnv(**kwargs).reset(seed=11 + i)
        assert np.array_equal(obs[i], first)
        for key in ("window_start", "window_end", "symbol", "n_decisions"):
            assert info[key][i] == first_info[key], (key, i)
        starts.add((first_info["symbol"], first_info["window_start"], first.tobytes()))
    assert len(starts) == 5  # the sub-envs play different episodes


def test_list_of_seeds_and_its_length():
    kwargs = {"source": "synthetic", "synthetic": {"model": "gbm"}, "episode_length": 15}
    vec = FinTradingVectorEnv(3, **kwargs)
    obs, _ = vec.reset(seed=[5, 99, 5])
    assert np.array_equal(obs[0], obs[2]) and not np.array_equal(obs[0], obs[1])
    assert np.array_equal(obs[1], FinTradingEnv(**kwargs).reset(seed=99)[0])
    obs, _ = vec.reset(seed=np.int64(99))
    assert np.array_equal(obs[0], FinTradingEnv(**kwargs).reset(seed=99)[0])
    for seeds in ([1, 2], [1, 2, 3, 4], []):
        with pytest.raises(ValueError, match="seeds for num_envs=3"):
            vec.reset(seed=seeds)


def test_reset_mask_resets_only_the_masked_sub_envs_like_sync_vector_env():
    kwargs = {"episode_length": 5}
    vec, ref = FinTradingVectorEnv(4, **kwargs), _sync(4, **kwargs)
    vec.reset(seed=8)
    ref.reset(seed=8)
    rng = np.random.default_rng(8)
    for _ in range(5):  # every episode ends here: all four sub-envs are pending an autoreset
        a = rng.integers(0, 3, 4)
        last = vec.step(a)
        ref.step(a)
    assert last[3].all()
    before = [vec.state(i) for i in range(4)]
    mask = np.array([True, False, True, False])
    obs_v, info_v = vec.reset(seed=[100, None, 101, None], options={"reset_mask": mask.copy(), "symbol": "NVDA"})
    obs_r, info_r = ref.reset(seed=[100, None, 101, None], options={"reset_mask": mask.copy(), "symbol": "NVDA"})
    assert np.array_equal(obs_v, obs_r)
    assert np.array_equal(obs_v[~mask], last[0][~mask])  # the others' state is untouched
    assert [vec.state(i) for i in (1, 3)] == [before[1], before[3]]
    assert list(info_v["_symbol"]) == list(mask) and list(info_v["symbol"][mask]) == ["NVDA", "NVDA"]
    assert np.array_equal(obs_v[0], FinTradingEnv(**kwargs).reset(seed=100, options={"symbol": "NVDA"})[0])
    _assert_reset_infos_equal(info_v, info_r, 4)
    # sub-envs 0 and 2 now step with their actions, 1 and 3 still autoreset: as SyncVectorEnv does
    for k in range(30):
        a = rng.integers(0, 3, 4)
        out_v, out_r = vec.step(a), ref.step(a)
        assert np.array_equal(out_v[0], out_r[0]), k
        np.testing.assert_allclose(out_v[1], out_r[1], rtol=1e-12, atol=1e-15)
        assert np.array_equal(out_v[3], out_r[3]) and np.array_equal(out_v[4]["equity"], out_r[4]["equity"])
        _assert_reset_infos_equal(out_v[4], out_r[4], 4)


def test_reset_mask_errors():
    vec = FinTradingVectorEnv(3, split="eval")
    with pytest.raises(gym.error.ResetNeeded, match="first reset"):
        vec.reset(seed=0, options={"reset_mask": np.array([True, False, True])})
    with pytest.raises(gym.error.ResetNeeded):
        vec.step(np.array([1, 1, 1]))
    vec.reset(seed=0, options={"reset_mask": np.ones(3, dtype=bool)})  # a full mask is a full reset
    for bad in (np.array([1, 0, 1]), np.ones(4, dtype=bool), np.ones((3, 1), dtype=bool)):
        with pytest.raises(ValueError, match=r"reset_mask.*bool array of shape \(3,\)"):
            vec.reset(options={"reset_mask": bad})
    with pytest.raises(ValueError, match="resets no sub-env"):
        vec.reset(options={"reset_mask": np.zeros(3, dtype=bool)})


def test_unknown_and_inapplicable_reset_options_error():
    vec = FinTradingVectorEnv(2, split="eval")
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['sym'\].*reset_mask"):
        vec.reset(options={"sym": "AAPL"})
    syn = FinTradingVectorEnv(2, source="synthetic", episode_length=10)
    with pytest.raises(ValueError, match="source='real' only"):
        syn.reset(seed=0, options={"start": "2025-01-02"})


# ---------------------------------------------------------------- bad input
N_BAD = 4


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (np.zeros(N_BAD + 1, dtype=np.int64), r"shape \(5,\).*shape \(4,\)"),
        (np.zeros((N_BAD, 1), dtype=np.int64), r"shape \(4, 1\).*shape \(4,\)"),
        (np.int64(1), r"shape \(\).*shape \(4,\)"),
        (1, r"shape \(\).*shape \(4,\)"),
        ([0, 1, 2], r"shape \(3,\)"),
        (np.array([0.0, 1.0, 2.0, 1.0]), r"dtype float64.*0: SELL, 1: HOLD, 2: BUY"),
        (np.array([0.0, 1.0, np.nan, 1.0]), r"NaN/inf at sub-env\(s\) \[2\]"),
        ([0, 1, 2, 1.5], r"dtype float64"),
        (np.array([True, False, True, True]), r"dtype bool.*0: SELL, 1: HOLD, 2: BUY"),
        (np.array([0, 1, -1, 2]), r"invalid action\(s\) \[-1\] at sub-env\(s\) \[2\].*0: SELL, 1: HOLD, 2: BUY"),
        (np.array([3, 1, 1, 3]), r"invalid action\(s\) \[3, 3\] at sub-env\(s\) \[0, 3\]"),
        (np.array([1, 1, 1, -1], dtype=np.int8), r"\[-1\] at sub-env\(s\) \[3\]"),
        (np.array([1, 3, 1, 1], dtype=np.uint8), r"\[3\] at sub-env\(s\) \[1\]"),
        (np.array([1, 1, 1, -7], dtype=np.int32), r"\[-7\] at sub-env\(s\) \[3\]"),
    ],
)
def test_invalid_actions_raise_value_error_and_leave_the_env_unchanged(actions, match):
    vec = FinTradingVectorEnv(N_BAD, episode_length=10)
    vec.reset(seed=0)
    twin = copy.deepcopy(vec)
    with pytest.raises(ValueError, match=match):
        vec.step(actions)
    good = np.array([BUY, SELL, HOLD, BUY])
    out, ref = vec.step(good), twin.step(good)
    assert np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1])


@pytest.mark.parametrize(
    "actions", [[2, 0, 1, 2], np.array([2, 0, 1, 2], dtype=np.int32), np.array([2, 0, 1, 2], dtype=np.uint8)]
)
def test_lists_and_other_integer_dtypes_are_accepted(actions):
    vec = FinTradingVectorEnv(N_BAD, episode_length=10)
    twin = copy.deepcopy(vec)
    vec.reset(seed=1)
    twin.reset(seed=1)
    out, ref = vec.step(actions), twin.step(np.array([2, 0, 1, 2]))
    assert np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1])


def test_step_before_reset_raises_reset_needed():
    vec = FinTradingVectorEnv(2, split="eval")
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        vec.step(np.array([1, 1]))
    with pytest.raises(gym.error.ResetNeeded):
        vec.state(0)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0,), {}, "num_envs=0 must be an integer >= 1"),
        ((-1,), {}, "num_envs=-1"),
        ((True,), {}, "num_envs=True"),
        ((1.5,), {}, "num_envs=1.5"),
        (("4",), {}, "num_envs='4'"),
        ((2,), {"render_mode": "ansi"}, "does not render"),
        ((2,), {"render_mode": "rgb_array"}, "does not render"),
        ((2,), {"autoreset_mode": "bogus"}, r"autoreset_mode='bogus'; valid modes: \['next_step', 'same_step'\]"),
        ((2,), {"fill": "vwap"}, "valid fills"),
        ((2,), {"window": 0}, "window"),
    ],
)
def test_bad_constructor_arguments_raise_value_error(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        FinTradingVectorEnv(*args, **kwargs)


def test_render_mode_none_is_accepted():
    vec = FinTradingVectorEnv(2, split="eval", render_mode=None)
    assert vec.render_mode is None and "render_mode" not in vec.env_kwargs


# ---------------------------------------------------------------- spaces and returned arrays
@pytest.mark.parametrize(
    "kwargs", [{}, {"window": 5}, {"source": "synthetic", "synthetic": {"model": "heston"}, "window": 12}]
)
def test_spaces_are_fintrading_v0_spaces_and_their_batch(kwargs):
    vec = FinTradingVectorEnv(7, **kwargs)
    single = gym.make("FinTrading-v0", **kwargs)
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space == gym.spaces.Discrete(3)
    assert vec.observation_space == gym.vector.utils.batch_space(single.observation_space, 7)
    assert vec.observation_space.shape == (7, *single.observation_space.shape)
    assert vec.observation_space.dtype == np.float32
    assert vec.action_space == gym.spaces.MultiDiscrete([3] * 7)
    assert vec.num_envs == 7


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("kwargs", [{"episode_length": 12, "fill": "next_open"}, HIGH_VOL])
def test_every_returned_batch_is_fresh_in_space_and_typed(kwargs, mode):
    n = 5
    vec = FinTradingVectorEnv(n, autoreset_mode=mode, **kwargs)
    obs, _ = vec.reset(seed=2)
    seen = [obs]
    rng = np.random.default_rng(2)
    for _ in range(120):
        obs, rew, term, trunc, info = vec.step(rng.choice(3, n, p=SELL_HEAVY))
        assert obs.dtype == np.float32 and obs.shape == (n, vec.single_observation_space.shape[0])
        assert vec.observation_space.contains(obs)
        assert not np.shares_memory(obs, seen[-1])
        assert rew.dtype == np.float64 and rew.shape == (n,) and np.isfinite(rew).all()
        assert term.dtype == np.bool_ and term.shape == (n,)
        assert trunc.dtype == np.bool_ and trunc.shape == (n,)
        for i in np.flatnonzero(info.get("_final_obs", np.zeros(n, dtype=bool))):
            assert vec.single_observation_space.contains(info["final_obs"][i])
            assert not np.shares_memory(info["final_obs"][i], obs)
        seen.append(obs)


def test_mutating_returned_observations_does_not_change_the_env():
    kwargs = {"episode_length": 6, "window": 5}
    a = FinTradingVectorEnv(3, autoreset_mode="same_step", **kwargs)
    b = FinTradingVectorEnv(3, autoreset_mode="same_step", **kwargs)
    obs_a, _ = a.reset(seed=4)
    obs_b, _ = b.reset(seed=4)
    obs_a[:] = 123.0
    rng = np.random.default_rng(4)
    for _ in range(30):
        act = rng.integers(0, 3, 3)
        obs_a, rew_a, *_, info_a = a.step(act)
        obs_b, rew_b, *_, info_b = b.step(act)
        assert np.array_equal(obs_a, obs_b) and np.array_equal(rew_a, rew_b)
        obs_a *= -1.0
        for i in np.flatnonzero(info_a.get("_final_obs", np.zeros(3, dtype=bool))):
            assert np.array_equal(info_a["final_obs"][i], info_b["final_obs"][i])
            info_a["final_obs"][i][:] = 7.0


def test_mutating_returned_info_arrays_does_not_change_the_env():
    vec = FinTradingVectorEnv(4, episode_length=20)
    vec.reset(seed=0)
    twin = copy.deepcopy(vec)
    rng = np.random.default_rng(0)
    for _ in range(10):
        act = rng.integers(0, 3, 4)
        out, ref = vec.step(act), twin.step(act)
        assert np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1])
        for key in STEP_INFO_KEYS:
            assert np.array_equal(out[4][key], ref[4][key]), key
            out[4][key][:] = 1.0


# ---------------------------------------------------------------- determinism
def _rollout(vec, seed, steps=80, probs=None):
    """Bytes of every observation, reward, termination, truncation and step-info array of a rollout."""
    rng = np.random.default_rng(seed)
    obs, info = vec.reset(seed=seed)
    out = [obs.tobytes(), tuple(info["window_start"]), tuple(info["symbol"])]
    for _ in range(steps):
        obs, rew, term, trunc, info = vec.step(rng.choice(3, vec.num_envs, p=probs))
        out += [obs.tobytes(), rew.tobytes(), term.tobytes(), trunc.tobytes()]
        out += [info[k].tobytes() for k in STEP_INFO_KEYS]
        out += [tuple(info.get("window_start", ())), tuple(info.get("_window_start", ()))]
    return out


DETERMINISM = {
    "real": {"episode_length": 15},
    "real_dsr_next_open": {"episode_length": 15, "reward": "dsr", "fill": "next_open"},
    "heston": {"source": "synthetic", "synthetic": {"model": "heston"}, "episode_length": 15},
    "merton": {"source": "synthetic", "synthetic": {"model": "merton"}, "episode_length": 15},
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("variant", sorted(DETERMINISM))
def test_same_seed_gives_identical_rollouts(variant, mode):
    kwargs = DETERMINISM[variant]
    a = _rollout(FinTradingVectorEnv(4, autoreset_mode=mode, **kwargs), seed=9)
    b = _rollout(FinTradingVectorEnv(4, autoreset_mode=mode, **kwargs), seed=9)
    assert a == b
    vec = FinTradingVectorEnv(4, autoreset_mode=mode, **kwargs)  # and again on the same object
    assert _rollout(vec, seed=9) == _rollout(vec, seed=9) == a


@pytest.mark.parametrize("variant", sorted(DETERMINISM))
def test_different_seeds_give_different_rollouts(variant):
    kwargs = DETERMINISM[variant]
    vec = FinTradingVectorEnv(4, **kwargs)
    firsts = {vec.reset(seed=s)[0].tobytes() for s in range(0, 40, 4)}
    assert len(firsts) == 10
    obs, info = vec.reset(seed=0)
    assert len({row.tobytes() for row in obs}) == 4  # sub-envs differ from each other too
    if kwargs.get("source", "real") == "real":
        starts = set()
        for s in range(0, 40, 4):
            starts.update(vec.reset(seed=s)[1]["window_start"])
        assert len(starts) > 20
    # unseeded resets draw fresh entropy
    assert FinTradingVectorEnv(2, **kwargs).reset()[0].tobytes() != FinTradingVectorEnv(2, **kwargs).reset()[0].tobytes()


# ---------------------------------------------------------------- date lock
def _dated_rollout(vec, actions, day_index):
    """Per step and sub-env: (date of the returned obs, obs bytes, reward, term, trunc, info values)."""
    n = vec.num_envs
    obs, info = vec.reset(seed=0)
    day = np.array([day_index[d] for d in info["date"]])
    rows = [[(day[i], obs[i].tobytes(), info["symbol"][i], info["window_start"][i], info["window_end"][i])
             for i in range(n)]]
    for a in actions:
        obs, rew, term, trunc, info = vec.step(a)
        reset = _mask(info, "date", n)
        day = np.where(reset, [day_index.get(d, -1) for d in info.get("date", [None] * n)], day + 1)
        rows.append([(day[i], obs[i].tobytes(), rew[i], term[i], trunc[i],
                      *(info[k][i] for k in STEP_INFO_KEYS), reset[i]) for i in range(n)])
    return rows


@pytest.mark.parametrize(
    ("fill", "reward", "as_csv", "seed"),
    [("close", "log_return", False, 1), ("next_open", "log_return", False, 2), ("close", "dsr", False, 3),
     ("next_open", "dsr", True, 4)],
)
def test_counterfactual_future_invariance(aapl_frame, tmp_path, fill, reward, as_csv, seed):
    """Perturb every bar after a cut t: everything every sub-env saw up to t is byte-identical."""
    rng = np.random.default_rng(seed)
    dates = pd.to_datetime(aapl_frame["date"]).dt.strftime("%Y-%m-%d").tolist()
    day_index = {d: k for k, d in enumerate(dates)}
    for _ in range(2):
        cut = int(rng.integers(len(dates) // 3, 2 * len(dates) // 3))
        changed = perturb_after(aapl_frame, dates[cut], rng)
        data = [aapl_frame, changed]
        if as_csv:
            data = [tmp_path / "base.csv", tmp_path / "alt.csv"]
            aapl_frame.to_csv(data[0], index=False)
            changed.to_csv(data[1], index=False)
        kwargs = {"symbol": "AAPL", "split": None, "fill": fill, "reward": reward, "episode_length": 40}
        actions = rng.integers(0, 3, (400, 8))
        base = _dated_rollout(FinTradingVectorEnv(8, data=data[0], **kwargs), actions, day_index)
        alt = _dated_rollout(FinTradingVectorEnv(8, data=data[1], **kwargs), actions, day_index)
        compared = differ = 0
        aligned = [True] * 8  # sub-env timelines agree until a ruin that only one future has
        for k, (row_b, row_a) in enumerate(zip(base, alt, strict=True)):
            for i, (b, a) in enumerate(zip(row_b, row_a, strict=True)):
                if not aligned[i]:
                    continue
                assert b[0] == a[0] and b[0] >= 0  # the same episodes (drawn from dates only)
                if b[0] <= cut:
                    assert b == a, f"step {k}, sub-env {i}, day {dates[b[0]]} changed (cut {dates[cut]})"
                    compared += 1
                else:
                    differ += b[1] != a[1]
                    # after a post-cut ruin in one future only, that sub-env's next resets come at other steps
                    aligned[i] = k == 0 or b[3] == a[3]
        assert compared > 200 and differ > 200  # both sides of the cut were visited; the perturbation is real


# ---------------------------------------------------------------- pickle and deepcopy
HESTON15 = {"source": "synthetic", "synthetic": {"model": "heston"}, "episode_length": 15}
#: name -> (kwargs, autoreset mode, synthetic observations gathered per step instead of tabled)
PICKLE = {
    "real_next_open": ({"episode_length": 15, "fill": "next_open"}, "next_step", False),
    "real_dsr_same_step": ({"episode_length": 15, "reward": "dsr"}, "same_step", False),
    "synthetic_heston": (HESTON15, "next_step", False),
    "synthetic_heston_gather": (HESTON15, "next_step", True),
    "synthetic_ruin": (HIGH_VOL, "same_step", False),
    "synthetic_ruin_gather": (HIGH_VOL, "same_step", True),
}


@pytest.mark.parametrize("variant", sorted(PICKLE))
def test_pickle_and_deepcopy_continue_identically(monkeypatch, variant):
    kwargs, mode, gather = PICKLE[variant]
    if gather:
        monkeypatch.setattr(trading_vector, "OBS_TABLE_BYTES", 0)
    vec = FinTradingVectorEnv(4, autoreset_mode=mode, **kwargs)
    assert vec.source == "real" or vec._use_table is not gather
    assert pickle.loads(pickle.dumps(vec)).num_envs == 4  # before reset too
    vec.reset(seed=6)
    rng = np.random.default_rng(6)
    for _ in range(15):  # every episode ends: clones carry pending autoresets
        vec.step(rng.choice(3, 4, p=SELL_HEAVY))
    clones = [pickle.loads(pickle.dumps(vec)), copy.deepcopy(vec)]
    for _ in range(100):  # through several autoresets: the generators' states travel too
        act = rng.choice(3, 4, p=SELL_HEAVY)
        out = vec.step(act)
        for clone in clones:
            got = clone.step(act)
            assert all(np.array_equal(x, y) for x, y in zip(out[:4], got[:4], strict=True))
            for key in STEP_INFO_KEYS:
                assert np.array_equal(out[4][key], got[4][key])
            if mode == "same_step" and "final_obs" in out[4]:
                assert np.array_equal(out[4]["_final_obs"], got[4]["_final_obs"])
    assert vec.symbols == clones[0].symbols == clones[1].symbols


# ---------------------------------------------------------------- Stable-Baselines3 adapter
@pytest.fixture(scope="module")
def sb3():
    pytest.importorskip("stable_baselines3", reason="needs finenvs[rl]")
    from finenvs.tasks.trading.sb3 import to_sb3

    return to_sb3


SB3_KW = {
    "real": {"split": "eval", "episode_length": 10},
    "ruin": HIGH_VOL,
}


def test_to_sb3_returns_a_vec_env_with_sb3_shapes(sb3):
    from stable_baselines3.common.vec_env import VecEnv

    venv = sb3(FinTradingVectorEnv(4, autoreset_mode="same_step", **SB3_KW["real"]))
    assert isinstance(venv, VecEnv) and venv.num_envs == 4
    assert venv.observation_space == FinTradingEnv(**SB3_KW["real"]).observation_space
    assert venv.action_space == gym.spaces.Discrete(3)
    venv.seed(0)
    obs = venv.reset()
    assert obs.shape == (4, venv.observation_space.shape[0]) and obs.dtype == np.float32
    obs, rewards, dones, infos = venv.step(np.array([BUY, SELL, HOLD, BUY]))
    assert obs.shape == (4, venv.observation_space.shape[0]) and obs.dtype == np.float32
    assert rewards.shape == (4,) and rewards.dtype == np.float32
    assert dones.shape == (4,) and dones.dtype == np.bool_
    assert isinstance(infos, list) and len(infos) == 4 and all(isinstance(i, dict) for i in infos)
    assert venv.get_attr("num_envs") == [4] * 4
    assert venv.env_is_wrapped(gym.Wrapper) == [False] * 4
    venv.close()


@pytest.mark.parametrize("variant", sorted(SB3_KW))
def test_sb3_terminal_observation_is_the_same_step_final_obs(sb3, variant):
    kwargs = SB3_KW[variant]
    n = 4
    venv = sb3({"num_envs": n, **kwargs})
    ref = FinTradingVectorEnv(n, autoreset_mode="same_step", **kwargs)
    venv.seed(12)
    obs = venv.reset()
    obs_r, _ = ref.reset(seed=12)
    assert np.array_equal(obs, obs_r)
    rng = np.random.default_rng(12)
    ended = terminated = 0
    for _ in range(150):
        act = rng.choice(3, n, p=SELL_HEAVY)
        obs, rewards, dones, infos = venv.step(act)
        obs_r, rew_r, term_r, trunc_r, info_r = ref.step(act)
        assert np.array_equal(obs, obs_r)
        assert np.array_equal(rewards, rew_r.astype(np.float32))
        assert np.array_equal(dones, term_r | trunc_r)
        for i in range(n):
            if dones[i]:
                assert np.array_equal(infos[i]["terminal_observation"], info_r["final_obs"][i])
                assert infos[i]["TimeLimit.truncated"] == bool(trunc_r[i] and not term_r[i])
                assert infos[i]["equity"] == info_r["final_info"]["equity"][i]
                ended += 1
                terminated += bool(term_r[i])
            else:
                assert "terminal_observation" not in infos[i] and "TimeLimit.truncated" not in infos[i]
    assert ended > 0
    if variant == "ruin":
        assert terminated > 0


def test_sb3_vec_monitor_records_episodes(sb3):
    from stable_baselines3.common.vec_env import VecMonitor

    venv = VecMonitor(sb3({"num_envs": 3, **SB3_KW["real"]}))
    venv.seed(1)
    venv.reset()
    episodes, returns = [], np.zeros(3)
    for _ in range(25):
        _, rewards, dones, infos = venv.step(np.array([BUY, SELL, HOLD]))
        returns += rewards
        for i in np.flatnonzero(dones):
            episodes.append((infos[i]["episode"], returns[i]))
            returns[i] = 0.0
    assert len(episodes) == 6  # 10-decision episodes, 25 steps, 3 sub-envs
    for episode, total in episodes:
        assert episode["l"] == 10 and episode["r"] == pytest.approx(total, abs=1e-5)


def test_sb3_ppo_learns_on_the_adapter(sb3):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    venv = VecMonitor(sb3({"num_envs": 8, "split": "eval", "episode_length": 20}))
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512 and len(model.ep_info_buffer) > 0
    obs = venv.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (8,) and set(actions.tolist()) <= {SELL, HOLD, BUY}


def test_to_sb3_converts_next_step_to_same_step(sb3):
    kwargs = {"split": "eval", "episode_length": 10, "fill": "next_open"}
    vec = FinTradingVectorEnv(3, **kwargs)
    venv = sb3(vec)
    assert venv.venv is not vec and venv.venv.autoreset_mode == AutoresetMode.SAME_STEP
    assert venv.venv.num_envs == 3 and venv.venv.env_kwargs == vec.env_kwargs
    same = FinTradingVectorEnv(3, autoreset_mode="same_step", **kwargs)
    assert sb3(same).venv is same
    assert sb3({"num_envs": 2, **kwargs}).venv.autoreset_mode == AutoresetMode.SAME_STEP


@pytest.mark.parametrize(
    "other",
    [lambda: FinTradingEnv(split="eval"), lambda: _sync(2, split="eval"), lambda: "FinTrading-v0", lambda: None],
)
def test_to_sb3_of_anything_else_raises_type_error(sb3, other):
    with pytest.raises(TypeError, match="FinTradingVectorEnv"):
        sb3(other())


# ---------------------------------------------------------------- large N
@pytest.mark.parametrize(
    "kwargs", [{"episode_length": 60}, {"source": "synthetic", "synthetic": {"model": "gbm"}, "episode_length": 100}]
)
def test_large_batch_smoke(kwargs):
    n = 1024
    vec = FinTradingVectorEnv(n, **kwargs)
    obs, _ = vec.reset(seed=0)
    assert vec.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(220):
        obs, rew, term, trunc, info = vec.step(rng.integers(0, 3, n))
        assert vec.observation_space.contains(obs)
        assert np.isfinite(rew).all() and np.isfinite(info["equity"]).all() and (info["equity"] >= 0).all()
        ended += int((term | trunc).sum())
    assert ended >= n  # every sub-env went through at least one autoreset


# ====================================================================== gym.make_vec
def test_make_vec_builds_the_batched_env_and_sync_is_still_available():
    import finenvs  # noqa: F401  (registers the envs)

    batched = gym.make_vec("FinTrading-v0", 3, split="eval")
    sync = gym.make_vec("FinTrading-v0", 3, vectorization_mode="sync", split="eval")
    assert isinstance(batched, FinTradingVectorEnv) and isinstance(sync, SyncVectorEnv)
    (obs_b, _), (obs_s, _) = batched.reset(seed=11), sync.reset(seed=11)
    assert np.array_equal(obs_b, obs_s)
    actions = np.array([BUY, SELL, HOLD])
    for _ in range(5):
        out_b, out_s = batched.step(actions), sync.step(actions)
        assert np.array_equal(out_b[0], out_s[0])
        assert np.allclose(out_b[1], out_s[1], rtol=1e-12, atol=1e-15)


def test_make_vec_passes_the_autoreset_mode_and_the_spec_stays_json():
    import finenvs  # noqa: F401

    venv = gym.make_vec("FinTrading-v0", 2, autoreset_mode="same_step", episode_length=5)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    spec = gym.spec("FinTrading-v0")
    assert spec.vector_entry_point == "finenvs.tasks.trading.vector:FinTradingVectorEnv"
    assert gym.envs.registration.EnvSpec.from_json(spec.to_json()).vector_entry_point == spec.vector_entry_point
