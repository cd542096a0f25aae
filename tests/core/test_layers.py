"""Layer 1: the import structure. The git core (gitfs/repo) knows a content filter only by
its protocols (content_filter.py): it imports nothing from Git LFS, the views, the sync
workers or FUSE, so that plain git and LFS plug into it from the mount, not the reverse.
Inside the core, its packages import one way only (LAYERS): no package imports one that
imports it, directly or through others."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gitfs"
CORE = PACKAGE / "repo"


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


CORE_MODULES = sorted(str(p.relative_to(CORE)) for p in CORE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_the_git_core_imports_no_layer_above_it(module):
    above = ("gitfs.lfs", "gitfs.views", "gitfs.sync", "gitfs.mount", "mfusepy", "gitfs.fuse")
    wrong = sorted(name for name in imported_modules(CORE / module) if name.startswith(above))
    assert wrong == [], f"gitfs/repo/{module} imports {wrong}"


# The core's layers, each with the layers it may import besides itself. SHARED is the top level
# of gitfs/repo but repository.py: what every package uses (errors, filemodes, compat, refnames,
# beneath, private_dirs, credentials, libgit2, content_filter). repository.py, the Repository put
# together from its parts in objects/ and commits/, is a layer of its own: the packages above it
# take a Repository. Those never import each other.
SHARED = "gitfs.repo"
REPOSITORY = "gitfs.repo.repository"
BELOW_THE_REPOSITORY = {SHARED, "gitfs.repo.objects", "gitfs.repo.commits"}
TAKE_A_REPOSITORY = BELOW_THE_REPOSITORY | {REPOSITORY}
LAYERS: dict[str, set[str]] = {
    SHARED: set(),
    "gitfs.repo.objects": {SHARED},
    "gitfs.repo.commits": {SHARED, "gitfs.repo.objects"},
    REPOSITORY: BELOW_THE_REPOSITORY,
    "gitfs.repo.history": TAKE_A_REPOSITORY,
    "gitfs.repo.workdir": TAKE_A_REPOSITORY,
    "gitfs.repo.merging": TAKE_A_REPOSITORY,
    "gitfs.repo.remote": TAKE_A_REPOSITORY,
    "gitfs.repo.tidying": TAKE_A_REPOSITORY,
}
CORE_PACKAGES = sorted(p.parent.name for p in CORE.glob("*/__init__.py"))


def layer_of(name: str) -> Optional[str]:
    """The layer of the core a dotted name is in (a module, or a name imported from one); None
    outside the core."""
    parts = name.split(".")
    if parts[:2] != ["gitfs", "repo"]:
        return None
    if len(parts) > 2 and parts[2] in CORE_PACKAGES:
        return f"gitfs.repo.{parts[2]}"
    return REPOSITORY if parts[2:3] == ["repository"] else SHARED


def layer_of_file(relative: str) -> str:
    """The layer of a module of the core, by its path under gitfs/repo."""
    return layer_of("gitfs.repo." + relative.removesuffix(".py").replace("/", ".")) or SHARED


def back_arrows(layer: str, imported: set[str], layers: dict[str, set[str]] = LAYERS) -> list[str]:
    """The names a module of `layer` imports from a layer it may not import."""
    return sorted(name for name in imported
                  if (target := layer_of(name)) is not None and target != layer and target not in layers[layer])


def a_cycle(layers: dict[str, set[str]]) -> list[str]:
    """A chain of layers that comes back to its start through what each may import ([] if none)."""
    done: set[str] = set()

    def visit(layer: str, chain: list[str]) -> list[str]:
        if layer in chain:
            return [*chain[chain.index(layer):], layer]
        if layer in done:
            return []
        for below in sorted(layers[layer]):
            found = visit(below, [*chain, layer])
            if found:
                return found
        done.add(layer)
        return []

    for layer in layers:
        found = visit(layer, [])
        if found:
            return found
    return []


def test_the_layers_of_the_core_have_no_back_arrow():
    assert a_cycle(LAYERS) == []
    assert all(below <= set(LAYERS) for below in LAYERS.values())


def test_every_package_of_the_core_has_its_layer():
    """A new package of gitfs/repo is given its place in LAYERS; a place names a package there is."""
    assert {layer_of_file(module) for module in CORE_MODULES} == set(LAYERS)
    packages = {f"gitfs.repo.{name}" for name in CORE_PACKAGES}
    assert packages - set(LAYERS) == set(), "packages of gitfs/repo missing from LAYERS"
    assert set(LAYERS) - packages == {SHARED, REPOSITORY}, "LAYERS names packages gitfs/repo does not have"


@pytest.mark.parametrize("module", CORE_MODULES)
def test_each_module_of_the_core_imports_only_what_its_layer_may(module):
    path = CORE / module
    relative = [node.module for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == [], f"gitfs/repo/{module} imports relatively, which these rules would not see"
    layer = layer_of_file(module)
    wrong = back_arrows(layer, imported_modules(path))
    assert wrong == [], f"gitfs/repo/{module} ({layer}) imports {wrong}, which it may not"


def test_the_layer_rule_catches_a_back_arrow(tmp_path):
    """Guard for the two checks above: a module of objects/ that takes a Repository is seen, and
    so is a back-arrow in LAYERS itself."""
    bad = tmp_path / "bad.py"
    bad.write_text("from gitfs.repo.errors import GitCoreError\n"
                   "from gitfs.repo.repository import Repository\n"
                   "from gitfs.repo.commits import staging\n")
    assert layer_of_file("objects/reading.py") == "gitfs.repo.objects"
    assert back_arrows("gitfs.repo.objects", imported_modules(bad)) == [
        "gitfs.repo.commits", "gitfs.repo.commits.staging", "gitfs.repo.repository",
        "gitfs.repo.repository.Repository"]
    assert back_arrows("gitfs.repo.merging", imported_modules(bad)) == []
    assert back_arrows(SHARED, imported_modules(bad)) == [
        "gitfs.repo.commits", "gitfs.repo.commits.staging", "gitfs.repo.repository",
        "gitfs.repo.repository.Repository"]
    looping = {**LAYERS, "gitfs.repo.objects": {SHARED, "gitfs.repo.commits"}}
    assert a_cycle(looping) == ["gitfs.repo.objects", "gitfs.repo.commits", "gitfs.repo.objects"]


# What Git LFS, a content filter, may use of the core: the protocols it is asked through and
# the FilterSource it asks (content_filter.py), and plain helpers that hold no git object.
FILTER_MAY_IMPORT = {"gitfs.repo.content_filter", "gitfs.repo.errors", "gitfs.repo.filemodes", "gitfs.repo.beneath",
                     "gitfs.repo.credentials", "gitfs.repo.refnames", "gitfs.repo.remote.server_text"}
# The Repository's ways to a pygit2 object: a handle, the index, a parsed commit or tree.
GIT_HANDLES = {"git", "walk_handle", "index", "_commit", "_tree", "blob_buffer", "blob_reader"}


def is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def core_imports(names: set[str]) -> set[str]:
    """The modules of the core among imported names: a name imported from a module is its
    module; a package is left out when a module of it is imported (`from gitfs.repo import
    beneath` gives gitfs.repo.beneath)."""
    modules = {name for name in names if layer_of(name) is not None and is_module(name)}
    return {name for name in modules if not any(other.startswith(name + ".") for other in modules)}


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
