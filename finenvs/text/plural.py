"""Counts in messages: ``counted(1, "episode")`` is ``"1 episode"``, ``counted(2, "episode")`` ``"2 episodes"``.

The one place the command line's output chooses between a noun's singular and plural, so that no line reads
"1 episodes" or "episode(s)". Low in the layer order: the data layer, the evaluation machinery and the CLI use it.
"""

from __future__ import annotations

#: Plurals the suffix rule gets wrong, for nouns the output counts.
IRREGULAR = {"analysis": "analyses", "child": "children", "person": "people", "series": "series"}


def plural(noun: str) -> str:
    """The plural of an English ``noun`` (``"entry"`` -> ``"entries"``, ``"pass"`` -> ``"passes"``); a
    several-word noun (``"agent episode"``) takes it on its last word."""
    head, _, last = noun.rpartition(" ")
    if last in IRREGULAR:
        word = IRREGULAR[last]
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        word = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def noun_for(n: int, noun: str, plural_form: str | None = None) -> str:
    """``noun`` for a count of 1, its plural for any other count (0 included): ``"0 episodes"``."""
    return noun if n == 1 else plural_form if plural_form is not None else plural(noun)


def counted(n: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 episode"``, ``"0 episodes"``, ``"12 decisions"``: the count and the noun that agrees with it
    (``plural_form`` where the rule of :func:`plural` does not fit)."""
    return f"{n} {noun_for(n, noun, plural_form)}"


__all__ = ["IRREGULAR", "counted", "noun_for", "plural"]
