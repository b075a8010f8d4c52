"""Gymnasium wrappers for finenvs envs (installed as ``finenvs.wrappers``)."""

from finenvs.wrappers.metrics import EpisodeMetrics

__all__ = ["EpisodeMetrics"]
