"""The LFS tests' remote: a path remote whose other clone runs the real git-lfs client
(helpers.LfsRemote)."""

from __future__ import annotations

import pytest

from helpers import LFS_FILES, LfsRemote, git, require_git_lfs


@pytest.fixture
def lfs_remote(tmp_path) -> LfsRemote:
    """An LFS remote holding `big.bin` (2 MiB, an LFS object), `small.bin` (LFS, 5 bytes)
    and `notes.txt` (an ordinary blob)."""
    require_git_lfs()
    remote = LfsRemote(tmp_path)
    remote.commit(LFS_FILES, "LFS files")
    return remote


@pytest.fixture
def lfs_plain_remote(tmp_path) -> LfsRemote:
    """A remote without any LFS rule yet, whose other clone has git-lfs installed: a
    team that adopts LFS later (`git lfs track` there writes the first rule)."""
    require_git_lfs()
    remote = LfsRemote(tmp_path)
    (remote.work / ".gitattributes").unlink()
    git("rm", "-q", "--cached", ".gitattributes", cwd=remote.work)
    remote.commit({"notes.txt": "no LFS here yet\n"}, "a plain repository")
    return remote
