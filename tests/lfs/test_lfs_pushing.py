"""Layer 1: the LFS objects a push uploads first (lfs/pushing.py), on a real clone of a
path remote that git-lfs pushed to, with its real store: no mount."""

from __future__ import annotations

import hashlib

import pygit2

from gitfs.lfs import setup as lfs_setup
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.pushing import upload_before_push
from gitfs.repo.repository import Repository
from helpers import git

SIGNATURE = pygit2.Signature("GitFS", "gitfs@example.com")


def committed(repo: Repository, clone, files: dict[str, bytes], removed=()) -> pygit2.Oid:
    for name, data in files.items():
        (clone / name).write_bytes(data)
    for name in removed:
        (clone / name).unlink()
    paths = [*files, *removed]
    repo.prepare_staging(paths)
    repo.stage_paths(paths)
    oid = repo.commit_index("a change", SIGNATURE)
    assert oid is not None
    return oid


def test_a_replacement_s_push_uploads_only_what_its_own_commit_names(lfs_remote, tmp_path):
    """The server refused a commit that added secret.bin; the user removed it and saved
    ok.bin. The push that replaces the refused commits sends one commit of what current/
    holds now: its upload never sends the refused file's object."""
    clone = tmp_path / "clone"
    git("clone", "-q", str(lfs_remote.bare), str(clone))
    repo = Repository(str(clone), lfs_remote.branch)
    lfs = lfs_setup.content_for(repo, str(lfs_remote.bare))
    assert lfs is not None
    repo.content_filter = lfs
    secret, ok = b"a key the server's hook refused\n" * 100, b"what may go out\n" * 100
    remote_tip = repo.remote_tip()
    committed(repo, clone, {"secret.bin": secret})  # refused by the server
    local_tip = committed(repo, clone, {"ok.bin": ok}, removed=["secret.bin"])
    replacement = repo.write_replacement("refs/gitfs/replacement", local_tip, remote_tip, "replaces", SIGNATURE)

    assert upload_before_push(repo, replacement) == 1
    objects = {name: Pointer(hashlib.sha256(data).hexdigest(), len(data)) for name, data in
               (("secret.bin", secret), ("ok.bin", ok))}
    assert lfs_remote.object_path(objects["ok.bin"].oid).read_bytes() == ok
    assert not lfs_remote.object_path(objects["secret.bin"].oid).exists()
