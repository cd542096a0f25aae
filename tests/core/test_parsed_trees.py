"""Layer 1: trees parsed once for every thread (gitfs/repo/objects/parsed_trees.py), as the
lookups in a commit folder use them (Repository.tree_item on FUSE threads)."""

import threading
from array import array
from collections import Counter

import pygit2

from gitfs.repo.objects.parsed_trees import ParsedTrees, TreeSizes
from gitfs.repo.repository import Repository
from helpers import Remote, commit_with, ls_tree

FOLDERS, FILES = 60, 4


class LookupCountingRepository(Repository):
    """A real Repository that counts, by oid, the trees its threads' handles parse and the
    blobs whose size it looks up."""

    def __init__(self, *args):
        super().__init__(*args)
        self.parsed: Counter = Counter()
        self.measured: Counter = Counter()

    def _parse_tree(self, oid):
        self.parsed[oid] += 1
        return super()._parse_tree(oid)

    def blob_size(self, oid):
        self.measured[oid] += 1
        return super().blob_size(oid)


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
    repo = LookupCountingRepository(str(remote.work), remote.branch)
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
    # the root, src/ and each folder: once for all eight threads and 4 x 8 lookups each, but
    # where two threads missed the same tree at the same moment (the table holds no lock
    # while a tree is parsed): both parse it, which a loaded machine (other tests beside this
    # one) makes happen now and then. A copy per thread would be 8 parses of each tree.
    assert len(repo.parsed) == FOLDERS + 2
    assert sum(repo.parsed.values()) < 2 * (FOLDERS + 2), repo.parsed


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


def test_a_folder_listed_again_keeps_its_sizes(tmp_path):
    # A libfuse without kernel-kept listings lists every folder again at each grep -r:
    # the second listing must not look up every blob's size again.
    remote = project(tmp_path)
    repo = LookupCountingRepository(str(remote.work), remote.branch)
    commit = pygit2.Oid(hex=remote.sha)
    folder = repo.tree_item(commit, ["src", "m007"])
    first = repo.list_tree_items(folder.oid, sizes=True)
    again = repo.list_tree_items(folder.oid, sizes=True)
    assert first == again
    assert [(item.name, item.size) for item in again] == [(f"f{n}.txt", len(f"7 {n}\n")) for n in range(FILES)]
    assert sum(repo.measured.values()) == FILES
    root = repo.list_tree_items(repo.root_tree(commit), sizes=True)
    assert [(item.name, item.size) for item in root] == [("src", 0)]  # a folder has no size


def test_sizes_are_kept_for_more_folders_than_parsed_trees(tmp_path):
    # A 100,000-file project has 5,000 folders: more than ParsedTrees keeps trees, and
    # each grep -r lists them all again.
    remote = project(tmp_path)
    repo = LookupCountingRepository(str(remote.work), remote.branch)
    repo._trees = ParsedTrees(kept_trees=4)
    commit = pygit2.Oid(hex=remote.sha)
    folders = [repo.tree_item(commit, ["src", f"m{folder:03d}"]).oid for folder in range(FOLDERS)]
    for _ in range(2):
        for folder, oid in enumerate(folders):
            want = [len(f"{folder} {file}\n") for file in range(FILES)]
            assert [item.size for item in repo.list_tree_items(oid, sizes=True)] == want
    assert sum(repo.measured.values()) == FOLDERS * FILES


def test_sizes_are_measured_again_once_the_table_empties(tmp_path):
    remote = project(tmp_path)
    handle = pygit2.Repository(str(remote.work))
    folders = [entry.id for entry in handle.revparse_single(f"{remote.sha}:src")]
    sizes = TreeSizes(kept_trees=2)
    measures = Counter()

    def measure(oid):
        measures[oid] += 1
        return array("q", [len(handle[oid])])

    for oid in folders[:3]:
        assert list(sizes.get(oid, measure)) == [FILES]
        assert 1 <= len(sizes) <= 2
    assert list(sizes.get(folders[2], measure)) == [FILES]
    assert measures[folders[2]] == 1  # the last one measured is kept
    assert list(sizes.get(folders[0], measure)) == [FILES]
    assert measures[folders[0]] == 2
    bounded = TreeSizes(kept_sizes=2 * FILES)
    for oid in folders:
        bounded.get(oid, lambda oid: array("q", [0] * len(handle[oid])))
        assert len(bounded) <= 2


def test_opening_a_file_of_a_commit_reads_its_size_only_when_it_is_read(tmp_path):
    remote = project(tmp_path)
    repo = LookupCountingRepository(str(remote.work), remote.branch)
    commit = pygit2.Oid(hex=remote.sha)
    item = repo.tree_item(commit, ["src", "m003", "f1.txt"], sized=False)
    reader = repo.open_content(item.oid, item.pointer, "src/m003/f1.txt")
    assert not repo.measured
    assert bytes(reader.read(100, 0)) == b"3 1\n"
    reader.close()
    assert repo.tree_item(commit, ["src", "m003", "f1.txt"]).size == 4
