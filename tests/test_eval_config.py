"""FAB++ evaluation configs (finenvs.evaluation.eval_config) and ``finenvs bench --config``."""

from __future__ import annotations

import json

import pytest

from finenvs.evaluation.eval_config import STRATEGIES, ConfigError, PoolTask, read_config, select

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


#: FAB++'s Appendix C evaluation config, written by hand as the paper prints it.
APPENDIX_C = """\
name: "FAB++ Full Evaluation"
datasets:
  - type: synthetic
    path: data/synthetic_questions/questions.json
    limit: 50
  - type: bizfinbench
    path: data/BizFinBench.v2
    task_types: [event_logic_reasoning, financial_quantitative_computation]
    languages: [en]
    limit_per_task: 20
  - type: public_csv
    path: finance-agent/data/public.csv
    limit: 100
sampling:
  strategy: stratified
  total_limit: 100
  seed: 42
"""
STAND_INS = ["BizFinBench event_logic_reasoning -> finenvs filing_order, stand-in",
             "BizFinBench financial_quantitative_computation -> finenvs xbrl_metric, stand-in"]


@pytest.fixture(scope="module")
def pools():
    """The bench's pools on the eval split (FinQA-v0's 150 eval and 50 public questions; options drawn lazily)."""
    from finenvs.evaluation.eval_config import bench_pools

    return bench_pools("eval", 0)


def test_appendix_c_selects_stand_ins_public_questions_and_per_type_limits(tmp_path, pools):
    path = tmp_path / "appendix_c.yaml"
    path.write_text(APPENDIX_C)
    sel = select(read_config(path), pools, source=str(path))
    assert len(sel.tasks) == 100 and not sel.skipped
    assert [n for n in sel.notes if n.startswith("BizFinBench")] == STAND_INS
    assert sum("not read" in n for n in sel.notes) == 3  # each dataset's path: finenvs draws from its own questions
    public = [t for t in sel.tasks if t.split == "fab_public"]
    knowledge = [t for t in sel.tasks if t.section == "knowledge" and t.split is None]
    analysis = [t for t in sel.tasks if t.section == "analysis"]
    # the eval split has 12 filing_order and 12 xbrl_metric questions (under limit_per_task 20); total_limit 100
    # then takes the datasets in turn: 24 BizFinBench stand-ins, then 38 each of synthetic and public_csv
    assert sorted(t.task_type for t in knowledge) == ["filing_order"] * 12 + ["xbrl_metric"] * 12
    assert (len(analysis), len(public)) == (38, 38)
    assert all(t.section == "knowledge" and t.task_id.startswith("fab_public/") for t in public)
    assert len(set(sel.instances("qa", "fab_public"))) == 38 and len(sel.instances("qa")) == 62
    capped = {**read_config(path), "datasets": [{"type": "bizfinbench", "task_types": ["event_logic_reasoning",
                                                 "financial_quantitative_computation"], "limit_per_task": 5}]}
    for strategy in STRATEGIES:
        picked = select({**capped, "sampling": {"strategy": strategy, "seed": 1}}, pools).tasks
        assert sorted(t.task_type for t in picked) == ["filing_order"] * 5 + ["xbrl_metric"] * 5, strategy


@pytest.mark.parametrize(("dataset", "message"), [
    ({"type": "bizfinbench", "task_types": ["event_logic_reasoning", "user_sentiment_analysis"]},
     r"datasets\[0\]\.task_types \['user_sentiment_analysis'\] are not task types of 'bizfinbench'.*"
     r"BizFinBench types with a finenvs stand-in: \['event_logic_reasoning', 'financial_quantitative_computation'\]"),
    ({"type": "synthetic", "task_types": ["event_logic_reasoning"]},
     r"datasets\[0\]\.task_types \['event_logic_reasoning'\] are not task types of 'synthetic'"),
    ({"type": "bizfinbench", "languages": "en"}, r"datasets\[0\]\.languages must be a list"),
    ({"type": "bizfinbench", "limit_per_task": 0}, r"datasets\[0\]\.limit_per_task must be an integer"),
])
def test_an_unknown_bizfinbench_type_is_an_error_naming_the_file_and_key(dataset, message, pools):
    with pytest.raises(ConfigError, match=message) as err:
        select({"datasets": [dataset]}, pools, source="fab.yaml")
    assert str(err.value).startswith("fab.yaml: ")


def test_languages_without_english_skip_the_dataset_and_others_are_noted(pools):
    sel = select({"datasets": [{"type": "bizfinbench", "languages": ["cn"]},
                               {"type": "bizfinbench", "languages": ["en", "cn"], "limit": 2}]}, pools)
    assert sel.skipped == [{"type": "bizfinbench", "reason": "datasets[0].languages ['cn'] leave out en: finenvs' "
                            "questions are in English only"}]
    assert "datasets[1] (bizfinbench) languages ['cn']: finenvs' questions are in English only" in sel.notes
    assert len(sel.tasks) == 2


def test_bench_runs_the_appendix_c_config_as_printed(tmp_path, capsys):
    """``finenvs bench --config`` with Appendix C: exit 0 (it was refused with exit 2), the stand-ins said in the
    output and the scorecard, and the agents play exactly the selected tasks, the public questions included."""
    from finenvs.cli import main

    path = tmp_path / "appendix_c.yaml"
    path.write_text(APPENDIX_C)
    assert main(["bench", "--config", str(path), "--out", str(tmp_path), "--name", "c", "--no-plots",
                 "--no-html"]) == 0
    out = capsys.readouterr().out
    md = (tmp_path / "c" / "scorecard.md").read_text()
    from finenvs.text.markdown import md_text

    assert all(line in out and md_text(line) in md for line in STAND_INS)  # md: "-\\>" renders "->"
    card = json.loads((tmp_path / "c" / "scorecard.json").read_text())
    record = json.loads((tmp_path / "c" / "eval_config.json").read_text())
    selected = {(t["split"] or "eval", t["task_id"]) for t in record["tasks"]}
    played = {(r["split"], e["label"]) for r in card["agents"] for e in r["episodes"]}
    assert played == selected and len(selected) == 100
    knowledge = card["aggregate"]["profiles"]["scripted_agent"]["sections"]["knowledge"]
    assert knowledge["tasks"] == 62 and knowledge["score"] == pytest.approx(100 * 24 / 62)  # stand-ins 100, public 0
