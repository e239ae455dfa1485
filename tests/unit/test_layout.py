"""The house by role: imports point one way. No module imports itself back through others (no
circle of modules, nor of packages); no library package (data, model, training, forecasters,
evaluation, report) imports config, setup or pipeline (a library function takes plain
arguments); pipeline/ holds the stages' steps only;
every file holds one job, at most 400 lines, and no module is named for how it is wired. The
project's tooling (tools/: the docs' blocks, the worked example, the stages run in-process)
lies outside the package, which never imports it."""
from __future__ import annotations

import ast
import importlib

import pytest

from conftest import PKG, ROOT
from import_graph import imports, module_file

LIBRARY = ("data", "model", "training", "forecasters", "evaluation", "report")
# the order of the floors: a package may import those before it, never those after it
FLOORS = ("errors", "io", "cpu", "progress", "engine", "data", "model", "training", "forecasters",
          "evaluation", "report", "config", "setup", "pipeline", "search", "serve", "stage",
          "commands", "cli")


def _modules() -> list[str]:
    return [".".join(("attn_forecast", *f.relative_to(PKG).with_suffix("").parts))
            for f in sorted(PKG.rglob("*.py")) if f.name != "__init__.py"]


def _graph() -> dict[str, set[str]]:
    """Module -> the modules it imports (packages' __init__ left out: they import nothing)."""
    return {m: {i for i in imports(module_file(m), m) if i != m and module_file(i).name !=
                "__init__.py"} for m in _modules()}


def _package(mod: str) -> str:
    return mod.split(".")[1]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_circle_of_modules():
    assert _circles(_graph()) == []


def test_no_circle_of_packages_and_imports_point_down_the_floors():
    up = []
    for mod, deps in _graph().items():
        for dep in deps:
            a, b = _package(mod), _package(dep)
            if a != b and FLOORS.index(b) > FLOORS.index(a):
                up.append(f"{mod} -> {dep}")
    assert up == []


@pytest.mark.parametrize("package", LIBRARY)
def test_no_library_module_imports_config_or_pipeline(package):
    bad = [f"{m} -> {d}" for m, deps in _graph().items() if _package(m) == package
           for d in deps if _package(d) in ("config", "setup", "pipeline")]
    assert bad == []


def test_the_package_never_imports_the_projects_tools():
    """tools/ imports the package, never the other way; and none of the package's modules
    loads stages/ (what tools/stages.py does for the tests and the benchmarks)."""
    def named(node):
        if isinstance(node, ast.ImportFrom):
            return [node.module or ""] if not node.level else []
        return [a.name for a in node.names] if isinstance(node, ast.Import) else []
    bad = [f"{f.relative_to(PKG)} -> {name}" for f in PKG.rglob("*.py")
           for node in ast.walk(ast.parse(f.read_text())) for name in named(node)
           if name.split(".")[0] in ("tools", "stages", "bench", "docs")]
    assert bad == []
    assert [f for f in PKG.rglob("*.py") if "spec_from_file_location" in f.read_text()] == []


def test_the_walker_sees_an_upward_import():
    """The check can fail: the pipeline imports the config (an arrow the floors allow)."""
    assert "attn_forecast.config.load" in _graph()["attn_forecast.pipeline.prepare"] or \
        "attn_forecast.config.checks" in _graph()["attn_forecast.pipeline.prepare"]


def test_every_file_is_at_most_400_lines_and_named_for_what_it_holds():
    """The package's files, the project's tools' and the tests' alike."""
    files = [f for where in (PKG, ROOT / "tools", ROOT / "tests") for f in where.rglob("*.py")]
    long = {str(f.relative_to(ROOT)): n for f in files
            if (n := len(f.read_text().splitlines())) > 400}
    assert long == {}
    names = {f.stem for f in PKG.rglob("*.py")}
    assert not names & {"wiring", "wiring_torch", "rules", "table", "runtime", "utils", "misc",
                        "helpers"}


def test_pipeline_holds_only_the_stages_steps():
    """Each module of pipeline/ is a stage's step (named after its script in stages/), but
    competition.py, what the competition pipeline's steps share; the rest of what stages
    share (params turned into plain arguments, the training setup) is setup/'s."""
    steps = {p.stem for p in (ROOT / "stages").glob("*.py")}
    others = {p.stem for p in (PKG / "pipeline").glob("*.py")} - steps - {"__init__"}
    assert others == {"competition"}


# where a stage's step lives when it is not pipeline/<stage>.py: the search's trial
STEP_HOMES = {"competition_trial": "search.trial", "competition_peer_search": "search.peers"}


@pytest.mark.parametrize("script", sorted(p.stem for p in (ROOT / "stages").glob("*.py")))
def test_each_stage_script_launches_the_step_of_its_own_module(script):
    """stages/<name>.py is a launcher: its arguments parsed, then the ``step`` of the module
    named after it (pipeline/<name>.py), which holds the stage's whole work; it imports
    nothing else of the project but ``stage``."""
    home = f"attn_forecast.{STEP_HOMES.get(script, f'pipeline.{script}')}"
    tree = ast.parse((ROOT / "stages" / f"{script}.py").read_text())
    froms = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert froms - {"__future__", "attn_forecast"} == {home}
    assert callable(getattr(importlib.import_module(home), "step", None))
