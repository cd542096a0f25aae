"""A path remote moved or deleted in the middle of a push (a folder an admin moves, a network
disk that goes away): the push fails as a failure, never as a race, and leaves nothing at
the remote's old path. libgit2 writes a reference by its path, makes the folders it lacks,
and finds the pushed objects in the packs it already has open: its write after the move
made a new folder at the old path, and the owner could no longer move the remote back."""

from __future__ import annotations

import os

import pygit2
import pytest

from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.remote import path_push
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.repository import Repository
from helpers import clone_of, git

SIGNATURE = pygit2.Signature("GitFS", "gitfs@example.com")


def commit_in(repo: Repository, name: str, data: bytes) -> pygit2.Oid:
    git_repo = repo.git
    tip = repo.branch_tip()
    tree = git_repo.TreeBuilder(git_repo[tip].peel(pygit2.Tree))
    tree.insert(name, git_repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    commit = git_repo.create_commit(None, SIGNATURE, SIGNATURE, name, tree.write(), [tip])
    repo.set_branch_tip(commit, "test")
    return commit


def test_a_push_the_remote_is_moved_under_fails_and_pushes_once_it_is_back(remote, tmp_path):
    repo = Repository(str(clone_of(remote, tmp_path / "clone")), remote.branch)
    before = remote.head()
    commit = commit_in(repo, "big", os.urandom(300_000))
    away = remote.bare.with_name("away.git")

    def move_away(sent, total, size):
        if sent == total and not away.exists():
            os.rename(remote.bare, away)

    with pytest.raises(RemoteError) as failure:
        remote_ops.push(repo, remote_ops.Credentials(), progress=move_away)
    assert not isinstance(failure.value, PushRejected)  # a race would be merged and pushed at once
    assert str(failure.value) == f"push to {remote.bare} failed: the repository was moved or deleted during the push"
    assert not remote.bare.exists()
    os.rename(away, remote.bare)
    assert remote.head() == before
    assert remote_ops.push(repo, remote_ops.Credentials()) == commit
    assert remote.head() == str(commit)


def test_references_written_at_a_moved_remote_s_old_path_are_taken_away(remote, tmp_path):
    git("repack", "-adq", cwd=remote.bare)
    tip = pygit2.Oid(hex=remote.head())
    opened = pygit2.Repository(str(remote.bare))
    assert opened[tip]  # its pack is open now, as after a push's objects were copied
    away = remote.bare.with_name("away.git")
    with pytest.raises(RemoteError, match="moved or deleted during the push"):
        with path_push.one_push_at_a_time(str(remote.bare), f"refs/heads/{remote.branch}"):
            os.rename(remote.bare, away)
            opened.references.create(path_push.PUSHING_REF, tip, force=True)
            assert (remote.bare / path_push.PUSHING_REF).is_file()  # what libgit2 made at the old path
    assert not remote.bare.exists()
    os.rename(away, remote.bare)
    assert remote.head() == str(tip)


def test_a_repository_put_at_a_moved_remote_s_path_is_left_alone(remote, tmp_path):
    away = remote.bare.with_name("away.git")
    with pytest.raises(RemoteError, match="moved or deleted during the push"):
        with path_push.one_push_at_a_time(str(remote.bare), f"refs/heads/{remote.branch}"):
            os.rename(remote.bare, away)
            git("clone", "-q", "--bare", str(away), str(remote.bare))
            put_there = pygit2.Repository(str(remote.bare))
            put_there.references.create(path_push.PUSHING_REF, put_there.head.target)
    assert pygit2.Repository(str(remote.bare)).references.get(path_push.PUSHING_REF) is not None
