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


def _module_level_imports(path: Path, known: set[str]) -> set[str]:
    imported = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("purerl"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                imported.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name.startswith("purerl")}
    return imported & known


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
RANK = {"config": 0, "stats": 0, **{name: rank for rank, name in enumerate(LAYERS[2:], start=1)}}


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
