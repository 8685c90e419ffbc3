"""Verdicts that replicate: a document's paired comparisons, each made on the study's seeds and again on disjoint
fresh seeds by the same command, judged as one family, and the summary table a document opens with: a row per
question, the sentence answering the primary one, and until fresh seeds have run, the command that runs them.

The rule (`stats.replication`): a comparison is a verdict, printed in bold, only where its study seeds' test passes
and the fresh seeds' 95% CI is clear of 0 the same way. The study's test is its 95% CI for the one primary
comparison a document names in advance (the question its headline answers), and for every other comparison a
Holm-Bonferroni correction over those others (`stats.holm`), so that the many tests of one document do not make
verdicts of chance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from purerl import stats
from purerl.checks import ConfigError
from purerl_lab.publish import catalog, provenance

FRESH_SEED_START = 70_000  # a replication's first seed: past every seed a study of ours trains or evaluates on
FLOOR = 2 / 10_001  # the smallest `stats.paired_p_value` at its default 10,000 resamples
START, END = "<!-- summary: the document's answers -->", "<!-- /summary -->"
WORDS = {"better": "**yes, replicated**", "worse": "**the opposite, replicated**",
         "not replicated": "not replicated", "not resolved": "not resolved", "replication pending": "replication pending"}


@dataclass
class Comparison:
    """One paired comparison: `study` and `fresh` are `stats.paired_difference`s (fresh None until its seeds have
    run), `study_p` the study seeds' `stats.paired_p_value`, `digits` the decimals its differences are shown with
    (a matrix game's rewards per step need two); `judge` fills in the rest."""

    key: tuple
    question: str
    study: dict
    study_p: float
    fresh: dict | None = None
    primary: bool = False
    adjusted_p: float | None = field(default=None)
    verdict: str = ""
    digits: int = 1

    @classmethod
    def paired(cls, key: tuple, question: str, a, b, **fields) -> Comparison:
        """A - B on the same seeds (one value each, in the same order): its `stats.paired_difference` and
        `stats.paired_p_value`, what every study's comparison is made of."""
        return cls(key, question, stats.paired_difference(a, b), stats.paired_p_value(a, b), **fields)


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


def summary(comparisons: list[Comparison], rows: list[tuple], words: list[str] = (),
            no_fresh: str = "not run yet") -> list[str]:
    """The table a document opens with: a row per question of `rows` (keys of judged `comparisons`; the primary
    one first, the others in their order), with its effect on the study's seeds and on fresh ones (`no_fresh`
    where none have run: a study that registers no replication says why) and whether it replicated, then `words`
    (paragraphs) and the rule, between markers (`after_summary`). The comparisons that are not rows follow the
    rule in a folded table of their own, so that every comparison a sentence counts shows its numbers."""
    by_key = {c.key: c for c in comparisons}
    shown = sorted((key for key in rows if key in by_key), key=lambda key: not by_key[key].primary)
    rest = [c for c in comparisons if c.key not in shown]
    lines = [START, *_table([by_key[key] for key in shown], no_fresh), ""]
    lines += [line for paragraph in (*words, rule(comparisons)) for line in (paragraph, "")]
    if rest:
        lines += [f"<details><summary>The family's {len(rest)} comparisons not in the table above</summary>", "",
                  *_table(rest, no_fresh), "", "</details>", ""]
    return lines + [END, ""]


def _table(comparisons: list[Comparison], no_fresh: str) -> list[str]:
    lines = ["| question | study seeds: paired mean [95% CI] (n) | fresh seeds: paired mean [95% CI] (n) | verdict |",
             "|---|---|---|---|"]
    for c in comparisons:
        fresh = _cell(c.fresh, c.digits) if c.fresh is not None else no_fresh
        question = f"**Primary:** {c.question}" if c.primary else c.question
        study = _cell(c.study, c.digits, "" if c.primary else f"; Holm p {c.adjusted_p:.3g}")
        lines.append(f"| {question} | {study} | {fresh} | {WORDS[c.verdict]} |")
    return lines


def _cell(d: dict, digits: int, note: str = "") -> str:
    """A table cell: '+mean [low, high] (n; note)', or '+mean (n=N, no CI; note)' without a CI."""
    text = stats.describe_paired(d, digits)
    if not d["ci_valid"]:
        return f"{text[:-1]}{note})"
    return f"{text} ({d['n']}{note})"


def headline(comparisons: list[Comparison], question: str, said: dict[str, str]) -> str:
    """The plain sentence under a summary table: the primary comparison's `question`, named in advance, answered
    from its verdict (`said` names what each direction of its difference means, {"better": ..., "worse": ...}),
    then how many of the other comparisons replicate and how many wait for fresh seeds."""
    lines = []
    primary = next((c for c in comparisons if c.primary), None)
    if primary is not None:
        study = stats.describe_paired(primary.study, primary.digits)
        fresh = stats.describe_paired(primary.fresh, primary.digits) if primary.fresh else None
        way = said.get(primary.study["verdict"], "")
        way = way[:1].upper() + way[1:]
        both = f"{way} on both seed sets: {study} on the study's seeds, {fresh} on fresh ones."
        answer = {
            "better": both, "worse": both,
            "not replicated": f"Not on fresh seeds: the study's seeds gave {study}, the fresh ones {fresh}.",
            "not resolved": f"Not resolved: the study's seeds give {study}" + (f", the fresh ones {fresh}." if fresh
                                                                               else "."),
            "replication pending": f"{way} on the study's seeds, by {study}; not replicated yet (its fresh seeds "
                                   "have not run)."}
        lines.append(f"{question} {answer[primary.verdict]}")
    others = [c for c in comparisons if not c.primary]
    if others:
        lines.append(others_sentence(others))
    return " ".join(lines)


def others_sentence(others: list[Comparison], named: int = 4) -> str:
    """How many of the comparisons besides the primary replicate, naming them where there are at most `named`
    (more would bury the headline: the tables say which), and how many wait for fresh seeds."""
    held = [f"{c.question.rstrip('?')} ({c.verdict})" for c in others if bold(c)]
    waiting = sum(c.verdict == "replication pending" for c in others)
    return (f"Of the other {len(others)} comparisons, "
            + (f"{len(held)} replicate" if held or not waiting else "none has replicated yet")
            + (f": {'; '.join(held)}" if held and len(held) <= named else "")
            + (f"; {waiting} {'more ' if held else ''}hold on the study's seeds, Holm-corrected, and wait for their "
               "replication" if waiting else "") + ".")


FLAG, PREFIX = catalog.FRESH, catalog.FRESH_PART  # a replication: the study's command with FLAG, part PREFIX+PART


def fresh_part(part: str) -> str:
    return f"{PREFIX}{part}"


def is_fresh(part: str) -> bool:
    return part.startswith(PREFIX)


def run_folder(name: str, fresh: bool) -> str:
    """A run folder's name under the command's --runs-dir: a replication's runs go beside the study's, in
    fresh-NAME, so that neither resumes or replaces the other's."""
    return f"fresh-{name}" if fresh else name


def fresh_seeds(seeds: list[int]) -> list[int]:
    """A replication's seeds: the study's moved past every seed a study of ours trains or evaluates on; refused in
    one line where the study's do not start at 0 (`--seed` given), which would make the two sets overlap."""
    if not seeds or seeds[0] != 0:
        raise ConfigError(f"{FLAG} chooses the seeds (from PRNGKey({FRESH_SEED_START}) on): give no --seed")
    return [seed + FRESH_SEED_START for seed in seeds]


def fresh_command(study, part: str) -> str:
    """The registered command of `part`'s replication (part fresh_PART: the study's command with `--fresh-seeds`,
    which moves its seeds to FRESH_SEED_START on and its runs to RUNS_DIR/fresh-...), as a document shows it."""
    return study.commands_of(fresh_part(part))[-1].replace("{runs}", provenance.RUNS)


def pending(study, parts: list[str]) -> str:
    """The words under a summary naming the study's `parts` whose replication has not run yet, and the command
    that runs the first ("" when every one has run, or none is registered: a document outside the registry's)."""
    parts = [part for part in parts if fresh_part(part) in study.parts]
    if not parts:
        return ""
    return (f"Replication pending for {', '.join(parts)}: each part's registered command with `{FLAG}` (`purerl "
            f"results --commands {study.name}` lists them), on seeds from PRNGKey({FRESH_SEED_START}) on, disjoint "
            f"from the study's, into a part of its own ({PREFIX}PART); {parts[0]}'s: "
            f"`{fresh_command(study, parts[0])}`.")


def rule(comparisons: list[Comparison]) -> str:
    """The rule in words, with the family's size."""
    others = sum(not c.primary for c in comparisons)
    corrected = (f", each of the other {others} by its p-value (from a percentile bootstrap of the paired mean, "
                 f"10,000 resamples: none below {FLOOR:.0e}, so no Holm p below {others * FLOOR:.2g} here) below 0.05 "
                 f"after a Holm-Bonferroni correction over these {others}" if others else "")
    return (f"A verdict (bold) holds on the study's seeds and again on disjoint fresh seeds, run by the same command: "
            f"the primary comparison by its paired 95% CI{corrected}, and on the fresh seeds by a paired 95% CI "
            f"clear of 0 the same way. Anything else is "
            f"'not resolved' (no verdict on the study's seeds) or 'not replicated' (the fresh seeds do not give it).")


def after_summary(lines: list[str], at: int) -> int:
    """Where generated text that follows a document's headline goes: after its summary block, if it opens at `at`
    (after the title), else `at`."""
    if at < len(lines) and lines[at] == START and END in lines[at:]:
        end = lines.index(END, at) + 1
        return end + 1 if end < len(lines) and not lines[end] else end
    return at
