"""FAB++ evaluation configs (finenvs.evaluation.eval_config) and ``finenvs bench --config``."""

from __future__ import annotations

import json

import pytest

from finenvs.evaluation.eval_config import ConfigError, PoolTask, read_config, select

TYPES = {"knowledge": ["close_price", "max_close", "xbrl_metric"], "analysis": ["npv", "fcff"],
         "options": ["strategy", "pricing", "greeks"]}
FAMILY = {"knowledge": "qa", "analysis": "qa", "options": "options"}


def _pools():
    """A pool per section: each task type 4 times, indices in plan order."""
    out, index = {}, {"qa": 0, "options": 0}
    for section, types in TYPES.items():
        fam = FAMILY[section]
        tasks = []
        for k in range(4):
            for t in types:
                tasks.append(PoolTask(fam, index[fam], f"{section}/{t}/{k}", t, section))
                index[fam] += 1
        out[section] = tasks
    return out


def _cfg(strategy="stratified", seed=42, total=None, **ds):
    datasets = [{"type": "bizfinbench", "limit": 4}, {"type": "synthetic", "limit": 3},
                {"type": "options", "limit": 3, **ds}, {"type": "gdpval", "limit": 2}]
    return {"name": "t", "datasets": datasets, "sampling": {"strategy": strategy, "seed": seed, "total_limit": total}}


def test_the_same_config_gives_the_same_tasks_and_digest():
    a, b = select(_cfg(), _pools()), select(_cfg(), _pools())
    assert [t.task_id for t in a.tasks] == [t.task_id for t in b.tasks] and a.digest == b.digest
    assert len(a.tasks) == 10 and a.skipped == [{"type": "gdpval", "reason": a.skipped[0]["reason"]}]
    other = select(_cfg(seed=7), _pools())
    assert other.digest != a.digest


def test_stratified_takes_the_task_types_in_turn():
    sel = select(_cfg(), _pools())
    knowledge = [t.task_type for t in sel.tasks if t.section == "knowledge"]
    assert sorted(knowledge[:3]) == sorted(TYPES["knowledge"]) and len(knowledge) == 4


def test_sequential_takes_the_plan_order_and_random_is_seeded():
    seq = select(_cfg("sequential"), _pools())
    assert [t.task_id for t in seq.tasks if t.section == "analysis"] == ["analysis/npv/0", "analysis/fcff/0",
                                                                        "analysis/npv/1"]
    r1, r2 = select(_cfg("random", seed=1), _pools()), select(_cfg("random", seed=2), _pools())
    assert [t.task_id for t in r1.tasks] == [t.task_id for t in select(_cfg("random", seed=1), _pools()).tasks]
    assert [t.task_id for t in r1.tasks] != [t.task_id for t in r2.tasks]


def test_task_types_filter_and_total_limit_interleaves_the_datasets():
    sel = select(_cfg(total=5, task_types=["greeks"]), _pools())
    assert [t.section for t in sel.tasks] == ["knowledge", "analysis", "options", "knowledge", "analysis"]
    assert {t.task_type for t in sel.tasks if t.section == "options"} == {"greeks"}
    assert sel.instances("options") == tuple(sorted(t.index for t in sel.tasks if t.family == "options"))


@pytest.mark.parametrize(("change", "message"), [
    ({"datasets": [{"type": "tarot", "limit": 1}]}, r"datasets\[0\]\.type 'tarot'"),
    ({"datasets": [{"type": "options", "task_types": ["astrology"]}]}, r"task_types \['astrology'\].*known"),
    ({"datasets": [{"type": "options", "limit": 0}]}, r"datasets\[0\]\.limit must be an integer"),
    ({"datasets": []}, "'datasets' must be a non-empty list"),
    ({"sampling": {"strategy": "vibes"}}, "sampling.strategy 'vibes'"),
    ({"sampling": {"seed": -1}}, "sampling.seed"),
    ({"datasets": [{"type": "crypto"}]}, "selects no task"),
])
def test_a_bad_config_is_an_error_naming_the_file_and_key(change, message):
    cfg = {**_cfg(), **change}
    with pytest.raises(ConfigError, match=message) as err:
        select(cfg, _pools(), source="cfg.yaml")
    assert str(err.value).startswith("cfg.yaml: ")


def test_read_config_reads_yaml_and_json_and_names_a_broken_file(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("name: x\ndatasets:\n  - type: options\n    limit: 2\n")
    assert read_config(y)["datasets"] == [{"type": "options", "limit": 2}]
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"datasets": [{"type": "synthetic"}]}))
    assert read_config(j)["datasets"][0]["type"] == "synthetic"
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        read_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        read_config(tmp_path / "missing.yaml")


def test_bench_with_a_config_plays_and_counts_exactly_the_selected_tasks(tmp_path):
    from finenvs.evaluation.bench import BenchConfig, run_bench

    cfg = tmp_path / "fab.yaml"
    cfg.write_text("name: sample\ndatasets:\n  - type: bizfinbench\n    limit: 2\n  - type: synthetic\n    limit: 2\n"
                   "  - type: options\n    task_types: [strategy]\n    limit: 2\n  - type: crypto\n"
                   "sampling:\n  strategy: stratified\n  seed: 3\n")
    card = run_bench(BenchConfig(out=tmp_path, run_name="r", plots=False, progress=False, html=False, eval_config=cfg))
    assert not card.errors
    record = json.loads((tmp_path / "r" / "eval_config.json").read_text())
    assert record["digest"] == card.config["eval_config_record"]["digest"] and len(record["tasks"]) == 6
    selected = {(t["family"], t["task_id"]) for t in record["tasks"]}
    played = {(r["family"], e["label"]) for r in card.agents for e in r["episodes"]}
    assert played == selected
    for name, profile in card.aggregate["profiles"].items():
        want = {"knowledge": 0, "analysis": 0, "options": 2} if "closed book" in name else \
            {"knowledge": 2, "analysis": 2, "options": 2}  # the closed-book run plays the options tasks only
        assert {k: s["tasks"] for k, s in profile["sections"].items()} == want, name
    again = run_bench(BenchConfig(out=tmp_path, run_name="r2", plots=False, progress=False, html=False,
                                  agents=False, eval_config=cfg))
    assert again.config["eval_config_record"]["digest"] == record["digest"]
    assert json.loads((tmp_path / "r2" / "eval_config.json").read_text())["tasks"] == record["tasks"]
