"""Layer 1: every version of a file (gitfs/repo/history/versions.py) on real repositories, checked
against `git log --first-parent -- PATH`."""

import os
import subprocess
import tracemalloc
import types

import pytest

from gitfs.cache_policy import VersionsForgetter
from gitfs.mount import Mount
from gitfs.repo.history import versions as versions_module
from gitfs.repo.history.versions import FileVersions, version_name
from gitfs.repo.repository import FILEMODE_BLOB, FILEMODE_EXEC, FILEMODE_LINK, Repository
from helpers import Remote, commit_with, git


def git_versions(remote, path):
    """Commits of the first-parent line that added or changed path (not those that deleted
    it), oldest first, from git itself."""
    out = git("log", "--first-parent", "--diff-filter=AMT", "--format=%H", "--reverse", "--", path, cwd=remote.work)
    return out.split()


def shas(versions):
    return [str(version.commit) for version in versions]


@pytest.fixture
def changing(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "changing")
    remote.commit({"a/b/file.txt": "1\n", "top.txt": "top\n"}, "one", date="2020-01-02T09:00:00+0000")
    remote.commit({"top.txt": "top 2\n"}, "only top", date="2020-01-02T10:00:00+0000")
    remote.commit({"a/b/file.txt": "2\n", "a/other.txt": "x\n"}, "two", date="2020-01-03T11:00:00+0000")
    remote.commit({"a/other.txt": "y\n"}, "other in a", date="2020-01-03T12:00:00+0000")
    commit_with(remote, lambda work: os.chmod(work / "a/b/file.txt", 0o755), message="exec",
                date="2020-01-04T08:00:00+0000")
    remote.commit({"a/b/file.txt": None}, "gone", date="2020-01-05T08:00:00+0000")
    remote.commit({"a/b/file.txt": "3\n"}, "back", date="2020-01-06T08:00:00+0000")
    remote.repo = Repository(str(remote.work), remote.branch)
    return remote


def test_versions_are_the_commits_that_added_or_changed_the_file(changing):
    versions = FileVersions(changing.repo).versions("a/b/file.txt")
    assert shas(versions) == git_versions(changing, "a/b/file.txt")
    assert len(versions) == 4  # one, two, exec; not "gone"; back
    assert [version.mode for version in versions] == [FILEMODE_BLOB, FILEMODE_BLOB, FILEMODE_EXEC, FILEMODE_BLOB]
    assert [changing.repo.blob_bytes(version.oid) for version in versions] == [b"1\n", b"2\n", b"2\n", b"3\n"]
    first = versions[0]
    assert first.name == "2020-01-02_09-00-00-" + str(first.commit)[:10]
    assert first.name == version_name(str(first.commit), first.commit_time)
    assert [version.name for version in versions] == sorted(version.name for version in versions)


def test_every_path_and_a_missing_one(changing):
    index = FileVersions(changing.repo)
    for path in ("top.txt", "a/other.txt", "/a/other.txt"):
        assert shas(index.versions(path)) == git_versions(changing, path.lstrip("/")), path
    assert index.versions("nothing") == []
    assert index.versions("a") == []  # a folder has no versions
    assert index.versions("a/b/file.txt/deeper") == []
    assert index.versions("") == []


def test_a_symlinks_versions_are_links(changing):
    commit_with(changing, lambda work: os.symlink("top.txt", work / "link"), message="link")
    commit_with(changing, lambda work: (os.unlink(work / "link"), os.symlink("a/other.txt", work / "link")),
                message="relink")
    versions = FileVersions(changing.repo).versions("link")
    assert [version.mode for version in versions] == [FILEMODE_LINK, FILEMODE_LINK]
    assert [changing.repo.blob_bytes(version.oid) for version in versions] == [b"top.txt", b"a/other.txt"]


