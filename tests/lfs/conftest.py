"""Rig for the LFS tests: bare remotes whose other clone uses the real git-lfs client.

Debian's git-lfs package adds `filter.lfs.*` to the system git config; the tests run
with GIT_CONFIG_NOSYSTEM=1 and a fresh HOME (tests/conftest.py), so each clone that
should run git-lfs gets `git lfs install --local`, as a user's clone would have it.
A path remote's objects are in its own git directory (REMOTE/lfs/objects/...), where
git-lfs's standalone transfer puts them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import Remote, git

LFS_ATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n"


def git_lfs(*args, cwd, data: bytes | None = None, check=True) -> subprocess.CompletedProcess:
    """`git lfs ARGS` in cwd; bytes in and out."""
    result = subprocess.run(["git", "lfs", *map(str, args)], cwd=cwd, input=data, capture_output=True)
    if check and result.returncode != 0:
        raise AssertionError(f"git lfs {' '.join(map(str, args))} failed: {result.stderr.decode(errors='replace')}")
    return result


def require_git_lfs() -> None:
    if shutil.which("git-lfs") is None:
        pytest.fail("git-lfs is not installed (.ci/install-deps installs Debian's git-lfs)")


def lfs_clone(url: str, path: Path) -> Path:
    """A plain clone with git-lfs set up in it, its objects pulled."""
    git("clone", "-q", url, str(path))
    git_lfs("install", "--local", cwd=path)
    git_lfs("pull", cwd=path)
    return path


class LfsRemote(Remote):
    """A bare remote whose other clone tracks `*.bin` with git-lfs: committing a .bin
    file there commits a pointer, and pushing uploads the object to the remote."""

    def __init__(self, root: Path, branch: str = "main"):
        super().__init__(root, branch)
        git_lfs("install", "--local", cwd=self.work)
        (self.work / ".gitattributes").write_text(LFS_ATTRIBUTES)
        git("add", ".gitattributes", cwd=self.work)

    def object_path(self, oid: str) -> Path:
        return self.bare / "lfs" / "objects" / oid[:2] / oid[2:4] / oid


@pytest.fixture
def lfs_remote(tmp_path) -> LfsRemote:
    """An LFS remote holding `big.bin` (2 MiB, an LFS object), `small.bin` (LFS, 5 bytes)
    and `notes.txt` (an ordinary blob)."""
    require_git_lfs()
    remote = LfsRemote(tmp_path)
    remote.commit({"big.bin": bytes(range(256)) * 8192, "small.bin": b"tiny\n", "notes.txt": "plain\n"},
                  "LFS files")
    return remote
