"""The evaluation machinery: agent runs (runner, endpoints, MCP, A2A), re-scoring, the bench and its scorecard.

Everything here iterates over the registered task specs (:mod:`finenvs.tasks`).
"""