def test_new_commits_are_read_once_and_extend_what_is_known(changing):
    index = FileVersions(changing.repo)
    assert len(index.versions("top.txt")) == 2
    read = index.commits_read
    assert read == 7
    changing.commit({"top.txt": "top 3\n"}, "three")
    changing.commit({"a/other.txt": "z\n"}, "not top")
    assert shas(index.versions("top.txt")) == git_versions(changing, "top.txt")
    assert len(index.versions("top.txt")) == 3
    assert index.commits_read == read + 2  # only the new commits
    assert shas(index.versions("top.txt")) == git_versions(changing, "top.txt")
    assert index.commits_read == read + 2  # the branch did not move: nothing read
    # Another path walks the line on its own: nothing is kept per commit of the history.
    assert shas(index.versions("a/other.txt")) == git_versions(changing, "a/other.txt")
    assert index.commits_read == read + 2 + 9


def test_a_rewritten_branch_is_read_again(changing):
    index = FileVersions(changing.repo)
    before = index.versions("a/b/file.txt")
    git("reset", "-q", "--hard", "HEAD~3", cwd=changing.work)
    assert shas(index.versions("a/b/file.txt")) == git_versions(changing, "a/b/file.txt") == shas(before[:2])
    changing.commit({"a/b/file.txt": "other line\n"}, "other line", push=False)
    assert shas(index.versions("a/b/file.txt")) == git_versions(changing, "a/b/file.txt")


def test_only_the_first_parent_line(changing):
    git("checkout", "-q", "-b", "side", "HEAD~2", cwd=changing.work)
    changing.commit({"side.txt": "s\n", "top.txt": "from the side\n"}, "on the side", push=False)
    git("checkout", "-q", changing.branch, cwd=changing.work)
    git("merge", "-q", "--no-ff", "-X", "theirs", "-m", "merge side", "side", cwd=changing.work)
    versions = FileVersions(changing.repo).versions("top.txt")
    assert shas(versions) == git_versions(changing, "top.txt")
    merge = git("rev-parse", "HEAD", cwd=changing.work).strip()
    side = git("rev-parse", "side", cwd=changing.work).strip()
    assert shas(versions)[-1] == merge and side not in shas(versions)


def test_the_lru_is_bounded_and_an_evicted_path_comes_back_right(changing):
    index = FileVersions(changing.repo, cache_size=2)
    expected = {path: git_versions(changing, path) for path in ("top.txt", "a/other.txt", "a/b/file.txt")}
    for _ in range(2):
        for path, commits in expected.items():
            assert shas(index.versions(path)) == commits
            assert index.cached_paths() <= 2


def test_a_version_is_found_by_its_name_and_only_by_it(changing):
    index = FileVersions(changing.repo)
    versions = index.versions("a/b/file.txt")
    for version in versions:
        assert index.version("a/b/file.txt", version.name) == version
    first, second = versions[0], versions[1]
    assert index.version("top.txt", second.name) is None  # "two" left top.txt as it was
    assert index.version("top.txt", first.name).oid != first.oid  # "one" added both files
    assert index.version("a/b/file.txt", first.name.replace("09-00-00", "09-00-01")) is None
    assert index.version("a/b/file.txt", first.name[:-1] + "x") is None
    assert index.version("a/b/file.txt", "nonsense") is None
    assert index.span("a/b/file.txt") == (versions[0].commit_time, versions[-1].commit_time)
    assert index.span("nothing") is None


def test_a_path_without_versions_is_not_read_again(changing):
    index = FileVersions(changing.repo)
    assert index.versions("nothing") == []
    read = index.commits_read
    passes = []
    index._walk = lambda *arguments: passes.append(arguments)
    assert index.versions("nothing") == []
    assert index.version("nothing", "2020-01-02_09-00-00-0000000000") is None
    assert index.commits_read == read and passes == []


def test_every_walk_reads_on_a_handle_of_its_own(changing, monkeypatch):
    """A walk takes a handle that goes with its caches when done; the answers are the same."""
    handles = []
    walk_handle = changing.repo.walk_handle
    monkeypatch.setattr(changing.repo, "walk_handle", lambda: handles.append(1) or walk_handle())
    monkeypatch.setattr(versions_module, "CLEAR_EVERY", 2)  # the handle's cache cleared as the walk goes
    index = FileVersions(changing.repo)
    for path in ("top.txt", "a/b/file.txt", "top.txt"):
        assert shas(index.versions(path)) == git_versions(changing, path)
    assert len(handles) == 2  # each path's walk; the third call found the branch where it was


