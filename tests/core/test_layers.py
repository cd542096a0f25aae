"""Layer 1: the import structure. The git core (gitfs/repo) knows a content filter only by
its protocols (content_filter.py): it imports nothing from Git LFS, the views, the sync
workers or FUSE, so that plain git and LFS plug into it from the mount, not the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gitfs"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in (PACKAGE / "repo").glob("*.py")))
def test_the_git_core_imports_no_layer_above_it(module):
    above = ("gitfs.lfs", "gitfs.views", "gitfs.sync", "gitfs.mount", "mfusepy", "gitfs.fuse")
    wrong = sorted(name for name in imported_modules(PACKAGE / "repo" / module) if name.startswith(above))
    assert wrong == [], f"gitfs/repo/{module} imports {wrong}"
