"""FinOptions-v0: one options strategy task, scored 0-100 by the pricing engine (FAB++'s Options section)."""
