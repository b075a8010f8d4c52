"""FinDeltaHedge-v0: hedge a short option until expiry, scored on the hedging error."""
