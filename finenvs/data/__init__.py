"""finenvs data layer: shipped catalog, user data, the date lock, splits and synthetic markets.

Typical use::

    from finenvs.data import default_catalog
    cat = default_catalog()                       # builds the DuckDB catalog on first use
    view = cat.as_of("2026-01-30")                # date-locked reads
    bars = view.prices("AAPL", lookback=20)       # nothing after 2026-01-30
"""

from finenvs.data.asof import AsOfView, LookAheadAttempt, LookAheadCounter, to_day
from finenvs.data.catalog import (
    DEFAULT_DATASET,
    Catalog,
    CatalogRebuiltWarning,
    cache_dir,
    default_catalog,
    ensure_catalog,
    load_prices,
    verify_catalog,
)
from finenvs.data.manifest import Manifest, load_manifest, shipped_data_dir, verify_data
from finenvs.data.schema import (
    PRICE_MAX,
    PRICE_MIN,
    REQUIRED_COLUMNS,
    PriceSeries,
    check_ohlcv,
    series_from_frame,
    split_like_jumps,
)
from finenvs.data.splits import DEFAULT_SPLIT, SPLITS, resolve_split, split_bounds, window_indices
from finenvs.data.synthetic import (
    BarParams,
    GBMParams,
    HestonParams,
    MertonParams,
    SyntheticSpec,
    simulate,
)

__all__ = [
    "DEFAULT_DATASET",
    "DEFAULT_SPLIT",
    "PRICE_MAX",
    "PRICE_MIN",
    "REQUIRED_COLUMNS",
    "SPLITS",
    "AsOfView",
    "BarParams",
    "Catalog",
    "CatalogRebuiltWarning",
    "GBMParams",
    "HestonParams",
    "LookAheadAttempt",
    "LookAheadCounter",
    "Manifest",
    "MertonParams",
    "PriceSeries",
    "SyntheticSpec",
    "cache_dir",
    "check_ohlcv",
    "default_catalog",
    "ensure_catalog",
    "load_manifest",
    "load_prices",
    "resolve_split",
    "series_from_frame",
    "shipped_data_dir",
    "simulate",
    "split_bounds",
    "split_like_jumps",
    "to_day",
    "verify_catalog",
    "verify_data",
    "window_indices",
]
