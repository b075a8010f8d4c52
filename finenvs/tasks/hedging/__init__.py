"""FinHedging-v0: choose an ordered pair on day 1, then run it dollar-neutral daily (HERCULEAN's Hedging workflow)."""
