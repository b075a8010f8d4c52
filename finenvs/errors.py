"""Exceptions raised by finenvs.

Every error names the thing that is wrong (file, argument, symbol, date) and,
where there is a finite valid set, lists it. All derive from built-in types so
callers can catch ``ValueError``/``KeyError``/``FileNotFoundError`` as usual.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any


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


def shown(value: Any, limit: int = 80) -> str:
    """A bounded picture of ``value`` for an error message: at most ``limit`` characters.

    :mod:`reprlib` keeps containers to a few levels and items; an integer too long to print (Python refuses
    over 4,300 digits) is named by its size, and a ``repr`` that fails names the type only.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<an integer of {value.bit_length()} bits>"
    bounded = reprlib.Repr()
    bounded.maxlevel, bounded.maxstring, bounded.maxother = 3, max(limit, 10), max(limit, 10)
    bounded.maxlist = bounded.maxtuple = bounded.maxdict = bounded.maxset = 10
    try:
        text = bounded.repr(value)
    except Exception:  # a huge integer inside a container, a broken __repr__
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."



def user_file(path: Any, what: str, *, allow_empty: bool = False) -> Path:
    """``path`` as a :class:`~pathlib.Path` to a user's data file that exists, is a file and (unless
    ``allow_empty``) holds at least one byte; else one error naming the file and what it should be (``what``).

    Raises:
        DataFileError: No such file, a directory (or another non-file), or an empty (0-byte) file.
    """
    path = Path(path)
    if path.is_dir():
        raise DataFileError(f"{path}: is a directory, not a {what}; give the path of a file in it")
    if not path.exists():
        raise DataFileError(f"{path}: {what} not found")
    if not path.is_file():
        raise DataFileError(f"{path}: not a regular file; give a {what}")
    if not allow_empty and path.stat().st_size == 0:
        raise DataFileError(f"{path}: empty file (0 bytes); a {what} needs at least a header line and one row")
    return path


def read_user_text(path: Any, what: str, max_bytes: int) -> str:
    """A user's text file, read at most ``max_bytes`` (a byte-order mark dropped).

    Raises:
        FileNotFoundError: No such file (the message says what the file should be: ``what``).
        DataError: Larger than ``max_bytes``, or not UTF-8 (the first bad byte is named).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (a {what})")
    path = user_file(path, what, allow_empty=True)  # a directory is named as one; an empty file is the reader's
    with open(path, "rb") as fh:
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise DataError(f"{path}: larger than {max_bytes} bytes; not a {what}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
