"""FinReport-v0: a weekly eight-section report and rating, the ratings traded (HERCULEAN's Market Insights)."""
