"""Layer 1: working files left holding their pointer's text (the object could not be had
at checkout) get their content once it can be had, and only where the pointer still is;
no mount, a real clone of a path remote that git-lfs pushed to.
"""

from __future__ import annotations

import contextlib
import os

from gitfs.lfs import checkout, placeholders, pointer
from helpers import LFS_BIG, git_status_with_lfs, lfs_repository


def test_placeholders_get_their_content_only_where_the_pointer_still_is(lfs_remote, tmp_path):
    objects = lfs_remote.bare / "lfs" / "objects"
    away = tmp_path / "objects-away"
    objects.rename(away)  # the remote's objects cannot be had at checkout
    clone, repo, lfs = lfs_repository(lfs_remote, tmp_path / "clone")
    checkout.check_out_tip(repo)
    big_text = lfs_remote.show("big.bin")
    assert (clone / "big.bin").read_bytes() == big_text
    assert set(lfs.placeholders()) == {"big.bin", "small.bin"}
    root = os.open(clone, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert placeholders.shown_size(lfs, root, "big.bin", len(big_text)) == len(LFS_BIG)  # what current/ shows
        (clone / "small.bin").write_bytes(b"the user's own\n")  # changed meanwhile: stays so
        assert placeholders.shown_size(lfs, root, "small.bin", 15) is None
    finally:
        os.close(root)
    assert not placeholders.download_placeholders(repo)
    assert placeholders.placeholders_waiting(repo) == 2
    away.rename(objects)
    assert placeholders.download_placeholders(repo)

    freezes = []

    @contextlib.contextmanager
    def frozen():
        freezes.append(True)
        yield

    assert placeholders.fill_placeholders(repo, frozen) == ["big.bin"]
    assert freezes == [True]
    assert (clone / "big.bin").read_bytes() == LFS_BIG
    assert (clone / "small.bin").read_bytes() == b"the user's own\n"
    assert lfs.placeholders() == {}
    assert placeholders.fill_placeholders(repo, frozen) == [] and freezes == [True]  # nothing left: no freeze
    staged = repo.index()["big.bin"].id
    assert pointer.parse(repo.git[staged].data).encode() == big_text  # the same pointer, staged again
    assert git_status_with_lfs(clone) == " M small.bin\n"

