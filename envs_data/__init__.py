"""Shipped market data of finenvs (installed as ``finenvs.envs_data``); see README.md and MANIFEST.json."""