def test_a_long_index_finds_each_version_by_its_name_in_its_sorted_table(changing, monkeypatch):
    """From PREFIX_TABLE_FROM versions on, a name is looked up in a sorted table (a LOOKUP
    of every version of a listing the kernel forgot was a scan of the ids each); the table
    follows the index as the branch moves."""
    monkeypatch.setattr(versions_module, "PREFIX_TABLE_FROM", 2)
    index = FileVersions(changing.repo)
    versions = index.versions("a/b/file.txt")
    for version in versions:
        assert index.version("a/b/file.txt", version.name) == version
    assert index.version("a/b/file.txt", versions[0].name.replace("09-00-00", "09-00-01")) is None
    assert index.version("a/b/file.txt", versions[0].name[:-1] + "x") is None
    assert index.version("a/b/file.txt", versions[0].name[:-2]) is None
    changing.commit({"a/b/file.txt": "4\n"}, "four", date="2020-01-07T08:00:00+0000")
    newest = index.versions("a/b/file.txt")[-1]
    assert newest.name not in {version.name for version in versions}
    assert index.version("a/b/file.txt", newest.name) == newest


def test_memory_follows_the_versions_not_the_history(tmp_path, local_timezone):
    """A file changed once on a history of 3,000 commits: the index holds its version and
    nothing per commit (the first-parent line kept before took 48 bytes a commit)."""
    local_timezone("UTC0")
    remote = Remote(tmp_path / "long")
    remote.commit({"once.txt": "once\n", "busy.txt": "0\n"}, "first", date="2020-01-01T00:00:00+0000")
    stream = []
    for number in range(1, 3000):
        data = f"{number}\n".encode()
        stream.append(b"commit refs/heads/%s\ncommitter A <a@b> %d +0000\ndata 0\n" % (
            remote.branch.encode(), 1_577_836_800 + number))
        if number == 1:
            stream.append(b"from %s\n" % git("rev-parse", "HEAD", cwd=remote.work).strip().encode())
        stream.append(b"M 100644 inline busy.txt\ndata %d\n%s\n" % (len(data), data))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(stream), cwd=remote.work, check=True)
    repo = Repository(str(remote.work), remote.branch)
    index = FileVersions(repo)
    index.versions("busy.txt")  # the handle, the modules and the buffers' first growth
    index.release()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert [version.name for version in index.versions("once.txt")] == [
            "2020-01-01_00-00-00-" + git("rev-list", "--max-parents=0", "HEAD", cwd=remote.work)[:10]]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 20_000, held
    busy = index.listing("busy.txt")
    assert len(busy) == 3000 and index.kept() == 3001
    assert busy.names() == [version_name(str(busy.commit(number)), busy.commit_time(number))
                            for number in range(len(busy))]


def test_an_idle_mount_lets_go_and_the_next_listing_walks_again(changing):
    index = FileVersions(changing.repo)
    expected = shas(index.versions("a/b/file.txt"))
    read = index.commits_read
    dropped = index.release()
    assert list(dropped) == ["a/b/file.txt"] and len(dropped["a/b/file.txt"].names()) == 4
    assert index.cached_paths() == 0 and index.kept() == 0
    assert shas(index.versions("a/b/file.txt")) == expected
    assert index.commits_read == read + 7


def test_the_lru_is_bounded_by_the_versions_it_holds(changing):
    index = FileVersions(changing.repo, kept_versions=3)
    index.versions("a/b/file.txt")  # 4 versions: more than the bound, kept as the newest path
    assert index.cached_paths() == 1
    index.versions("top.txt")
    assert index.cached_paths() == 1 and index.kept() == 2
    index.versions("a/other.txt")
    assert index.cached_paths() == 1 and index.kept() == 2


