"""Layer 1: what the git core's most frequent calls leave behind in memory (tracemalloc, on a
real clone): nothing per call. pygit2 1.21 keeps a reference to every name a reference or
tree lookup is given, so a name made anew for each call is kept once per call: the fetch
worker's three lookups a second grew a mount by ~1 MB an hour."""

from __future__ import annotations

import gc
import tracemalloc

from gitfs.repo import libgit2
from gitfs.repo.merging.accept_mine import _entry_id
from gitfs.repo.repository import Repository
from helpers import clone_of

CALLS = 5000


def grown_by(call) -> int:
    """Bytes still allocated after CALLS calls (after one call to warm caches)."""
    call()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(CALLS):
            call()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def test_the_branch_and_the_remote_s_tip_read_again_and_again_keep_nothing(remote, tmp_path):
    repo = Repository(str(clone_of(remote, tmp_path / "clone")), remote.branch)
    assert grown_by(lambda: (repo.branch_tip(), repo.remote_tip(), repo.count_ahead())) < 20_000


def test_a_path_looked_up_in_a_tree_again_and_again_keeps_nothing(remote, tmp_path):
    repo = Repository(str(clone_of(remote, tmp_path / "clone")), remote.branch)
    tree = repo.git[repo.branch_tip()].tree
    assert grown_by(lambda: _entry_id(tree, "".join(["test", "ing"]))) < 20_000


def test_giving_memory_back_loads_the_c_library_once():
    assert grown_by(libgit2.release_free_memory) < 20_000
