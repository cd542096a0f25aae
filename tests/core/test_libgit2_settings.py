"""Layer 1: libgit2's process-wide settings as the daemon sets them (gitfs/repo/libgit2.py)."""

import os
import shutil
import zlib

import pygit2
import pytest

from gitfs.repo import libgit2
from gitfs.repo.credentials import Credentials


@pytest.fixture
def strict_hashing_restored():
    yield
    pygit2.option(pygit2.GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, True)  # libgit2's default


def store_loose_object_under_wrong_name(repo: pygit2.Repository, content: bytes) -> pygit2.Oid:
    """A loose blob whose bytes do not hash to its name: only a read that re-hashes notices."""
    named = repo.create_blob(b"the name comes from these bytes\n")
    path = os.path.join(repo.path, "objects", str(named)[:2], str(named)[2:])
    os.chmod(path, 0o644)
    with open(path, "wb") as handle:
        handle.write(zlib.compress(b"blob %d\0" % len(content) + content))
    return named


def test_reads_do_not_hash_objects_again(tmp_path, strict_hashing_restored):
    repo = pygit2.init_repository(str(tmp_path / "clone"))
    oid = store_loose_object_under_wrong_name(repo, b"other bytes\n")
    with pytest.raises(pygit2.GitError):  # libgit2's default: every read re-hashed
        pygit2.Repository(repo.path)[oid]

    libgit2.configure(Credentials(), str(tmp_path / "remote.git"))

    assert pygit2.Repository(repo.path)[oid].data == b"other bytes\n"


@pytest.fixture
def commit_caching_restored():
    yield
    pygit2.option(pygit2.GIT_OPT_SET_CACHE_OBJECT_LIMIT, libgit2.GIT_OBJECT_COMMIT, 4096)  # libgit2's default


def test_a_walk_of_the_history_leaves_no_commit_in_the_object_cache(tmp_path, commit_caching_restored):
    repo = pygit2.init_repository(str(tmp_path / "clone"))
    signature = pygit2.Signature("t", "t@example.com")
    parents: list = []
    for number in range(50):
        tree = repo.TreeBuilder()
        tree.insert("file", repo.create_blob(b"version %d\n" % number), pygit2.GIT_FILEMODE_BLOB)
        parents = [repo.create_commit("refs/heads/main", signature, signature, f"c{number}", tree.write(), parents)]

    libgit2.configure(Credentials(), str(tmp_path / "remote.git"))

    fresh = pygit2.Repository(repo.path)
    before = pygit2.settings.cached_memory[0]
    assert sum(1 for commit in fresh.walk(parents[0]) if commit.commit_time) == 50
    assert pygit2.settings.cached_memory[0] == before


@pytest.fixture
def tree_caching_restored():
    yield
    pygit2.option(pygit2.GIT_OPT_SET_CACHE_OBJECT_LIMIT, libgit2.GIT_OBJECT_TREE, 4096)  # libgit2's default


def test_a_big_folder_stays_parsed_between_lookups(tmp_path, tree_caching_restored, commit_caching_restored):
    """A folder of 2,000 entries (~70 kB of tree): without the setting, every name looked
    up in it inflates and parses it again."""
    repo = pygit2.init_repository(str(tmp_path / "clone"))
    blob = repo.create_blob(b"same\n")
    builder = repo.TreeBuilder()
    for number in range(2000):
        builder.insert(f"file{number:05d}.txt", blob, pygit2.GIT_FILEMODE_BLOB)
    tree = builder.write()
    size = len(repo.odb.read(tree)[1])
    assert size > 64 * 1024

    libgit2.configure(Credentials(), str(tmp_path / "remote.git"))

    fresh = pygit2.Repository(repo.path)
    before = pygit2.settings.cached_memory[0]
    assert fresh[tree]["file01999.txt"].id == blob
    assert pygit2.settings.cached_memory[0] - before >= size


def test_a_handle_keeps_few_packs_open_however_many_it_reads(tmp_path):
    repo = pygit2.init_repository(str(tmp_path / "clone"), bare=True)
    pack_dir = os.path.join(repo.path, "objects", "pack")
    signature = pygit2.Signature("t", "t@example.com")
    parents: list = []
    for number in range(100):  # one pack per commit, as libgit2's fetches leave them
        helper = pygit2.Repository(repo.path)
        tree = helper.TreeBuilder()
        blob = helper.create_blob(b"version %d\n" % number)
        tree.insert("file", blob, pygit2.GIT_FILEMODE_BLOB)
        tree_id = tree.write()
        parents = [helper.create_commit("refs/heads/main", signature, signature, f"c{number}", tree_id, parents)]
        packer = pygit2.PackBuilder(helper)
        for oid in (parents[0], tree_id, blob):
            packer.add(oid)
        packer.write(pack_dir)
        for folder in (str(oid)[:2] for oid in (parents[0], tree_id, blob)):
            shutil.rmtree(os.path.join(repo.path, "objects", folder), ignore_errors=True)
        del helper

    libgit2.configure(Credentials(), str(tmp_path / "remote.git"))

    fresh = pygit2.Repository(repo.path)
    versions = [fresh[commit.tree["file"].id].data for commit in fresh.walk(parents[0])]
    assert len(versions) == 100 and versions[0] == b"version 99\n"
    held = [fd for fd in os.listdir("/proc/self/fd") if _link(fd).startswith(pack_dir) and _link(fd).endswith(".pack")]
    assert 0 < len(held) <= libgit2.MWINDOW_FILES


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""
