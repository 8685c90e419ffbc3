"""The field tables of the API reference (docs/api/index.md), written from the code.

Each `<!-- fields: purerl.module.Class -->` marker is followed by a table of that config or hyperparameter
class's fields, defaults and meanings (`algos.registry.DESCRIPTIONS`, `meta.strategies.ES_DESCRIPTIONS`), up to
`<!-- end fields -->`. Run it after changing a field; `--check` exits 1 if the page is not what the code says
(tests/lib/test_api_docs.py runs it).

    .venv/bin/python scripts/api_tables.py [--check]
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api" / "index.md"
MARKED = re.compile(r"(<!-- fields: ([\w.]+) -->\n)(.*?)(<!-- end fields -->)", re.S)


def fields(cls) -> list[tuple[str, object]]:
    """(name, default) of a frozen dataclass's or a NamedTuple's fields, in order."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.default) for f in dataclasses.fields(cls)]
    return [(name, cls._field_defaults[name]) for name in cls._fields]


def table(path: str) -> str:
    from purerl.algos.registry import DESCRIPTIONS
    from purerl.meta.strategies import ES_DESCRIPTIONS

    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    meanings = ES_DESCRIPTIONS if name == "ESConfig" else DESCRIPTIONS
    rows = ["| field | default | meaning |", "|---|---|---|"]
    rows += [f"| `{field}` | `{default!r}` | {meanings[field].replace('|', '/')} |" for field, default in fields(cls)]
    return "\n".join(rows) + "\n"


def render(text: str) -> str:
    return MARKED.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)


def main(argv: list[str]) -> int:
    text = PAGE.read_text()
    wanted = render(text)
    if "--check" in argv:
        if wanted != text:
            print(f"{PAGE} is stale: run scripts/api_tables.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
