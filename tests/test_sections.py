"""The families' bench sections (finenvs.tasks.section, finenvs.tasks.market_section): each spec names one, the
market families share the market tables, and a family's own part of an episode is the same whether the episode was
played by the bench or recorded by an agent's run."""

from __future__ import annotations

import gymnasium as gym
import pytest

import finenvs  # noqa: F401
from finenvs.baselines.registry import make_policy
from finenvs.evaluation.episodes import play_episode, run_episode
from finenvs.tasks import task_of, tasks
from finenvs.tasks.hedging.bench import PairEpisode
from finenvs.tasks.market_section import EpisodePart, MarketSection, episode_part
from finenvs.tasks.report.bench import ReportEpisode
from finenvs.tasks.section import PlanSection, RecordSection, Section

SHIPPED = [t for t in tasks() if t.env_id.startswith("Fin")]


@pytest.mark.parametrize("task", SHIPPED, ids=lambda t: t.env_id)
def test_every_family_names_its_section(task):
    section = task.bench.section
    assert isinstance(section, Section) and not isinstance(section, PlanSection)  # every shipped family has its own
    # a market family (the bench's symbols choose its episodes) shows the market tables, and only it
    assert task.bench.market == isinstance(section, MarketSection)
    assert isinstance(section, (MarketSection, RecordSection))
    part = episode_part(task)
    assert issubclass(part, EpisodePart) and (part is EpisodePart or task.bench.market)
    assert (task.bench.published_block is None) == (task.bench.herculean is None)


def test_one_family_records_herculean_decision_files():
    from finenvs.evaluation.herculean_files import decisions_task, missing_day_action

    assert [t.env_id for t in tasks() if t.bench.herculean_decisions] == ["FinTrading-v0"]
    assert decisions_task() is task_of("FinTrading-v0") and missing_day_action() == "HOLD"


def _both(env_id: str, policy: str, **kwargs):
    """One episode played by the bench (run_episode) and the same one played as an agent's run records it (the
    family's episode metrics)."""
    env = gym.make(env_id, **kwargs)
    played = run_episode(env, make_policy(policy, env_id, env, seed=0), env_id=env_id, policy_name=policy, seed=0)
    env.close()
    env = gym.make(env_id, **kwargs)
    recorded = play_episode(env, make_policy(policy, env_id, env, seed=0), seed=0)["metrics"]
    env.close()
    return played, episode_part(task_of(env_id)).of_metrics(recorded)


def test_a_pairs_episode_carries_its_pair_and_spread_played_or_recorded():
    played, recorded = _both("FinHedging-v0", "zscore_coint", split="eval")
    assert isinstance(played.extra, PairEpisode) and isinstance(recorded, PairEpisode)
    assert played.extra.pair == recorded.pair and len(played.extra.pair.split("/")) == 2
    assert played.extra.spread == recorded.spread and len(played.extra.spread) == len(played.dates)
    assert played.symbol == played.extra.pair  # the reset names no symbol: the pair labels the episode
    row = played.row()
    assert row["pair"] == played.extra.pair and "spread" not in row  # the curve stays off the scorecard row


def test_a_report_episode_carries_its_quality_played_or_recorded():
    played, recorded = _both("FinReport-v0", "template_writer", split="eval", symbol="SPY", action_mode="report")
    assert isinstance(played.extra, ReportEpisode) and isinstance(recorded, ReportEpisode)
    mine, theirs = played.extra.quality, recorded.quality
    assert mine["reports"] == theirs["reports"] == played.row()["quality"]["reports"] > 0
    assert mine["score"] == pytest.approx(theirs["score"], abs=1e-9)
    assert mine["dimensions"] == pytest.approx(theirs["dimensions"], abs=1e-9)
    assert mine["invalid_ratings"] == theirs["invalid_ratings"] == 0


def test_a_rating_only_or_trading_episode_has_no_part_of_its_own():
    played, recorded = _both("FinReport-v0", "buy_and_hold", split="eval", symbol="SPY")
    assert played.extra == ReportEpisode() and recorded == ReportEpisode() and "quality" not in played.row()
    env = gym.make("FinTrading-v0", split="eval", symbol="SPY")
    trading = run_episode(env, make_policy("buy_and_hold", "FinTrading-v0", env), env_id="FinTrading-v0",
                          policy_name="buy_and_hold", seed=0)
    assert type(trading.extra) is EpisodePart and trading.symbol == "SPY"
    assert not {"pair", "quality", "spread"} & set(trading.row())