def test_names_across_a_change_of_utc_offset(tmp_path, local_timezone):
    local_timezone("CET-1CEST,M3.5.0,M10.5.0/3")
    remote = Remote(tmp_path / "dst")
    for number, date in enumerate(("2020-03-28T23:30:00+0000", "2020-03-29T00:30:00+0000",
                                   "2020-03-29T01:30:00+0000", "2020-03-29T02:30:00+0000",
                                   "2020-03-30T12:00:00+0000")):
        remote.commit({"f.txt": f"{number}\n"}, f"c{number}", date=date)
    listing = FileVersions(Repository(str(remote.work), remote.branch)).listing("f.txt")
    assert listing.names() == [version_name(str(listing.commit(number)), listing.commit_time(number))
                               for number in range(len(listing))]


def test_a_long_walk_lets_every_handle_go_when_it_ends(changing, monkeypatch):
    """The pack's delta bases a long walk filled stay while any handle has the pack open
    (up to 16 MiB, ~15 MB after listing a file changed once on 300,000 commits): after a
    walk of LONG_WALK commits or more, every handle goes, as when the mount is idle."""
    released = []
    release_caches = changing.repo.release_caches
    monkeypatch.setattr(changing.repo, "release_caches", lambda: released.append(1) or release_caches())
    monkeypatch.setattr(versions_module, "LONG_WALK", 7)
    index = FileVersions(changing.repo)
    assert shas(index.versions("top.txt")) == git_versions(changing, "top.txt")  # 7 commits read
    assert released == [1, 1]  # on reaching LONG_WALK commits, and at its end
    changing.commit({"top.txt": "top 3\n"}, "three")
    assert shas(index.versions("top.txt")) == git_versions(changing, "top.txt")  # 1 commit read
    assert released == [1, 1]


def test_a_long_walk_has_the_other_handles_let_go_as_it_goes(changing, monkeypatch):
    """libgit2 keeps a pack's delta bases with the pack, shared by every handle that has it
    open: every LONG_WALK commits of a walk, the other handles go, so that the walk's
    own clearings close the pack (and its delta bases) as it goes. The walk still reads
    every commit on its own handle, and the thread handles opened meanwhile work."""
    seen = []
    release_caches = changing.repo.release_caches

    def release():
        seen.append(index.commits_read)  # counted when a walk ends
        changing.repo.git  # noqa: B018 - a thread's handle, as a FUSE thread would hold one
        release_caches()
        assert changing.repo.tree_item(changing.repo.branch_tip(), ["top.txt"]).size > 0

    monkeypatch.setattr(changing.repo, "release_caches", release)
    monkeypatch.setattr(versions_module, "LONG_WALK", 3)
    index = FileVersions(changing.repo)
    assert shas(index.versions("a/b/file.txt")) == git_versions(changing, "a/b/file.txt")
    assert seen == [0, 0, 7]  # every LONG_WALK commits of the walk, and at its end
    assert index.commits_read == 7


def test_an_idle_mount_reads_the_folders_it_tells_the_kernel_of_before_the_versions_go(changing):
    """The kernel's lstat of a file's versions folder (for its node id) may come back to
    GitFS as a GETATTR, whose times are the file's versions: read after the versions were
    let go, it walked the whole branch again and kept them (18 MB for 300,000 versions)."""
    index = FileVersions(changing.repo)
    listed = index.listing("a/b/file.txt")

    class Kernel:  # the FUSE boundary: each folder's attributes asked of GitFS, as a stale entry makes the kernel do
        active = True
        told: list[str] = []

        def node_ids(self, paths):
            return {path: 7 for path in paths if index.span(path.split("/", 3)[3]) is not None}

        def forget_entries(self, parents, removed):
            assert parents == {"/.gitfs/versions/a/b/file.txt": 7}
            self.told.extend(removed)

    read_before = index.commits_read
    mount = types.SimpleNamespace(versions=index, versions_kernel=VersionsForgetter(Kernel(), "/.gitfs/versions"),
                                  repo=changing.repo, options=types.SimpleNamespace(mount_point="/nowhere"),
                                  history_kernel=types.SimpleNamespace(forget_names=lambda working_dirs: 0))
    Mount.release_idle(mount)  # type: ignore[arg-type]
    assert index.kept() == 0 and index.commits_read == read_before
    assert Kernel.told == [f"/.gitfs/versions/a/b/file.txt/{name}" for name in listed.names()]
