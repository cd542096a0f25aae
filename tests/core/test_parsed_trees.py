"""Layer 1: trees parsed once for every thread (gitfs/repo/parsed_trees.py), as the
lookups in a commit folder use them (Repository.tree_item on FUSE threads)."""

import threading
from collections import Counter

import pygit2

from gitfs.repo.parsed_trees import ParsedTrees
from gitfs.repo.repository import Repository
from helpers import Remote, commit_with, ls_tree

FOLDERS, FILES = 60, 4


class ParseCountingRepository(Repository):
    """A real Repository that counts the trees its threads' handles parse, by oid."""

    def __init__(self, *args):
        super().__init__(*args)
        self.parsed: Counter = Counter()

    def _parse_tree(self, oid):
        self.parsed[oid] += 1
        return super()._parse_tree(oid)


def project(tmp_path) -> Remote:
    """src/ holding FOLDERS folders of FILES files each, as a project's source tree."""
    remote = Remote(tmp_path / "project")

    def prepare(work):
        for folder in range(FOLDERS):
            (work / "src" / f"m{folder:03d}").mkdir(parents=True)
            for file in range(FILES):
                (work / "src" / f"m{folder:03d}" / f"f{file}.txt").write_text(f"{folder} {file}\n")

    remote.sha = commit_with(remote, prepare, message="project")
    return remote


def test_lookups_on_many_threads_parse_each_tree_once(tmp_path):
    remote = project(tmp_path)
    repo = ParseCountingRepository(str(remote.work), remote.branch)
    commit = pygit2.Oid(hex=remote.sha)
    expected = ls_tree(remote.work, remote.sha)
    paths = sorted(expected)
    found: dict[str, str] = {}
    start = threading.Barrier(8)

    def look_up_all(offset: int) -> None:
        start.wait()
        for path in paths[offset:] + paths[:offset]:  # each thread in its own order
            found[path] = str(repo.tree_item(commit, path.split("/")).oid)

    threads = [threading.Thread(target=look_up_all, args=(number * 31,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert found == expected
    # the root, src/ and each folder: once for all eight threads and 4 x 8 lookups each
    assert len(repo.parsed) == FOLDERS + 2
    assert set(repo.parsed.values()) == {1}


def test_more_entries_than_kept_empties_the_table_and_still_answers(tmp_path):
    remote = project(tmp_path)
    handle = pygit2.Repository(str(remote.work))
    src = handle.revparse_single(f"{remote.sha}:src")
    folders = [entry.id for entry in src]
    trees = ParsedTrees(kept_entries=3 * FILES)
    parses = Counter()

    def parse(oid):
        parses[oid] += 1
        return handle[oid]

    for _ in range(2):
        for oid in folders:
            assert [entry.name for entry in trees.get(oid, parse)] == [f"f{n}.txt" for n in range(FILES)]
        assert len(trees) <= 3
    assert len(trees) >= 1
    assert sum(parses.values()) == 2 * FOLDERS  # a walk wider than the table parses again
    assert trees.get(folders[-1], parse).id == folders[-1]
    assert parses[folders[-1]] == 2  # the last one parsed is kept


def test_no_more_trees_are_kept_than_the_bound(tmp_path):
    remote = project(tmp_path)
    handle = pygit2.Repository(str(remote.work))
    folders = [entry.id for entry in handle.revparse_single(f"{remote.sha}:src")]
    trees = ParsedTrees(kept_trees=5)
    for oid in folders:
        assert trees.get(oid, handle.__getitem__).id == oid
        assert 1 <= len(trees) <= 5
