"""Gymnasium wrappers for finenvs envs (installed as ``finenvs.wrappers``).

* :class:`EpisodeMetrics`: CR/SR/MDD (standard and herculean) at episode end.
* :class:`TextInterface`: prompt observations, text actions and date-locked tools
  (the registered ``<Name>-text-v0`` variants use it).
"""

from finenvs.wrappers.metrics import EpisodeMetrics
from finenvs.wrappers.text import PrintableText, TextInterface, make_text_env

__all__ = ["EpisodeMetrics", "PrintableText", "TextInterface", "make_text_env"]
