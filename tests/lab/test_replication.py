"""Replication in the published documents (`publish/replication.py`, the value-loss study's `replicated.py`): the
summary table opens the document, and a verdict is bold only where the study's seeds, corrected for the family,
and fresh seeds agree."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from purerl import stats
from purerl_lab.publish import catalog, differences, document, replication
from purerl_lab.studies.value_loss import markdown, record as value_loss_record, replicated

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
RECORD = RESULTS / "value_loss.json"
# The documents that open with their summary and close with their differences and provenance, whose replications
# run (or wait) as parts of their own
UNREPLICATED = ("dpo", "offpolicy", "act", "mfos")
# Words a verdict is made of: none may be bold where no fresh seed has run
VERDICT = re.compile(r"\b(yes|no|not|ahead|behind|better|worse|higher|lower|opposite|replicated|reproduced|"
                     r"resolved|judged|extortionate)\b", re.IGNORECASE)


def _with_fresh(shift: dict[str, float]) -> dict:
    """The committed record with a replication of the training budget: the same rows on 'fresh' seeds, each loss's
    per-seed fitness reordered and moved by `shift[name]` (0 elsewhere), and the paired differences recomputed."""
    committed = json.loads(RECORD.read_text())
    rows = committed["all_candidates"]["training_budget"]
    order = np.random.default_rng(0).permutation(len(rows["learned"]["auc_per_seed"]))
    fresh = {"config": {**rows["config"], "seeds": [70_000, 70_255]}}
    for name, row in rows.items():
        if name == "config" or "es_seed" in name:
            continue
        values = np.asarray(row["auc_per_seed"])[order] + shift.get(name, 0.0)
        fresh[name] = {"auc": stats.summarize(values), "final": row["final"], "auc_per_seed": values.tolist()}
    committed["all_candidates"]["fresh_training_budget"] = fresh
    learned = [entry["learned"] for entry in committed["forms"].values()]
    committed["paired"] = value_loss_record.paired(committed["all_candidates"], learned)
    return committed


def test_the_document_opens_with_its_summary_and_the_differences_follow_it():
    text = markdown.render(_with_fresh({}), "value_loss")
    lines = text.split("\n")
    assert lines[0].startswith("# ") and lines[2] == replication.START
    assert lines.index(differences.START) > lines.index(replication.END)
    assert text.index("## Provenance") > text.index("## Paired differences")  # the provenance after the results
    refreshed = differences.refreshed(differences.without_block(lines, differences.START, differences.END), "value_loss")
    assert refreshed.index(differences.START) == lines.index(differences.START)  # --mark puts it back there
    assert "/root/" not in text and "/home/" not in text


def test_a_verdict_that_fresh_seeds_do_not_give_is_not_replicated_and_not_bold():
    # on the fresh seeds tuned L2 gains what `learned` led by: the primary comparison no longer holds there
    gap = float(np.mean(np.subtract(*(np.asarray(_with_fresh({})["all_candidates"]["training_budget"][n]["auc_per_seed"])
                                      for n in ("learned", "tuned_l2")))))
    record = _with_fresh({"tuned_l2": gap})
    judged = {c.key: c for c in replicated.comparisons(record)}
    primary = judged[replicated.PRIMARY]
    assert primary.study["verdict"] == "better" and primary.fresh["verdict"] == "not distinguishable"
    assert primary.verdict == "not replicated"
    text = markdown.render(record, "value_loss")
    assert "| **Primary:** `learned` against L2 with vf_coef tuned beforehand" in text and "| not replicated |" in text
    assert "**Yes: `learned`" not in text  # the old bold claim from one seed set
    paired_row = next(line for line in text.split("\n") if line.startswith("| CartPole-v1, training budget | 256 |"))
    cells = paired_row.split(" | ")
    assert cells[4] == stats.describe_paired(record["paired"]["training_budget"]["learned"]["tuned_l2"])  # not bold
    assert cells[2].startswith("**")  # learned - l2: holds on both seed sets, Holm-corrected
    assert judged[("training_budget", "learned", "l2")].verdict == "better"


def test_a_verdict_both_seed_sets_give_is_bold_and_answers_the_headline():
    record = _with_fresh({})  # the fresh seeds are the study's reordered: every study verdict replicates
    judged = replicated.comparisons(record)
    by_key = {c.key: c for c in judged}
    assert by_key[replicated.PRIMARY].verdict == "better"
    text = markdown.render(record, "value_loss")
    assert "Does the evolved value loss beat L2 with a tuned value coefficient? Yes, and it replicates." in text
    # the family correction takes verdicts a lone 95% CI would give: learned vs its scale alone (+6.2 [+0.5, +12.4])
    scale = by_key[("training_budget", "learned", "scale_only")]
    assert scale.study["verdict"] == "better" and scale.adjusted_p >= 0.05 and scale.verdict == "not resolved"
    # a setting without its replication yet waits for it
    del record["all_candidates"]["fresh_2x_budget"]
    record["paired"] = value_loss_record.paired(record["all_candidates"], ["learned", "learned_mlp"])
    waiting = {c.key: c for c in replicated.comparisons(record)}
    assert waiting[("2x_budget", "learned", "l2")].verdict == "replication pending"


def test_judge_corrects_every_comparison_but_the_primary():
    base = stats.paired_difference(np.arange(12.0) + 1.0, np.zeros(12))
    family = [replication.Comparison(("p",), "primary?", base, 0.04, base, primary=True),
              *(replication.Comparison((i,), f"q{i}?", base, 0.02, base) for i in range(3))]
    judged = replication.judge(family)
    assert judged[0].verdict == "better" and judged[0].adjusted_p is None  # the primary by its own CI
    assert all(c.adjusted_p == 0.06 and c.verdict == "not resolved" for c in judged[1:])  # 3 x 0.02, Holm
    lines = replication.summary(judged, [("p",), (0,)])
    assert lines[0] == replication.START and lines[-2] == replication.END and len(lines) == 10
    assert replication.after_summary(["# T", "", *lines, "text"], 2) == 2 + len(lines)


def _document(name: str) -> list[str]:
    """A committed document's lines less any stale notice (which opens it when a part is stale)."""
    text = (RESULTS / catalog.STUDIES[name].document).read_text()
    return differences.without_block(text.split("\n"), document.NOTICE_START, document.NOTICE_END)


