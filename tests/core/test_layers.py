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


# What Git LFS, a content filter, may use of the core: the protocols it is asked through and
# the FilterSource it asks (content_filter.py), and plain helpers that hold no git object.
FILTER_MAY_IMPORT = {"gitfs.repo.content_filter", "gitfs.repo.errors", "gitfs.repo.filemodes", "gitfs.repo.beneath",
                     "gitfs.repo.credentials", "gitfs.repo.refnames", "gitfs.repo.server_text", "gitfs.repo"}
# The Repository's ways to a pygit2 object: a handle, the index, a parsed commit or tree.
GIT_HANDLES = {"git", "walk_handle", "index", "_commit", "_tree", "blob_buffer", "blob_reader"}


def core_imports(names: set[str]) -> set[str]:
    """The modules of the core among imported names (`from gitfs.repo import beneath` gives
    gitfs.repo and gitfs.repo.beneath; a name imported from a module, its module)."""
    modules = {name for name in names if name.startswith("gitfs.repo")}
    return {name for name in modules if name.count(".") <= 2 or name.rpartition(".")[0] not in modules}


@pytest.mark.parametrize("module", sorted(p.name for p in (PACKAGE / "lfs").glob("*.py")))
def test_lfs_knows_the_git_core_only_by_the_filter_protocols(module):
    path = PACKAGE / "lfs" / module
    imported = imported_modules(path)
    assert not {name for name in imported if name == "pygit2" or name.startswith("pygit2.")}, \
        f"gitfs/lfs/{module} imports pygit2"
    wrong = sorted(core_imports(imported) - FILTER_MAY_IMPORT)
    assert wrong == [], f"gitfs/lfs/{module} imports {wrong} of the git core"
    handles = sorted({node.attr for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.Attribute) and node.attr in GIT_HANDLES})
    assert handles == [], f"gitfs/lfs/{module} reaches for {handles}"


def test_the_rule_on_lfs_catches_a_pygit2_import_and_a_handle(tmp_path):
    """Guard for the check above: a filter that imports pygit2 and reads repo.git is seen."""
    bad = tmp_path / "bad.py"
    bad.write_text("import pygit2\nfrom gitfs.repo.repository import Repository\n"
                   "def read(repo):\n    return repo.git[repo.branch_tip()]\n")
    imported = imported_modules(bad)
    assert "pygit2" in imported
    assert core_imports(imported) - FILTER_MAY_IMPORT == {"gitfs.repo.repository"}
    assert any(isinstance(node, ast.Attribute) and node.attr in GIT_HANDLES for node in ast.walk(ast.parse(
        bad.read_text())))
