"""Adapters to the public sources ``finenvs data fetch`` reads: one small module per source.

Each adapter is the only code that touches its source's library (imported lazily, from the ``data``
extra) and returns what that library returns; :mod:`finenvs.data.fetch` turns it into user-layer
rows. With ``$FINENVS_FETCH_REPLAY`` set to a folder, an adapter reads recorded responses from it
instead of the network (the tests and the docs use this; see each adapter for its file layout).
"""

from __future__ import annotations

import os
from pathlib import Path

from finenvs.errors import FinEnvsError

#: A folder of recorded responses; when set, adapters read from it and never reach the network.
REPLAY_ENV_VAR = "FINENVS_FETCH_REPLAY"


def replay_dir() -> Path | None:
    """The recorded-responses folder named by ``$FINENVS_FETCH_REPLAY``, or None (live)."""
    value = os.environ.get(REPLAY_ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


class SourceError(FinEnvsError):
    """The source gave nothing usable for a request (no data, no recording, the library missing)."""


def recording(source: str, kind: str, what: str, symbol: str, suffix: str) -> Path | None:
    """The recorded response ``DIR/<source>/<kind>/<symbol><suffix>`` when replaying (None: live).

    Raises:
        SourceError: Replaying, and no recording of ``symbol`` (``what``: how the message names the data).
    """
    folder = replay_dir()
    if folder is None:
        return None
    path = folder / source / kind / f"{symbol}{suffix}"
    if not path.is_file():
        raise SourceError(f"no recorded {what} for {symbol} ({path} not found)")
    return path


__all__ = ["REPLAY_ENV_VAR", "SourceError", "recording", "replay_dir"]
