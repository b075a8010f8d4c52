"""The evaluation machinery: agent runs (runner, endpoints, MCP, A2A), re-scoring, the bench and its scorecard.

Everything here iterates over the registered task specs (:mod:`finenvs.tasks`). :func:`evaluate` is
``finenvs llm`` in one call::

    from finenvs.evaluation import evaluate

    score = evaluate("FinQA-v0", limit=10)                                        # offline scripted agent
    score = evaluate("FinAudit-v0", base_url="http://127.0.0.1:8080/v1", model="qwen2.5", limit=20)
    score.run_metrics(), score.efficiency(), score.reproduced

and :func:`finenvs.evaluation.bench.run_bench` with ``BenchConfig(base_url=..., model=...)`` is
``finenvs bench --base-url``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def evaluate(env_id: str, *, base_url: str | None = None, model: str | None = None, a2a_url: str | None = None,
             agent: Any = None, out: Path | str = "finenvs-runs", name: str | None = None, progress: bool = True,
             endpoint: dict[str, Any] | None = None, **config: Any) -> Any:
    """Run an agent over an env's episodes, record the run folder and re-score it (``finenvs llm`` in Python).

    Args:
        env_id: Any registered env id, base or text variant.
        base_url: An OpenAI-compatible endpoint (else ``$OPENAI_BASE_URL`` when ``model`` is given).
        model: The endpoint's model name.
        a2a_url: A remote A2A agent instead of an endpoint.
        agent: Any chat agent (``async complete(messages, tools)``) instead of the three above; with none of
            them the family's offline scripted agent runs.
        out: Parent folder of the run folder.
        name: Run folder name (default: a UTC timestamp).
        progress: Show a progress bar.
        endpoint: Further :class:`~finenvs.evaluation.endpoints.OpenAIChatAgent` arguments.
        config: :class:`~finenvs.evaluation.llm.RunConfig` fields: ``split``, ``symbols``, ``instances``,
            ``limit``, ``seeds``, ``max_tool_calls``, ``failure_rule``, ``concurrency``, ...

    Returns:
        The :class:`~finenvs.evaluation.score.RunScore` of the run (``run_dir`` is its folder).
    """
    from finenvs.evaluation.agents import make_agent
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.score import score_run

    if agent is None:
        agent = make_agent(env_id, base_url=base_url, model=model, a2a_url=a2a_url, **(endpoint or {}))
    summary = run_llm(RunConfig(env_id=env_id, **config), agent, out=out, name=name, progress=progress)
    return score_run(summary.run_dir)


__all__ = ["evaluate"]
