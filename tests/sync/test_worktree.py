"""Layer 2: the remote's changes reach the working tree (gitfs/repo/workdir/worktree.py) through the
clone's root descriptor, never through a link, and a path the disk cannot hold is kept."""

from __future__ import annotations

import os
import shutil

import pygit2

from gitfs.repo.repository import Repository
from gitfs.repo.workdir import worktree
from helpers import git


def test_a_remote_deletion_below_a_folder_now_a_link_never_reaches_outside(rig, tmp_path):
    rig.remote.commit({"d/f": "inside\n", "d/g": "inside\n"}, "a folder")
    rig.cycle.run()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("outside\n")
    shutil.rmtree(os.path.join(rig.path, "d"))
    os.symlink(outside, os.path.join(rig.path, "d"))  # a program in the clone made it a link
    rig.remote.commit({"d/f": None, "d/g": "changed\n"}, "their change")
    rig.cycle.run(commit=False)
    assert (outside / "f").read_text() == "outside\n"
    assert sorted(os.listdir(outside)) == ["f"]
    assert os.path.isdir(os.path.join(rig.path, "d")) and rig.read("d/g") == "changed\n"  # as the tree says


def test_a_name_too_long_for_the_disk_stays_in_the_index_and_the_commits(rig, caplog):
    name = "folder/" + "n" * 300
    rig.remote.commit({"folder/short": "short\n"}, "a folder")
    rig.cycle.run()
    bare = pygit2.Repository(str(rig.remote.bare))
    head = bare.references[f"refs/heads/{rig.remote.branch}"].target
    builder = bare.TreeBuilder(bare[head].tree)
    inner = bare.TreeBuilder(bare[head].tree["folder"])
    inner.insert(name.split("/")[1], bare.create_blob(b"long\n"), pygit2.GIT_FILEMODE_BLOB)
    builder.insert("folder", inner.write(), pygit2.GIT_FILEMODE_TREE)
    signature = pygit2.Signature("Colleague", "colleague@example.org")
    bare.create_commit(f"refs/heads/{rig.remote.branch}", signature, signature, "long", builder.write(), [head])

    rig.cycle.run(commit=False)
    assert [r.levelname for r in caplog.records if name in r.getMessage()] == ["ERROR"]
    assert name in rig.repo.skipped and name in rig.repo.index()
    assert sorted(os.listdir(os.path.join(rig.path, "folder"))) == ["short"]
    rig.write("folder/mine", "mine\n")
    rig.cycle.run()
    rig.repo.stage_everything()  # what recovery does when status cannot list the tree
    rig.repo.stage_paths(["folder", name])
    assert rig.repo.commit_index("nothing", pygit2.Signature("GitFS", "gitfs@example.com")) is None
    pushed = git("--git-dir", str(rig.remote.bare), "ls-tree", "-r", "--name-only", rig.remote.branch).split()
    assert "folder/mine" in pushed and name in pushed


def test_check_out_writes_the_tree_and_says_when_it_is_done(remote, tmp_path):
    remote.commit({"a/b/c.txt": "c\n", "run.sh": "#!/bin/sh\n"}, "files")
    path = tmp_path / "clone"
    pygit2.clone_repository(str(remote.bare), str(path / ".git"), bare=True).config["core.bare"] = False
    repo = Repository(str(path), remote.branch)
    open(path / ".git" / "gitfs-checking-out", "wb").close()
    assert worktree.check_out_unfinished(repo)
    worktree.check_out(repo)
    assert not worktree.check_out_unfinished(repo)
    assert (path / "a" / "b" / "c.txt").read_text() == "c\n"
    assert repo.changed_paths() == []
