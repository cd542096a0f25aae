"""Pushes of several clones to one path remote at once (mounts of one machine, or of a
team sharing a bare repository on a network disk), GitFS's and a colleague's git: libgit2's
local transport checks that the push is a fast-forward when it connects and writes the
branch by force afterwards, so two pushes at once could each be told they succeeded while
the second overwrote the first. Every push said to be taken must be in the remote's
history at the end."""

from __future__ import annotations

import multiprocessing
import os

import pygit2
import pytest

from gitfs.repo.errors import PushRejected
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.repository import Repository
from helpers import clone_of

PUSHES = 40
SIGNATURE = pygit2.Signature("GitFS", "gitfs@example.com")


def pusher(path: str, branch: str, name: str, results) -> None:
    repo = Repository(path, branch)
    taken = []
    for number in range(PUSHES):
        tip = remote_ops.fetch(repo, remote_ops.Credentials())
        git = repo.git
        tree = git.TreeBuilder(git[tip].peel(pygit2.Tree))
        tree.insert(f"{name}-{number}.txt", git.create_blob(f"{name} {number}\n".encode()), pygit2.GIT_FILEMODE_BLOB)
        commit = git.create_commit(None, SIGNATURE, SIGNATURE, f"{name} {number}", tree.write(), [tip])
        repo.set_branch_tip(commit, "test")
        try:
            taken.append(str(remote_ops.push(repo, remote_ops.Credentials())))
        except PushRejected:
            continue  # the other one was first: told so, as a race
        except Exception as error:  # noqa: BLE001 - said to the test, which fails on it
            results.put((name, f"{type(error).__name__}: {error}"))
            return
    results.put((name, taken))


def test_pushes_at_once_to_a_path_remote_never_overwrite_each_other(remote, tmp_path):
    clones = [clone_of(remote, tmp_path / f"clone{number}") for number in range(3)]
    results: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    workers = [multiprocessing.get_context("fork").Process(target=pusher, args=(str(path), remote.branch,
                                                                               f"c{number}", results))
               for number, path in enumerate(clones)]
    for worker in workers:
        worker.start()
    taken = dict(results.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    failed = {name: said for name, said in taken.items() if isinstance(said, str)}
    assert not failed, failed
    server = pygit2.Repository(str(remote.bare))
    final = server.references[f"refs/heads/{remote.branch}"].target
    in_history = {str(commit.id) for commit in server.walk(final)}
    lost = {name: [oid for oid in oids if oid not in in_history] for name, oids in taken.items()}
    assert sum(len(oids) for oids in taken.values()) > PUSHES  # pushes did meet
    assert not any(lost.values()), lost
    assert not os.path.exists(os.path.join(remote.bare, "refs", "heads", f"{remote.branch}.lock"))


def test_a_colleague_s_git_push_during_the_mount_s_push_is_never_overwritten(remote, tmp_path):
    """A colleague pushes with git (receive-pack, not GitFS's lock) while GitFS's push to the
    path remote is under way, after it looked at the remote's branch: GitFS must be told
    the branch moved, never take the push and drop the colleague's commit."""
    remote.commit({"theirs.txt": "line 1\n"}, "first")
    repo = Repository(str(clone_of(remote, tmp_path / "clone")), remote.branch)
    remote_ops.fetch(repo, remote_ops.Credentials())
    git = repo.git
    tip = repo.remote_tip()
    tree = git.TreeBuilder(git[tip].peel(pygit2.Tree))
    tree.insert("mine.txt", git.create_blob(b"mine\n"), pygit2.GIT_FILEMODE_BLOB)
    repo.set_branch_tip(git.create_commit(None, SIGNATURE, SIGNATURE, "mine", tree.write(), [tip]), "test")
    colleague: list[str] = []

    def colleague_pushes(*_figures) -> None:
        if not colleague:
            colleague.append(remote.commit({"theirs.txt": "line 1\nline 2\n"}, "theirs"))

    with pytest.raises(PushRejected):
        remote_ops.push(repo, remote_ops.Credentials(), progress=colleague_pushes)
    assert colleague, "the push never reported progress: the colleague's push did not fall inside it"
    server = pygit2.Repository(str(remote.bare))
    assert str(server.references[f"refs/heads/{remote.branch}"].target) == colleague[0]
