"""Exceptions raised by finenvs.

Every error names the thing that is wrong (file, argument, symbol, date) and,
where there is a finite valid set, lists it. All derive from built-in types so
callers can catch ``ValueError``/``KeyError``/``FileNotFoundError`` as usual.
"""

from __future__ import annotations


class FinEnvsError(Exception):
    """Base class of every finenvs error."""


class DataError(FinEnvsError, ValueError):
    """Data that breaks the documented schema or an invariant, or a corrupt file."""


class DataFileError(DataError):
    """A shipped or user data file that is missing, unreadable or fails its hash."""


class UnknownSymbolError(FinEnvsError, KeyError):
    """A symbol that the selected dataset does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0]) if self.args else ""


class WindowError(FinEnvsError, ValueError):
    """A date window that is empty, unparsable or lacks the history an env needs."""
