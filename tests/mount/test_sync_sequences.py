"""Layer 3: ordinary sequences of edits and folder renames reach the remote in one sync.

Each sequence runs in one shell, well inside one sync_timeout, so the sync worker
commits it as one batch: the change must be on the remote after that one sync, with
no "sync failed" in the log (a batch naming a file and then its renamed folder once
failed to stage, and took one failed retry per path with back-off).
"""

import os
import subprocess

import pytest

from helpers import git, wait_for

TREE = {"scripts/run.sh": "echo run\n", "scripts/lib/util.sh": "echo util\n", "a/b/c/deep.txt": "deep\n",
        "docs/x.txt": "x\n", "other/y.txt": "y\n"}


def shell(cwd, script: str) -> None:
    subprocess.run(["sh", "-euc", script], cwd=cwd, check=True)


def synced(mount) -> bool:
    """Everything in the clone's working tree is committed and on the remote. The branch is
    read before and after `git status`: a commit made between the reads leaves the tree
    clean while the branch read first, still the remote's, says nothing is ahead."""
    before = git("rev-parse", "main", cwd=mount.repo_path).strip()
    # GIT_OPTIONAL_LOCKS=0: git status must not take the clone's index.lock under GitFS's feet.
    dirty = git("status", "--porcelain", "--untracked-files=all", cwd=mount.repo_path,
                env=dict(os.environ, GIT_OPTIONAL_LOCKS="0"))
    after = git("rev-parse", "main", cwd=mount.repo_path).strip()
    return dirty == "" and before == after == mount.remote.head()


def run_sequence(remote, mount_gitfs, script: str):
    remote.commit(TREE, "the tree")
    mount = mount_gitfs(remote, sync_timeout=1)
    wait_for(lambda: (mount.current / "scripts/run.sh").exists(), message="the tree in current/")
    commits_before = len(remote.log())
    shell(mount.current, script)
    wait_for(lambda: synced(mount), timeout=20, message="the sequence on the remote")
    assert "sync failed" not in mount.log_text()
    return mount, len(remote.log()) - commits_before


SEQUENCES = {
    "edit, then rename its folder": (
        "echo 'echo more' >> scripts/run.sh; mv scripts tools",
        {"tools/run.sh": b"echo run\necho more\n", "tools/lib/util.sh": b"echo util\n"}, ["scripts/run.sh"]),
    "edit, then rename a parent two levels up": (
        "echo deeper >> a/b/c/deep.txt; mv a z",
        {"z/b/c/deep.txt": b"deep\ndeeper\n"}, ["a/b/c/deep.txt"]),
    "edit, then delete the folder": (
        "echo more >> docs/x.txt; rm -r docs",
        {}, ["docs/x.txt"]),
    "create, then rename": (
        "mkdir new; echo fresh > new/file.txt; mv new renamed",
        {"renamed/file.txt": b"fresh\n"}, ["new/file.txt"]),
    "rename a folder, then edit inside it": (
        "mv scripts tools; echo 'echo changed' >> tools/run.sh",
        {"tools/run.sh": b"echo run\necho changed\n"}, ["scripts/run.sh"]),
    "rename a folder over another": (
        "mkdir empty; echo more >> docs/x.txt; mv -T docs empty",
        {"empty/x.txt": b"x\nmore\n"}, ["docs/x.txt"]),
    "edit, then move the folder into new nested folders": (
        "echo 'echo v2' >> scripts/lib/util.sh; mkdir -p n1/n2; mv scripts n1/n2/",
        {"n1/n2/scripts/lib/util.sh": b"echo util\necho v2\n"}, ["scripts/lib/util.sh"]),
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_sequence_reaches_the_remote_in_one_sync(remote, mount_gitfs, name):
    script, present, absent = SEQUENCES[name]
    _mount, new_commits = run_sequence(remote, mount_gitfs, script)
    assert new_commits == 1
    for path, content in present.items():
        assert remote.show(path) == content
    files = remote.files()
    for path in absent:
        assert path not in files


def test_folder_synced_then_removed_and_a_file_of_its_name(remote, mount_gitfs):
    remote.commit(TREE, "the tree")
    mount = mount_gitfs(remote, sync_timeout=1)
    shell(mount.current, "mkdir kd")
    wait_for(lambda: "kd/.keep" in remote.files(), message="the folder on the remote")
    shell(mount.current, "rmdir kd; touch kd")
    wait_for(lambda: synced(mount), timeout=20, message="the file on the remote")
    assert "kd" in remote.files() and "kd/.keep" not in remote.files()
    assert "sync failed" not in mount.log_text()
