"""Layer 1: staging (Repository.stage_paths, stage_everything) on a real clone.

Each case changes the working tree as CurrentView does (the change on disk, a hidden
.keep for a new folder) and stages exactly the paths CurrentView queues for it, in one
batch, as the sync worker does after a quiet period. The commit must then hold what the
working tree holds — what `git add -A` would commit — on the first try.
"""

import os
import subprocess

import pygit2
import pytest

from gitfs.repo.repository import Repository
from helpers import COMMITTER, git, ls_tree, worktree_tree

KEEP = ".keep"


@pytest.fixture
def remote(remote):
    """The remote of conftest.py with a tree of folders (what the `clone` fixture clones)."""
    remote.commit({"scripts/run.sh": "echo run\n", "scripts/lib/util.sh": "echo util\n",
                   "a/b/c/deep.txt": "deep\n", "docs/x.txt": "x\n", "other/y.txt": "y\n"}, "tree")
    return remote


def stage_and_commit(path, paths: list[str], message="batch") -> pygit2.Oid:
    repo = Repository(str(path), "main")
    repo.stage_paths(paths)
    return repo.commit_index(message, COMMITTER)


def write(path, relative, text, mode="w"):
    full = path / relative
    full.parent.mkdir(parents=True, exist_ok=True)
    with open(full, mode) as handle:
        handle.write(text)


def mkdir(path, relative):
    (path / relative).mkdir()
    (path / relative / KEEP).touch()


def rmdir(path, relative):
    keep = path / relative / KEEP
    if keep.exists():
        keep.unlink()
    (path / relative).rmdir()


def check(path, paths):
    expected = worktree_tree(path)
    oid = stage_and_commit(path, paths)
    assert oid is not None
    assert ls_tree(path, str(oid)) == expected


def test_edit_then_rename_its_folder(clone):
    write(clone, "scripts/run.sh", "echo more\n", "a")
    os.rename(clone / "scripts", clone / "tools")
    check(clone, ["scripts/run.sh", "tools", "scripts"])


def test_edit_then_rename_a_parent_two_levels_up(clone):
    write(clone, "a/b/c/deep.txt", "deeper\n", "a")
    os.rename(clone / "a", clone / "z")
    check(clone, ["a/b/c/deep.txt", "z", "a"])


def test_edit_then_delete_the_folder(clone):
    write(clone, "docs/x.txt", "more\n", "a")
    os.unlink(clone / "docs/x.txt")
    os.rmdir(clone / "docs")
    check(clone, ["docs/x.txt", "docs/x.txt"])


def test_create_then_rename(clone):
    write(clone, "new/file.txt", "new\n")
    (clone / "new" / KEEP).touch()
    os.rename(clone / "new", clone / "renamed")
    check(clone, ["new/.keep", "new/file.txt", "renamed", "new"])


def test_rename_a_folder_then_edit_inside_it(clone):
    os.rename(clone / "scripts", clone / "tools")
    write(clone, "tools/run.sh", "echo changed\n", "a")
    check(clone, ["tools", "scripts", "tools/run.sh"])


def test_rename_a_folder_over_another(clone):
    write(clone, "docs/x.txt", "edited\n", "a")
    mkdir(clone, "empty")
    (clone / "empty" / KEEP).unlink()  # what CurrentView does to a .keep-only target
    os.rename(clone / "docs", clone / "empty")
    check(clone, ["docs/x.txt", "empty/.keep", "empty", "docs"])


def test_rename_into_a_new_nested_folder(clone):
    write(clone, "scripts/lib/util.sh", "echo v2\n", "a")
    mkdir(clone, "n1")
    mkdir(clone, "n1/n2")
    os.rename(clone / "scripts", clone / "n1/n2/scripts")
    check(clone, ["scripts/lib/util.sh", "n1/.keep", "n1/n2/.keep", "n1/n2/scripts", "scripts"])


def test_folder_committed_then_removed_and_a_file_takes_its_name(clone):
    mkdir(clone, "kd")
    stage_and_commit(clone, ["kd/.keep"])
    rmdir(clone, "kd")
    write(clone, "kd", "")
    check(clone, ["kd/.keep", "kd"])


def test_a_file_replaced_by_a_folder_of_the_same_name(clone):
    os.unlink(clone / "other/y.txt")
    mkdir(clone, "other/y.txt")
    write(clone, "other/y.txt/inside", "in\n")
    check(clone, ["other/y.txt", "other/y.txt/.keep", "other/y.txt/inside"])


def test_stage_everything_commits_the_working_tree_as_add_all(clone):
    write(clone, "scripts/run.sh", "echo more\n", "a")
    os.rename(clone / "scripts", clone / "tools")
    mkdir(clone, "fresh")
    os.symlink("tools/run.sh", clone / "link")
    write(clone, ".gitignore", "*.tmp\n")
    write(clone, "ignored.tmp", "scratch\n")
    subprocess.run(["git", "init", "-q", str(clone / "nested")], check=True)
    write(clone, "nested/inner.txt", "a clone inside the tree\n")
    git("add", "inner.txt", cwd=clone / "nested")
    git("commit", "-q", "-m", "inner", cwd=clone / "nested")
    expected = worktree_tree(clone)
    repo = Repository(str(clone), "main")
    repo.stage_everything()
    oid = repo.commit_index("everything", COMMITTER)
    committed = ls_tree(clone, str(oid))
    assert "ignored.tmp" not in committed
    assert "nested/inner.txt" in committed
    assert not any(path.startswith("nested/.git") for path in committed)
    # git add -A records the nested clone as a gitlink; GitFS commits its files, never its .git.
    del expected["nested"]
    expected["nested/inner.txt"] = git("hash-object", "nested/inner.txt", cwd=clone).strip()
    assert committed == expected


def test_stage_everything_keeps_a_tracked_file_that_is_now_ignored(clone):
    write(clone, ".gitignore", "*.txt\n")
    write(clone, "docs/x.txt", "still tracked\n", "a")
    repo = Repository(str(clone), "main")
    repo.stage_everything()
    committed = ls_tree(clone, str(repo.commit_index("everything", COMMITTER)))
    assert committed == worktree_tree(clone)
    assert "docs/x.txt" in committed


def make_long_path(root, total: int) -> str:
    """Folders of 200 bytes, then a file, `total` bytes long relative to root: made through
    directory descriptors, as CurrentView does, since the absolute path is too long for open()."""
    parts, length = [], 0
    while length + 201 < total - 10:
        parts.append("d" * 200)
        length += 201
    parts.append("f" * (total - length))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            os.mkdir(part, dir_fd=fd)
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        file_fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=fd)
        os.write(file_fd, b"deep down\n")
        os.close(file_fd)
        os.symlink("target", "link", dir_fd=fd)
    finally:
        os.close(fd)
    return "/".join(parts)


def test_paths_longer_than_path_max_with_the_clone_prefix_are_staged(clone):
    relative = make_long_path(clone, 4094 - len("/link"))
    assert len(str(clone)) + 1 + len(relative) > 4096  # too long as an absolute path
    repo = Repository(str(clone), "main")
    repo.stage_paths([relative.split("/")[0]])
    tree = repo.git[repo.commit_index("deep", COMMITTER)].tree
    entry = tree[relative]
    assert repo.git[entry.id].data == b"deep down\n" and entry.filemode == 0o100755
    link = tree[os.path.dirname(relative) + "/link"]
    assert repo.git[link.id].data == b"target" and link.filemode == 0o120000
    # The whole-tree way out handles them too, and keeps them.
    repo.stage_everything()
    assert repo.commit_index("again", COMMITTER) is None

