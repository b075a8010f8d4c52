"""FinQA-v0's question banks: analytical generators and date-locked knowledge questions."""

from finenvs.qa.items import SECTIONS, QAItem

__all__ = ["SECTIONS", "QAItem"]
