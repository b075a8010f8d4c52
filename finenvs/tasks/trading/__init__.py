"""FinTrading-v0: one asset, a daily SELL/HOLD/BUY target position (HERCULEAN's Trading workflow)."""
