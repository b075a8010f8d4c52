"""How much the short exit fee's base moves CR: finenvs' default (the shares bought back) beside
``short_exit_fee="equity"`` (the short's equity, HERCULEAN's reference scorer), FinTrading-v0 on the eval quarter,
5 bp, the four HERCULEAN stocks, HERCULEAN's CR (H).

    python benchmarks/short_exit_fee.py

Recorded (shipped data, seed 0; CR (H) %, default minus option in pp):
always_sell MSFT 21.5121 / 21.4906 (+0.0216), TSLA +0.0151, AAPL +0.0063, NVDA +0.0076;
rsi_mean_reversion AAPL +0.0105, NVDA +0.0113, MSFT and TSLA 0; random -0.0013..+0.0063; momentum 0 (it closes no short
in the quarter).
"""

from __future__ import annotations

import gymnasium as gym

import finenvs  # noqa: F401
from finenvs.baselines.registry import make_policy
from finenvs.wrappers import EpisodeMetrics

SYMBOLS = ("MSFT", "TSLA", "AAPL", "NVDA")
POLICIES = ("always_sell", "momentum", "rsi_mean_reversion", "random")


def herculean_cr(symbol: str, policy: str, rule: str) -> tuple[float, float]:
    """CR (H) in percent and the fees of one eval-quarter episode."""
    env = EpisodeMetrics(gym.make("FinTrading-v0", symbol=symbol, split="eval", short_exit_fee=rule))
    obs, info = env.reset(seed=0)
    act = None if policy == "always_sell" else make_policy(policy, "FinTrading-v0", env, seed=0)
    while True:
        obs, _, terminated, truncated, info = env.step(0 if act is None else act(obs, info))
        if terminated or truncated:
            break
    return 100 * info["episode_metrics"]["herculean"]["cumulative_return"], info["fees"]


def main() -> None:
    print("policy              symbol  CR(H) shares  CR(H) equity  diff pp   fees shares  fees equity")
    for policy in POLICIES:
        for symbol in SYMBOLS:
            (a, fa), (b, fb) = (herculean_cr(symbol, policy, rule) for rule in ("shares", "equity"))
            print(f"{policy:18s}  {symbol:6s}  {a:12.4f}  {b:12.4f}  {a - b:+.4f}  {fa:11.6f}  {fb:11.6f}")


if __name__ == "__main__":
    main()
