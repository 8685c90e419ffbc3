"""The package layout states the design (docs/architecture.md): layers import only the layers above them in
its table, no module-level import circle, and every subpackage says in its docstring what it holds."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "purerl"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _run_at_import(body: list[ast.stmt]):
    """The statements a module runs when imported: its body, and what sits in its `if`, `try`, `with`, `for` and
    class bodies, not what a function runs when called."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                yield from _run_at_import(children)


def _module_level_imports(path: Path, known: set[str]) -> set[str]:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = name.split(".")[:-1]  # a module's package; an __init__'s is the package it defines
    imported = set()
    for node in _run_at_import(ast.parse(path.read_text()).body):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                module = ".".join(package[:len(package) - node.level + 1] + ([module] if module else []))
            if not module.startswith("purerl"):
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                imported.add(full if full in known else module)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name.startswith("purerl")}
    return imported & known


def test_imports_run_at_import_time_are_found_wherever_they_sit(tmp_path, monkeypatch):
    """An import inside a module-level `try` or `if`, or a relative one, binds the layers as a plain one does."""
    package = tmp_path / "purerl"
    (package / "run").mkdir(parents=True)
    (package / "run" / "__init__.py").write_text("from . import files\n")
    (package / "run" / "files.py").write_text(
        "try:\n    from ..algos import ppo\nexcept ImportError:\n    pass\nif True:\n    import purerl.stats\n"
        "def later():\n    from purerl import cli\n")
    known = {"purerl.run", "purerl.run.files", "purerl.algos.ppo", "purerl.stats", "purerl.cli"}
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert _module_level_imports(package / "run" / "__init__.py", known) == {"purerl.run.files"}
    assert _module_level_imports(package / "run" / "files.py", known) == {"purerl.algos.ppo", "purerl.stats"}


def test_no_circle_among_module_level_imports():
    modules = _modules()
    graph = {name: _module_level_imports(path, set(modules)) - {name, "purerl"} for name, path in modules.items()}
    done, on_path = set(), []

    def visit(name):
        if name in on_path:
            raise AssertionError("import circle: " + " -> ".join(on_path[on_path.index(name):] + [name]))
        if name in done:
            return
        on_path.append(name)
        for imported in sorted(graph[name]):
            visit(imported)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_every_subpackage_says_what_it_holds():
    for init in PACKAGE.rglob("__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(PACKAGE)} has no docstring"


# docs/architecture.md's layer table, top to bottom: at module level a layer imports only itself and those above.
LAYERS = ["config", "stats", "runtime", "envs", "nets", "kernels", "algos", "run", "publish", "meta", "studies", "bench", "api",
          "cli"]
RANK = {"config": 0, "stats": 0, "checks": 0, **{name: rank for rank, name in enumerate(LAYERS[2:], start=1)}}


def test_module_level_imports_point_only_to_the_layers_above():
    modules = _modules()
    upward = []
    for name, path in modules.items():
        if name == "purerl" or "peer_scripts" in path.parts:
            continue
        rank = RANK[name.split(".")[1]]
        for imported in _module_level_imports(path, set(modules)) - {"purerl"}:
            allowed = name.startswith("purerl.studies.") and name.endswith(".cli") and imported == "purerl.cli.args"
            if RANK[imported.split(".")[1]] > rank and not allowed:
                upward.append(f"{name} -> {imported}")
    assert not upward, upward
