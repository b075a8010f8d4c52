"""Environment cores and their Gymnasium shells."""
