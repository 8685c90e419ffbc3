"""The package layout states the design (docs/architecture.md): the library (src/purerl) imports nothing of the lab
(src/purerl_lab) at any level and no import circle, function-level imports included, passes through it; within each
package, layers import only the layers above them in its table at module level, no module-level import circle; every
subpackage says in its docstring what it holds."""

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src"
PACKAGES = ("purerl", "purerl_lab")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (SOURCE / package).rglob("*.py"):
            if "peer_scripts" in path.parts:  # the peers' own scripts, run in their venvs
                continue
            parts = path.relative_to(SOURCE).with_suffix("").parts
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


def _imports(path: Path, known: set[str], at_import_only: bool = True) -> set[str]:
    """The modules of `known` that `path` imports: when it is imported, or (`at_import_only=False`) anywhere in it."""
    parts = path.relative_to(SOURCE).with_suffix("").parts
    package = list(parts[:-1])  # a module's package; an __init__'s is the package it defines
    tree = ast.parse(path.read_text())
    nodes = _run_at_import(tree.body) if at_import_only else ast.walk(tree)
    imported = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                module = ".".join(package[:len(package) - node.level + 1] + ([module] if module else []))
            for alias in node.names:
                full = f"{module}.{alias.name}"
                imported.add(full if full in known else module)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return (imported & known) - {name}


def _graph(at_import_only: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, set(modules), at_import_only) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _in_library(name: str) -> bool:
    return name.split(".")[0] == "purerl"


def test_imports_run_at_import_time_are_found_wherever_they_sit(tmp_path, monkeypatch):
    """An import inside a module-level `try` or `if`, or a relative one, binds the layers as a plain one does; a
    function's import counts only when every level is asked for."""
    package = tmp_path / "purerl"
    (package / "run").mkdir(parents=True)
    (package / "run" / "__init__.py").write_text("from . import files\n")
    (package / "run" / "files.py").write_text(
        "try:\n    from ..algos import ppo\nexcept ImportError:\n    pass\nif True:\n    import purerl.stats\n"
        "def later():\n    from purerl import cli\n")
    known = {"purerl.run", "purerl.run.files", "purerl.algos.ppo", "purerl.stats", "purerl.cli"}
    monkeypatch.setitem(globals(), "SOURCE", tmp_path)
    assert _imports(package / "run" / "__init__.py", known) == {"purerl.run.files"}
    assert _imports(package / "run" / "files.py", known) == {"purerl.algos.ppo", "purerl.stats"}
    assert _imports(package / "run" / "files.py", known, at_import_only=False) == {
        "purerl.algos.ppo", "purerl.stats", "purerl.cli"}


def test_circles_are_found():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_library_imports_nothing_of_the_lab_at_any_level():
    upward = [f"{name} -> {imported}" for name, imports in _graph(at_import_only=False).items() if _in_library(name)
              for imported in imports if not _in_library(imported)]
    assert not upward, upward


def test_no_import_circle_passes_through_the_library_function_level_imports_included():
    circles = [circle for circle in _circles(_graph(at_import_only=False)) if any(map(_in_library, circle))]
    assert not circles, circles


def test_no_circle_among_module_level_imports():
    assert not _circles(_graph(at_import_only=True))


def test_every_subpackage_says_what_it_holds():
    for package in PACKAGES:
        for init in (SOURCE / package).rglob("__init__.py"):
            assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(SOURCE)} has no docstring"


# docs/architecture.md's layer tables, top to bottom: at module level a layer imports only itself and those above.
# The lab's layers all sit below the library's; `purerl.config`, the old names' aliases, below every other layer
# of the library, which never imports it.
LIBRARY = ["checks", "stats", "runtime", "envs", "nets", "kernels", "algos", "run", "meta", "api", "cli", "config"]
LAB = ["publish", "studies", "bench", "cli"]
RANK = {**{f"purerl.{name}": 0 for name in ("checks", "stats", "version")},
        **{f"purerl.{name}": rank for rank, name in enumerate(LIBRARY[2:], start=1)},
        **{f"purerl_lab.{name}": rank for rank, name in enumerate(LAB, start=len(LIBRARY))}}


def _layer(name: str) -> int:
    return RANK[".".join(name.split(".")[:2])]


def test_module_level_imports_point_only_to_the_layers_above():
    upward = [f"{name} -> {imported}" for name, imports in _graph(at_import_only=True).items()
              if name not in PACKAGES for imported in imports - set(PACKAGES) if _layer(imported) > _layer(name)]
    assert not upward, upward


def test_the_results_pipeline_imports_no_study_and_no_command_line_at_any_level():
    """A study declares its document beside its code (`Study`, read from entry points): adding one touches no file of
    `publish/`, and a fingerprint reads a command with the study's own parser, not the pipeline's."""
    found = [f"{name} -> {imported}" for name, imports in _graph(at_import_only=False).items()
             if name.startswith("purerl_lab.publish") for imported in imports
             if imported.startswith(("purerl_lab.studies", "purerl_lab.cli", "purerl_lab.bench", "purerl.cli"))]
    assert not found, found


def test_no_module_of_the_library_imports_the_old_names_of_purerl_config():
    """`purerl.config` re-exports PPO's settings and the checks from their homes for code written against it; were a
    module of purerl to import it, PPO's module would import itself through it."""
    found = [name for name, imports in _graph(at_import_only=False).items()
             if _in_library(name) and "purerl.config" in imports]
    assert not found, found


def test_the_old_names_of_purerl_config_are_the_new_ones():
    from purerl import checks, config
    from purerl.algos import ppo, ppo_config, settings

    assert config.PPOConfig is ppo_config.PPOConfig is ppo.PPOConfig
    assert config.HyperParams is ppo_config.HyperParams and config.PRESETS is ppo_config.PRESETS
    assert config.RolloutShape is settings.RolloutShape
    assert config.apply_preset("minatar", "Breakout-MinAtar", True) == ppo_config.preset("minatar", "Breakout-MinAtar",
                                                                                         True)
    assert config.ConfigError is checks.ConfigError and config.MAX_MEMBERS == checks.MAX_MEMBERS
    assert sorted(config.__all__) == sorted(name for name in vars(config) if not name.startswith("_"))
