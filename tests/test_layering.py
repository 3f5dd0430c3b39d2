"""The package's layers import downward only (docs/architecture.md), and the seam rules of the
backend boundary hold: the engine and the prover reach backends through the protocol alone."""
from __future__ import annotations

import ast
from pathlib import Path

import pipeline

ROOT = Path(pipeline.__file__).parent

# Higher imports lower; equal ranks are siblings and import neither way.
RANKS = {
    "errors": 0, "progress": 0, "curves": 1, "formats": 2, "keycache": 2.5, "backends": 3,
    "groth16": 4, "witness": 4, "synth": 4, "setup": 4.5,
    "engine": 5, "config": 6, "server": 7, "oneshot": 7, "cli": 8, "__main__": 9, "__init__": 9,
}
NOT_CODE = {"examples"}


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported module path as 'pipeline.x.y', line) for every import of the project in ``path``."""
    package = list(path.relative_to(ROOT.parent).with_suffix("").parts)[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                names = [f"{module}.{a.name}" for a in node.names] if not node.module else [module]
            else:
                names = [node.module or ""]
            out += [(n, node.lineno) for n in names]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return [(m, line) for m, line in out if m.startswith("pipeline.")]


def _layer(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def _sources():
    return [p for p in ROOT.rglob("*.py") if _layer(p) not in NOT_CODE]


def test_every_top_level_module_has_a_layer():
    assert sorted({_layer(p) for p in _sources()} - set(RANKS)) == []


def test_layers_import_downward_only():
    back_edges = []
    for path in _sources():
        here = _layer(path)
        for module, line in _imports(path):
            there = module.split(".")[1]
            if there != here and RANKS[there] >= RANKS[here]:
                back_edges.append(f"{path.relative_to(ROOT)}:{line} ({here}) imports {module} ({there})")
    assert back_edges == []


def test_engine_and_prover_reach_backends_only_through_the_protocol():
    # The protocol, the factory, and the CUDA backend's typed settings (a dataclass the engine's
    # config carries; importing it loads no driver).
    allowed = {"pipeline.backends", "pipeline.backends.protocol", "pipeline.backends.cuda.options"}
    offending = []
    for path in _sources():
        if _layer(path) in ("engine", "groth16"):
            for module, line in _imports(path):
                if module.startswith("pipeline.backends") and not (
                        module in allowed or module.startswith("pipeline.backends.protocol")):
                    offending.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert offending == []


def test_the_helper_itself_sees_relative_and_absolute_imports():
    found = dict(_imports(ROOT / "engine" / "pipeline.py"))
    assert "pipeline.errors" in found and "pipeline.engine.stages" in found  # from ..errors, from . import
