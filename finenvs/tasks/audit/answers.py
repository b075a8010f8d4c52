"""HERCULEAN/FinAuditing audit answer files: read one, grade it in FinAudit-v0 under either grading, write one.

FinAuditing's evaluation reads a JSON Lines file of predictions, one object per task::

    {"id": "audit-1", "prediction": "{\"extracted_value\": \"352,583,000,000\", \"calculated_value\": ...}",
     "ground_truth": "{...}"}

``prediction`` is the model's raw reply (text, or an object); other keys (``ground_truth``, ``query``, ...) are
ignored: the truth is always finenvs' own, computed in code from the filing (:mod:`finenvs.xbrl.tasks`).

:func:`read_answers` reads such a file strictly (it is agent-authored: size, line count and JSON limits are
checked, and errors name the line and never echo more than a few dozen characters); :func:`grade_answers` plays
each answer as the reply of its task in ``FinAudit-v0`` over a HERCULEAN-format task file (``split="file"``),
under finenvs' grading or HERCULEAN's (``grading="herculean"``), so a file scores exactly as the same replies
would in a run; :func:`write_answers` writes replies in the same format (a run's answers, for FinAuditing's tools).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from finenvs.errors import DataError, read_user_text, shown
from finenvs.scoring.audit import audit_rates, classify
from finenvs.text.safe_json import JSONLimitError, loads
from finenvs.xbrl.tasks import published_truth

#: The keys of an answer line finenvs reads (others are ignored).
LINE_KEYS = ("id", "prediction")
#: Largest answers file read (bytes) and most lines accepted.
MAX_FILE_BYTES = 64 * 2**20
MAX_LINES = 100_000
#: Longest task id accepted.
MAX_ID_CHARS = 200
#: What a task of the file without an answer line is graded as: the empty reply (a structural error).
NO_ANSWER = ""


def read_answers(path: Path | str) -> dict[str, Any]:
    """Read a FinAuditing predictions file (JSON Lines): task id -> prediction (text or object), in file order.

    Raises:
        FileNotFoundError: No such file.
        DataError: Larger than :data:`MAX_FILE_BYTES`, not UTF-8, a line that is not a JSON object with
            :data:`LINE_KEYS`, an id that is not a short string, or an id given twice (the line is named).
    """
    path = Path(path)
    text = read_user_text(path, "FinAuditing predictions JSON Lines file", MAX_FILE_BYTES)
    out: dict[str, Any] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if n > MAX_LINES:
            raise DataError(f"{path}: more than {MAX_LINES} lines")
        if not line.strip():
            continue
        try:
            obj = loads(line, allow_non_finite=True)
        except JSONLimitError as exc:
            raise DataError(f"{path}:{n}: not a JSON object ({exc})") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{n}: a JSON {type(obj).__name__}, not an object with keys {list(LINE_KEYS)}")
        missing = [k for k in LINE_KEYS if k not in obj]
        if missing:
            raise DataError(f"{path}:{n}: missing key(s) {missing}; an answer line has {list(LINE_KEYS)}")
        task_id = obj["id"]
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_ID_CHARS:
            raise DataError(f"{path}:{n}: id {shown(task_id, 40)} is not a string of 1..{MAX_ID_CHARS} characters")
        if task_id in out:
            raise DataError(f"{path}:{n}: id {shown(task_id, 40)} is given twice")
        out[task_id] = obj["prediction"]
    return out


def grade_answers(tasks_file: Path | str, answers: Mapping[str, Any] | Path | str, *, grading: str = "finenvs",
                  corpus: str | None = None) -> dict[str, Any]:
    """Grade answers to a HERCULEAN-format task file: each is its task's reply in ``FinAudit-v0``.

    Args:
        tasks_file: The task file (CSV, :func:`~finenvs.xbrl.tasks.load_herculean_tasks`).
        answers: Task id -> reply, or a predictions file (:func:`read_answers`).
        grading: ``"finenvs"`` (default) or ``"herculean"`` (:mod:`finenvs.scoring.audit`).
        corpus: A folder of bundles (default: the shipped filings).

    Returns:
        ``{"grading", "n", "ACC", "SER", "EER", "CER", "rows": [{"id", "label", "reason"}, ...] (one per answerable
        task, in file order), "excluded": [{"id", "reason"}] (unanswerable tasks, not graded), "unanswered": [ids]
        (answerable tasks without an answer: graded as the empty reply, a structural error), "unknown": [ids]
        (answers to no task of the file, not graded), "gt_answer_differs": [ids] (tasks whose file ``gt_answer``
        is not exactly finenvs' truth: FinAuditing's grader, which grades against ``gt_answer``, may grade them
        otherwise)}``.
    """
    import gymnasium as gym

    if not isinstance(answers, Mapping):
        answers = read_answers(answers)
    env = gym.make("FinAudit-v0", split="file", tasks_file=str(tasks_file), corpus=corpus, grading=grading)
    base: Any = env.unwrapped  # FinAudit-v0's env
    rows, differs = [], []
    try:
        for index, instance in enumerate(base.instances):
            env.reset(seed=0, options={"index": index})
            published, truth = published_truth(instance), base.truth.truth
            if published is not None and classify({"extracted_value": published[0], "calculated_value": published[1]},
                                                  truth, "herculean").label != "pass":
                differs.append(instance.id)
            _, _, _, _, info = env.step(answers.get(instance.id, NO_ANSWER))
            rows.append({"id": instance.id, "label": info["audit"]["label"], "reason": info["audit"]["reason"]})
        excluded = list(base.excluded)
    finally:
        env.close()
    ids = {r["id"] for r in rows}
    rates = audit_rates([r["label"] for r in rows])
    return {"grading": grading, **{k: rates[k] for k in ("n", "ACC", "SER", "EER", "CER")}, "rows": rows,
            "excluded": excluded, "unanswered": [r["id"] for r in rows if r["id"] not in answers],
            "unknown": [i for i in answers if i not in ids and i not in {e["id"] for e in excluded}],
            "gt_answer_differs": differs}


def write_answers(answers: Mapping[str, Any], path: Path | str) -> Path:
    """Write task id -> reply as a FinAuditing predictions file (one ``{"id", "prediction"}`` line each).

    Raises:
        FileExistsError: ``path`` exists already.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path}: exists already")
    lines = [json.dumps({"id": task_id, "prediction": reply}, ensure_ascii=False) for task_id, reply in answers.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


__all__ = ["LINE_KEYS", "MAX_FILE_BYTES", "MAX_LINES", "NO_ANSWER", "grade_answers", "read_answers", "write_answers"]