@pytest.mark.parametrize("name", UNREPLICATED)
def test_the_first_screen_holds_the_summary_and_the_differences_and_provenance_follow_the_results(name):
    lines = _document(name)
    at = differences.after_title(lines)
    assert lines[at] == replication.START and lines.index(replication.END) < 45  # the table and its answer
    table = [line for line in lines[at:lines.index(replication.END)] if line.startswith("| ")]
    assert table[1].startswith("| **Primary:** ") and len(table) <= 12  # a header, then a row per question
    assert any("(the question named in advance)?" in line for line in lines[at:lines.index(replication.END)])
    footer = lines.index(document.FOOTER)
    assert footer > max(i for i, line in enumerate(lines) if line.startswith("## ") and line != document.FOOTER)
    assert footer < lines.index(differences.START) < next(i for i, line in enumerate(lines)
                                                           if line.startswith("Generated by"))
    assert differences.refreshed(lines, name) == lines  # --mark keeps the differences where the renderer put them


@pytest.mark.parametrize("name", UNREPLICATED)
def test_no_verdict_is_bold_without_its_replication(name):
    lines = _document(name)
    summary = lines[lines.index(replication.START):lines.index(replication.END)]
    rows = [line.rstrip(" |").split(" | ") for line in summary if line.startswith("| ") and "---" not in line][1:]
    for row in rows:  # a row's verdict: pending or unresolved until its fresh seeds have run
        ran = row[2] != "not run yet"
        assert ran or row[3] in ("replication pending", "not resolved"), row
        assert row[3].startswith("**") <= ran, row
    outside = [span for line in lines if line not in summary for span in re.findall(r"\*\*(.+?)\*\*", line)]
    assert outside and not [span for span in outside if VERDICT.search(span)], name  # the sections bold no verdict
    if any(row[2] == "not run yet" for row in rows):
        assert "Replication pending for " in "\n".join(summary) or name == "offpolicy"



def test_a_paired_comparison_is_the_seeds_difference_and_its_p_value_and_the_primary_row_comes_first():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, 12), rng.normal(0.0, 1.0, 12)
    c = replication.Comparison.paired(("x",), "A against B?", a, b, digits=2)
    assert c.study == stats.paired_difference(a, b) and c.study_p == stats.paired_p_value(a, b) and c.digits == 2
    judged = replication.judge([c, replication.Comparison.paired(("p",), "The primary?", b, a, primary=True)])
    table = replication.summary(judged, [("x",), ("p",)])  # the primary given last
    rows = [line for line in table if line.startswith("| ") and "?" in line]
    assert rows[0].startswith("| **Primary:** The primary?") and rows[1].startswith("| A against B?")
