"""Constructor checks every market env shares (each raises ``ValueError`` naming the argument)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def shown(value: Any, limit: int = 80) -> str:
    """A bounded ``repr`` for error messages: at most ``limit`` characters, safe on a 5,000-digit integer."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value[:limit] if isinstance(value, str) else value) if not isinstance(value, (list, tuple, dict)) \
            or len(value) <= 20 else f"<a {type(value).__name__} of {len(value)} items>"
    except Exception:  # repr of a hostile object (an array of huge integers, a broken __repr__)
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
