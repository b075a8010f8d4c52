"""Adapters to the public sources ``finenvs data fetch`` reads: one small module per source.

Each adapter is the only code that touches its source's library (imported lazily, from the ``data``
extra) and returns what that library returns; :mod:`finenvs.data.fetch` turns it into user-layer
rows. With ``$FINENVS_FETCH_REPLAY`` set to a folder, an adapter reads recorded responses from it
instead of the network (the tests and the docs use this; see each adapter for its file layout).
"""

from __future__ import annotations

import os
from pathlib import Path

#: A folder of recorded responses; when set, adapters read from it and never reach the network.
REPLAY_ENV_VAR = "FINENVS_FETCH_REPLAY"


def replay_dir() -> Path | None:
    """The recorded-responses folder named by ``$FINENVS_FETCH_REPLAY``, or None (live)."""
    value = os.environ.get(REPLAY_ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


__all__ = ["REPLAY_ENV_VAR", "replay_dir"]
