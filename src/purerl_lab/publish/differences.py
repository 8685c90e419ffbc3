"""A study's deliberate differences from its authors' code (`Study.differences` in the catalog) as a generated block
of its document: `document.header` (or `footer`) writes it when a document is made, and `purerl results --check
--mark` (`staleness.marked`) inserts or refreshes it in a document made before, so a reader sees the current list
without any number being rerun.
"""

from __future__ import annotations

from purerl_lab.publish import catalog

START, END = "<!-- differences: written from publish/catalog.py -->", "<!-- /differences -->"


def block(study_name: str) -> list[str]:
    """The block's lines (ending with a blank line), [] for a study without differences or not registered."""
    study = catalog.STUDIES.get(study_name)
    if study is None or not study.differences:
        return []
    return [START, f"**Deliberate differences from the authors' code** ({study.authors}):", "",
            *(f"- {difference}" for difference in study.differences), END, ""]


def refreshed(lines: list[str], study_name: str) -> list[str]:
    """`lines` with their block replaced by the current one where it stands (a document that opens with its
    summary gives it after its results, `document.footer`); a document without one gets it right after the title
    (and its blank line) and the summary table if it opens with one (`replication.summary`); a stale notice written
    later goes above them."""
    from purerl_lab.publish import replication  # its statistics load scipy: not while a parser is built

    at = lines.index(START) if START in lines else None
    lines = without_block(lines, START, END)
    if at is None:
        at = replication.after_summary(lines, after_title(lines))
    lines[at:at] = block(study_name)
    return lines


def without_block(lines: list[str], start: str, end: str) -> list[str]:
    """`lines` less the generated block between the marker lines `start` and `end` (and the blank line after it)."""
    lines = list(lines)
    if start in lines:
        first = lines.index(start)
        last = lines.index(end, first)
        del lines[first:last + 2 if last + 1 < len(lines) and not lines[last + 1] else last + 1]
    return lines


def after_title(lines: list[str]) -> int:
    """Where generated text opens a document: after its `# ` title and the blank line below it (0 without a title)."""
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    at = title + 1
    return at + 1 if title >= 0 and at < len(lines) and not lines[at] else at
