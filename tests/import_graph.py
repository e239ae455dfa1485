"""What the tests of the house read of the package's imports (tests/unit/test_layout.py, the
stages' deps in tests/unit/pipeline/test_deps.py): the file of a module, the project modules
one file imports, and everything a stage script loads."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import PKG, ROOT


def module_file(mod: str) -> Path | None:
    path = PKG.joinpath(*mod.split(".")[1:])
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else None


def imports(path: Path, mod: str) -> set[str]:
    """attn_forecast modules one file imports anywhere in it (with their packages)."""
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]) \
                .rstrip(".") if node.level else node.module or ""
            if base.startswith("attn_forecast"):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names
                          if module_file(f"{base}.{a.name}")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("attn_forecast")}
    parents = {".".join(m.split(".")[:i]) for m in found for i in range(1, m.count(".") + 2)}
    return {m for m in parents if module_file(m)}


def closure(script: Path) -> set[str]:
    """The src files a stage script imports, as paths relative to the project."""
    todo, seen = list(imports(script, "stages.script")), set()
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo += imports(module_file(mod), mod)
    return {str(module_file(m).relative_to(ROOT)) for m in seen}
