"""Constructor checks every market env shares (each raises ``ValueError`` naming the argument)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def check_choice(name: str, value: Any, valid: Sequence[Any]) -> None:
    """``value`` must be one of ``valid``."""
    if value not in valid:
        raise ValueError(f"{name}={value!r}; valid {name}s: {list(valid)}")


def check_render_mode(render_mode: str | None, metadata: dict[str, Any]) -> None:
    """``render_mode`` must be None or one of ``metadata["render_modes"]``."""
    if render_mode is not None and render_mode not in metadata["render_modes"]:
        raise ValueError(f"render_mode={render_mode!r}; valid: None or {metadata['render_modes']}")


def fee_fraction(fee_bps: Any) -> float:
    """A fee in basis points as a fraction of notional (finite, in [0, 10000) bps)."""
    value = float(fee_bps)
    if not math.isfinite(value) or not 0.0 <= value < 10_000.0:
        raise ValueError(f"fee_bps={fee_bps!r} must be a finite number in [0, 10000)")
    return value / 10_000.0
