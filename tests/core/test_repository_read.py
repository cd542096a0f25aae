"""Layer 1: the git core's read side (gitfs/repo/repository.py) on real repositories.

The repository under test is the other person's plain clone of a bare remote
(conftest.Remote), built with the git command line.
"""

import os
import threading
import tracemalloc

import pygit2
import pytest

from gitfs.repo.errors import GitCoreError, NotADirectory, PathNotFound
from gitfs.repo.repository import (
    FILEMODE_BLOB,
    FILEMODE_COMMIT,
    FILEMODE_EXEC,
    FILEMODE_LINK,
    FILEMODE_TREE,
    Repository,
)
from helpers import Remote, commit_with, git


def write(work, name, content, mode=None):
    path = work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    if mode is not None:
        os.chmod(path, mode)


@pytest.fixture
def tree_remote(tmp_path):
    """A remote whose one commit holds files at several depths, same names in sibling folders,
    an executable, symlinks, a .keep and a submodule entry."""
    remote = Remote(tmp_path / "tree")
    submodule_sha = "1234567890abcdef1234567890abcdef12345678"

    def prepare(work):
        write(work, "top.txt", b"top\n")
        write(work, "a/file", b"contents of a/file\n")
        write(work, "b/file", b"B's own file, longer than a's\n")
        write(work, "a/deep/er/file", b"deep a\n")
        write(work, "b/deep/er/file", b"deep b!!\n")
        write(work, "run.sh", b"#!/bin/sh\necho hi\n", 0o755)
        write(work, "empty/.keep", b"")
        os.symlink("top.txt", work / "link")
        os.symlink("../file", work / "b/deep/up")

    remote.sha = commit_with(remote, prepare, message="tree", gitlinks=[("sub", submodule_sha)])
    remote.submodule_sha = submodule_sha
    return remote


@pytest.fixture
def repo(tree_remote):
    return Repository(str(tree_remote.work), tree_remote.branch)


def item(repo, path):
    return repo.tree_item(repo.branch_tip(), [p for p in path.split("/") if p])


def test_lookup_by_components_gives_each_sibling_folder_its_own_blob(repo):
    # The original looked only at the basename and served a/file for b/file.
    assert repo.blob_bytes(item(repo, "a/file").oid) == b"contents of a/file\n"
    assert repo.blob_bytes(item(repo, "b/file").oid) == b"B's own file, longer than a's\n"
    assert repo.blob_bytes(item(repo, "a/deep/er/file").oid) == b"deep a\n"
    assert repo.blob_bytes(item(repo, "b/deep/er/file").oid) == b"deep b!!\n"


def test_items_carry_mode_and_blob_size(repo):
    assert item(repo, "top.txt").mode == FILEMODE_BLOB
    assert item(repo, "top.txt").size == 4
    assert item(repo, "b/file").size == len(b"B's own file, longer than a's\n")
    assert item(repo, "run.sh").mode == FILEMODE_EXEC
    assert item(repo, "link").mode == FILEMODE_LINK
    assert item(repo, "link").size == len("top.txt")
    assert item(repo, "a").mode == FILEMODE_TREE
    assert item(repo, "").mode == FILEMODE_TREE  # the root
    assert item(repo, "sub").mode == FILEMODE_COMMIT
    assert item(repo, "sub").size == 0


def test_nested_symlink_blob_is_its_target(repo):
    found = item(repo, "b/deep/up")
    assert found.mode == FILEMODE_LINK
    assert repo.blob_bytes(found.oid) == b"../file"


def test_missing_paths_raise_path_not_found(repo):
    for path in ("nope", "a/nope", "a/deep/nope/file", "c/file", "deep/er/file"):
        with pytest.raises(PathNotFound):
            item(repo, path)


def test_a_file_in_the_middle_of_a_path_is_not_a_directory(repo):
    with pytest.raises(NotADirectory):
        item(repo, "top.txt/x")
    with pytest.raises(NotADirectory):
        item(repo, "sub/x")  # a submodule has no tree here


def test_list_tree_lists_every_entry_including_keep_and_submodule(repo):
    root = item(repo, "")
    assert sorted(repo.list_tree(root.oid)) == ["a", "b", "empty", "link", "run.sh", "sub", "top.txt"]
    assert repo.list_tree(item(repo, "empty").oid) == [".keep"]
    items = {i.name: i.mode for i in repo.list_tree_items(item(repo, "b/deep").oid)}
    assert items == {"er": FILEMODE_TREE, "up": FILEMODE_LINK}


def test_blob_bytes_of_a_tree_is_a_core_error(repo):
    with pytest.raises(GitCoreError):
        repo.blob_bytes(item(repo, "a").oid)


def test_walk_commits_newest_first_with_committer_time_and_hide(tmp_path):
    remote = Remote(tmp_path / "walk")
    dates = ["2021-03-01T10:00:00+0000", "2021-03-02T10:00:00+0000", "2021-03-05T10:00:00+0000"]
    shas = [remote.commit({"f": str(i)}, f"c{i}", date=date) for i, date in enumerate(dates)]
    repo = Repository(str(remote.work), remote.branch)
    tip = repo.branch_tip()
    assert str(tip) == shas[-1]
    walked = list(repo.walk_commits(tip))
    assert [str(oid) for oid, _ in walked] == shas[::-1]
    times = [int(git("log", "-1", "--format=%ct", sha, cwd=remote.work)) for sha in shas]
    assert [t for _, t in walked] == times[::-1]
    assert repo.commit_time(tip) == times[-1]
    hidden = list(repo.walk_commits(tip, pygit2.Oid(hex=shas[0])))
    assert [str(oid) for oid, _ in hidden] == shas[:0:-1]


def test_same_second_commits_walk_children_first(tmp_path):
    remote = Remote(tmp_path / "same")
    date = "2021-03-01T10:00:00+0000"
    shas = [remote.commit({"f": str(i)}, f"c{i}", date=date) for i in range(5)]
    repo = Repository(str(remote.work), remote.branch)
    assert [str(oid) for oid, _ in repo.walk_commits(repo.branch_tip())] == shas[::-1]


def test_is_ancestor(tmp_path):
    remote = Remote(tmp_path / "anc")
    first = pygit2.Oid(hex=remote.commit({"f": "1"}))
    second = pygit2.Oid(hex=remote.commit({"f": "2"}))
    repo = Repository(str(remote.work), remote.branch)
    assert repo.is_ancestor(first, second)
    assert repo.is_ancestor(second, second)
    assert not repo.is_ancestor(second, first)


def test_branch_tip_of_a_missing_branch_is_none(repo):
    assert Repository(repo.path, "no-such-branch").branch_tip() is None


def test_each_thread_gets_its_own_pygit2_handle(repo):
    handles = []
    thread = threading.Thread(target=lambda: handles.append(repo.git))
    thread.start()
    thread.join()
    assert repo.git is repo.git
    assert handles[0] is not repo.git


def test_looking_names_up_keeps_nothing_per_lookup(repo, tree_remote):
    # Every FUSE call splits its path into new strings; pygit2 1.21 keeps a reference to
    # the name a tree is indexed with, for good.
    commit = pygit2.Oid(hex=tree_remote.sha)
    path = "/a/deep/er/file"
    want = repo.tree_item(commit, path.split("/")[1:])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20_000):
            assert repo.tree_item(commit, path.split("/")[1:], sized=False).oid == want.oid
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000  # four names kept at each of 20,000 lookups: ~4.5 MB
