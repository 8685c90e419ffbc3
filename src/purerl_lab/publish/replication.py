"""Verdicts that replicate: a document's paired comparisons, each made on the study's seeds and again on disjoint
fresh seeds by the same command, judged as one family, and the summary table a document opens with.

The rule (`stats.replication`): a comparison is a verdict, printed in bold, only where its study seeds' test passes
and the fresh seeds' 95% CI is clear of 0 the same way. The study's test is its 95% CI for the one primary
comparison a document names in advance (the question its headline answers), and for every other comparison a
Holm-Bonferroni correction over all of them (`stats.holm`), so that the many tests of one document do not make
verdicts of chance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from purerl import stats

FRESH_SEED_START = 70_000  # a replication's first seed: past every seed a study of ours trains or evaluates on
START, END = "<!-- summary: the document's answers -->", "<!-- /summary -->"
WORDS = {"better": "**yes, replicated**", "worse": "**the opposite, replicated**",
         "not replicated": "not replicated", "not resolved": "not resolved", "replication pending": "replication pending"}


@dataclass
class Comparison:
    """One paired comparison: `study` and `fresh` are `stats.paired_difference`s (fresh None until its seeds have
    run), `study_p` the study seeds' `stats.paired_p_value`; `judge` fills in the rest."""

    key: tuple
    question: str
    study: dict
    study_p: float
    fresh: dict | None = None
    primary: bool = False
    adjusted_p: float | None = field(default=None)
    verdict: str = ""


def judge(comparisons: list[Comparison]) -> list[Comparison]:
    """Each comparison's verdict: the primary one by its own 95% CI, the others Holm-corrected as one family."""
    family = {c.key: c.study_p for c in comparisons if not c.primary}
    adjusted = stats.holm(family)
    for comparison in comparisons:
        comparison.adjusted_p = None if comparison.primary else adjusted[comparison.key]
        comparison.verdict = stats.replication(comparison.study, comparison.fresh, comparison.adjusted_p)
    return comparisons


def bold(comparison: Comparison) -> bool:
    return comparison.verdict in stats.REPLICATED


def summary(comparisons: list[Comparison], rows: list[tuple], words: list[str] = ()) -> list[str]:
    """The table a document opens with: a row per question of `rows` (keys of judged `comparisons`), with its
    effect on the study's seeds and on fresh ones and whether it replicated, then `words` (paragraphs) and the rule,
    between markers (`after_summary`)."""
    by_key = {c.key: c for c in comparisons}
    lines = [START, "| question | study seeds: paired mean [95% CI] (n) | fresh seeds: paired mean [95% CI] (n) | "
             "verdict |", "|---|---|---|---|"]
    for key in rows:
        c = by_key.get(key)
        if c is None:
            continue
        fresh = "not run yet" if c.fresh is None else f"{stats.describe_paired(c.fresh)} ({c.fresh['n']})"
        question = f"**Primary:** {c.question}" if c.primary else c.question
        corrected = "" if c.primary else f"; Holm p {c.adjusted_p:.3g}"
        lines.append(f"| {question} | {stats.describe_paired(c.study)} ({c.study['n']}{corrected}) | {fresh} | "
                     f"{WORDS[c.verdict]} |")
    return lines + [""] + [line for paragraph in (*words, rule(comparisons)) for line in (paragraph, "")] + [END, ""]


def rule(comparisons: list[Comparison]) -> str:
    """The rule in words, with the family's size."""
    others = sum(not c.primary for c in comparisons)
    return (f"A verdict (bold) holds on the study's seeds and again on disjoint fresh seeds, run by the same command: "
            f"the primary comparison by its paired 95% CI, each of the other {others} by its Holm-corrected p-value "
            f"below 0.05 (a percentile bootstrap of the paired mean, the family being every comparison of this "
            f"document), and on the fresh seeds by a paired 95% CI clear of 0 the same way. Anything else is "
            f"'not resolved' (no verdict on the study's seeds) or 'not replicated' (the fresh seeds do not give it).")


def after_summary(lines: list[str], at: int) -> int:
    """Where generated text that follows a document's headline goes: after its summary block, if it opens at `at`
    (after the title), else `at`."""
    if at < len(lines) and lines[at] == START and END in lines[at:]:
        end = lines.index(END, at) + 1
        return end + 1 if end < len(lines) and not lines[end] else end
    return at
