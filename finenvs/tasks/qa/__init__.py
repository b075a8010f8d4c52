"""FinQA-v0: one finance question (FAB++'s Knowledge and Analysis sections), scored per part by code."""
