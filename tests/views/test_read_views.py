"""Layer 2: the read-only views (index, history, commit) and the route table, called
directly with a real pygit2 repository. No mocks, no mount.
"""

import errno
import os
import stat

import pytest
from mfusepy import FuseOSError

from gitfs.handles import HandleTable
from gitfs.repo.history.days import CommitDays
from gitfs.repo.history.versions import FileVersions
from gitfs.routes import build_routes
from gitfs.views.base import NS, statvfs_dict
from gitfs.views.commit import CommitView
from gitfs.views.history import DayView, HistoryView
from gitfs.views.index import IndexView
from gitfs.views.versions import VersionsView
from helpers import OWNER, CountingRepository, Remote, commit_time, commit_with, errno_of

MUTATIONS = [
    ("create", ("/new", 0o644, os.O_WRONLY)),
    ("mkdir", ("/newdir", 0o755)),
    ("mknod", ("/node", stat.S_IFREG | 0o644, 0)),
    ("unlink", ("/f",)),
    ("rmdir", ("/d",)),
    ("symlink", ("/l", "f")),
    ("link", ("/l", "/f")),
    ("rename", ("/f", "/g")),
    ("chmod", ("/f", 0o755)),
    ("chown", ("/f", 0, 0)),
    ("truncate", ("/f", 0)),
    ("write", ("/f", b"x", 0, 1)),
    ("utimens", ("/f", None)),
]
WRITE_FLAGS = [os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_APPEND, os.O_RDONLY | os.O_TRUNC,
               os.O_WRONLY | os.O_CREAT]


@pytest.fixture
def history_remote(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "views")
    big = os.urandom(1024 * 1024 + 7)

    def first(work):
        (work / "a").mkdir()
        (work / "b").mkdir()
        (work / "a/file").write_bytes(b"a's bytes\n")
        (work / "b/file").write_bytes(b"b's different bytes\n")
        (work / "run.sh").write_bytes(b"#!/bin/sh\n")
        os.chmod(work / "run.sh", 0o755)
        (work / "big.bin").write_bytes(big)
        (work / "b/deep").mkdir()
        os.symlink("../file", work / "b/deep/up")
        os.symlink("a/file", work / "toplink")
        (work / "empty").mkdir()
        (work / "empty/.keep").write_bytes(b"")

    remote.first = commit_with(remote, first, message="first", date="2020-01-02T09:00:00+0000",
                               gitlinks=[("sub", "1234567890abcdef1234567890abcdef12345678")])
    remote.second = remote.commit({"a/file": "changed\n"}, "second", date="2020-01-02T10:00:00+0000")
    remote.third = remote.commit({"c": "c\n"}, "third", date="2020-01-04T11:00:00+0000")
    remote.big = big
    return remote


@pytest.fixture
def repo(history_remote):
    return CountingRepository(str(history_remote.work), history_remote.branch)


@pytest.fixture
def days(repo):
    return CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor)


def commit_view(repo, sha):
    commit = repo.git.revparse_single(sha)
    return CommitView(OWNER, repo, HandleTable(), commit=commit.id, commit_time=commit.commit_time)


# -- IndexView -----------------------------------------------------------------

def test_index_lists_exactly_its_entries_and_is_a_read_only_dir():
    view = IndexView(OWNER, entries=["current", "history"], mount_time=1_600_000_000)
    assert view.readdir("/", None) == [".", "..", "current", "history"]
    attrs = view.getattr("/")
    assert attrs["st_mode"] == stat.S_IFDIR | 0o555
    assert (attrs["st_uid"], attrs["st_gid"]) == (1234, 5678)
    assert attrs["st_mtime"] == 1_600_000_000 * NS
    assert errno_of(view.getattr, "/other") == errno.ENOENT
    assert errno_of(view.getattr, "/currentX") == errno.ENOENT


@pytest.mark.parametrize("name, args", MUTATIONS)
def test_index_mutations_are_erofs(name, args):
    view = IndexView(OWNER, entries=["current", "history"], mount_time=0)
    assert errno_of(getattr(view, name), *args) == errno.EROFS


@pytest.mark.parametrize("flags", WRITE_FLAGS)
def test_index_open_for_write_and_access_w_are_erofs(flags):
    view = IndexView(OWNER, entries=["current", "history"], mount_time=0)
    assert errno_of(view.open, "/", flags) == errno.EROFS
    assert errno_of(view.access, "/", os.W_OK) == errno.EROFS
    assert view.access("/", os.R_OK | os.X_OK) == 0


# -- HistoryView ------------------------------------------------------------------

def test_history_root_lists_days_newest_first(history_remote, days):
    view = HistoryView(OWNER, days)
    assert view.readdir("/", None) == [".", "..", "2020-01-04", "2020-01-02"]
    attrs = view.getattr("/")
    assert attrs["st_mode"] == stat.S_IFDIR | 0o555
    assert attrs["st_mtime"] == commit_time(history_remote, history_remote.third) * NS
    assert errno_of(view.getattr, "/x") == errno.ENOENT


def test_day_lists_commits_oldest_first_with_first_and_last_times(history_remote, days):
    view = DayView(OWNER, days, "2020-01-02")
    assert view.readdir("/", None) == [".", "..", "09-00-00-" + history_remote.first[:10],
                                       "10-00-00-" + history_remote.second[:10]]
    attrs = view.getattr("/")
    assert attrs["st_mode"] == stat.S_IFDIR | 0o555
    assert (attrs["st_uid"], attrs["st_gid"]) == (1234, 5678)
    assert attrs["st_ctime"] == commit_time(history_remote, history_remote.first) * NS
    assert attrs["st_mtime"] == commit_time(history_remote, history_remote.second) * NS


@pytest.mark.parametrize("day", ["2020-01-03", "2019-12-31", "2020-1-2", "junk"])
def test_unknown_day_is_enoent_not_einval(days, day):
    view = DayView(OWNER, days, day)
    assert errno_of(view.getattr, "/") == errno.ENOENT
    assert errno_of(view.readdir, "/", None) == errno.ENOENT
    assert errno_of(view.open, "/", os.O_RDONLY) == errno.ENOENT
    assert errno_of(view.access, "/", os.R_OK) == errno.ENOENT


def test_unmatched_name_inside_a_day_is_enoent(days):
    view = DayView(OWNER, days, "2020-01-02")
    assert errno_of(view.getattr, "/junk") == errno.ENOENT
    assert errno_of(view.readdir, "/junk", None) == errno.ENOENT


def test_history_mutations_are_erofs(days):
    for view in (HistoryView(OWNER, days), DayView(OWNER, days, "2020-01-02")):
        for name, args in MUTATIONS:
            assert errno_of(getattr(view, name), *args) == errno.EROFS, name
        for flags in WRITE_FLAGS:
            assert errno_of(view.open, "/", flags) == errno.EROFS, flags


# -- CommitView -----------------------------------------------------------------------

def read_all(view, path, chunk=128 * 1024):
    fh = view.open(path, os.O_RDONLY)
    try:
        data, offset = b"", 0
        while True:
            piece = view.read(path, chunk, offset, fh)
            if not piece:
                return data
            data += piece
            offset += len(piece)
    finally:
        view.release(path, fh)


def test_commit_root_lists_the_commits_tree(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    assert sorted(view.readdir("/", None)) == sorted([".", "..", "a", "b", "big.bin", "empty", "run.sh", "sub",
                                                      "toplink"])
    assert view.readdir("/empty", None) == [".", "..", ".keep"]  # .keep is shown in history
    assert sorted(view.readdir("/b", None)) == [".", "..", "deep", "file"]


def test_each_path_serves_its_own_bytes(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    assert read_all(view, "/a/file") == b"a's bytes\n"
    assert read_all(view, "/b/file") == b"b's different bytes\n"
    assert read_all(view, "/big.bin") == history_remote.big
    later = commit_view(repo, history_remote.second)
    assert read_all(later, "/a/file") == b"changed\n"
    assert read_all(later, "/b/file") == b"b's different bytes\n"


def test_reading_in_chunks_streams_the_blob_never_whole(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    repo.whole_reads = 0
    assert read_all(view, "/big.bin", chunk=128 * 1024) == history_remote.big
    assert repo.whole_reads == 0  # streamed from its object file, not inflated whole by libgit2
    assert view.handles.dirty_paths() == [] and view.handles.writers()[0] == 0


def test_blob_is_read_on_first_read_and_dropped_at_release(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    repo.whole_reads = 0
    fh = view.open("/big.bin", os.O_RDONLY)
    open_file = view.handles.get(fh)
    assert not open_file.data.loaded  # open alone: the page cache may serve it
    assert view.read("/big.bin", 10, 5, fh) == history_remote.big[5:15]
    assert view.read("/big.bin", 128 * 1024, len(history_remote.big) - 3, fh) == history_remote.big[-3:]
    assert open_file.data.loaded and repo.whole_reads == 0
    view.release("/big.bin", fh)
    assert not open_file.data.loaded  # nothing big stays after release
    with pytest.raises(KeyError):
        view.handles.get(fh)
    view.release("/big.bin", fh)  # a second release is harmless


def test_a_damaged_object_file_reads_as_eio(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    oid = str(repo.tree_item(repo.git.revparse_single(history_remote.first).id, ["big.bin"]).oid)
    path = history_remote.work / ".git" / "objects" / oid[:2] / oid[2:]
    os.chmod(path, 0o644)
    with open(path, "r+b") as handle:
        handle.truncate(1000)
    fh = view.open("/big.bin", os.O_RDONLY)
    with pytest.raises(FuseOSError) as caught:
        view.read("/big.bin", len(history_remote.big), 0, fh)
    assert caught.value.errno == errno.EIO
    view.release("/big.bin", fh)


def testreaddir_with_attrs_gives_the_same_attributes_as_getattr(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    for folder in ("/", "/b", "/b/deep", "/empty", "/sub"):
        entries = view.readdir_with_attrs(folder)
        assert [name for name, _attrs in entries] == view.readdir(folder, None), folder
        for name, attrs in entries[2:]:
            path = folder.rstrip("/") + "/" + name
            assert attrs == view.getattr(path), path
    assert errno_of(view.readdir_with_attrs, "/a/file") == errno.ENOTDIR
    assert errno_of(view.readdir_with_attrs, "/nope") == errno.ENOENT


def test_historyreaddir_with_attrs_matches_getattr(history_remote, days):
    root = HistoryView(OWNER, days)
    entries = root.readdir_with_attrs("/")
    assert [name for name, _attrs in entries] == root.readdir("/", None)
    for day, attrs in entries[2:]:
        view = DayView(OWNER, days, day)
        assert attrs == view.getattr("/"), day
        names = view.readdir_with_attrs("/")
        assert [name for name, _attrs in names] == view.readdir("/", None)
        for name, commit_attrs in names[2:]:
            oid, when = days.commit(day, name)
            assert commit_attrs["st_mtime"] == when * NS and stat.S_ISDIR(commit_attrs["st_mode"])
    assert errno_of(DayView(OWNER, days, "2020-01-03").readdir_with_attrs, "/") == errno.ENOENT


def test_read_past_the_end_and_at_offsets(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    fh = view.open("/b/file", os.O_RDONLY)
    assert view.read("/b/file", 4, 2, fh) == b"s di"
    assert view.read("/b/file", 100, 1000, fh) == b""
    view.release("/b/file", fh)


def test_commit_stats(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    when = commit_time(history_remote, history_remote.first) * NS
    for path in ("/", "/a", "/b/deep", "/empty", "/sub"):
        attrs = view.getattr(path)
        assert attrs["st_mode"] == stat.S_IFDIR | 0o555, path
        assert attrs["st_mtime"] == when
    regular = view.getattr("/b/file")
    assert regular["st_mode"] == stat.S_IFREG | 0o444
    assert regular["st_size"] == len(b"b's different bytes\n")
    assert regular["st_blocks"] == 1
    assert (regular["st_uid"], regular["st_gid"]) == (1234, 5678)
    assert regular["st_mtime"] == regular["st_ctime"] == when
    assert view.getattr("/run.sh")["st_mode"] == stat.S_IFREG | 0o555
    big = view.getattr("/big.bin")
    assert big["st_size"] == len(history_remote.big)
    assert big["st_blocks"] == (len(history_remote.big) + 511) // 512
    link = view.getattr("/b/deep/up")
    assert stat.S_ISLNK(link["st_mode"])
    assert link["st_size"] == len("../file")


def test_symlinks_at_every_depth(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    assert view.readlink("/toplink") == "a/file"
    assert view.readlink("/b/deep/up") == "../file"
    assert errno_of(view.readlink, "/a/file") == errno.EINVAL
    assert errno_of(view.readlink, "/b/deep/nope") == errno.ENOENT


def test_submodule_is_an_empty_directory(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    assert view.readdir("/sub", None) == [".", ".."]
    assert errno_of(view.open, "/sub", os.O_RDONLY) == errno.EISDIR


@pytest.mark.parametrize("path, code", [
    ("/nope", errno.ENOENT), ("/a/nope", errno.ENOENT), ("/c", errno.ENOENT), ("/b/deep/nope/x", errno.ENOENT),
    ("/sub/x", errno.ENOENT), ("/sub/x/y", errno.ENOENT),  # a submodule is an empty folder: nothing below it
])
def test_missing_paths_are_enoent_never_einval(history_remote, repo, path, code):
    view = commit_view(repo, history_remote.first)
    for call, args in ((view.getattr, (path,)), (view.readdir, (path, None)), (view.open, (path, os.O_RDONLY)),
                       (view.access, (path, os.R_OK)), (view.readlink, (path,))):
        assert errno_of(call, *args) == code, (call.__name__, path)


def test_file_in_the_middle_of_a_path_is_enotdir(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    assert errno_of(view.getattr, "/a/file/x") == errno.ENOTDIR
    assert errno_of(view.readdir, "/a/file", None) == errno.ENOTDIR


def test_commit_mutations_are_erofs(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    for name, args in MUTATIONS:
        assert errno_of(getattr(view, name), *args) == errno.EROFS, name


def test_commit_open_for_write_is_erofs(history_remote, repo):
    view = commit_view(repo, history_remote.first)
    for flags in WRITE_FLAGS:
        assert errno_of(view.open, "/a/file", flags) == errno.EROFS, flags
        assert errno_of(view.open, "/new", flags) == errno.EROFS, flags
    assert errno_of(view.access, "/a/file", os.W_OK) == errno.EROFS
    assert view.access("/a/file", os.R_OK) == 0


# -- routes ---------------------------------------------------------------------------

NO_VIEWS = None  # the table's patterns only: no view is built here


def route(routes, path):
    for candidate in routes:
        match = candidate.pattern.match(path)
        if match:
            return candidate.name, match.group(0), match.groupdict()
    return None


def test_routes_match_whole_path_components():
    routes = build_routes(NO_VIEWS, current_path="current", history_path="history")
    assert route(routes, "/current")[:2] == ("current", "/current")
    assert route(routes, "/current/a/b")[:2] == ("current", "/current")
    assert route(routes, "/currentX")[0] == "index"  # not an alias of current/
    assert route(routes, "/historyX")[0] == "index"
    assert route(routes, "/")[0] == "index"
    assert route(routes, "/history")[0] == "history"
    assert route(routes, "/history/2020-01-02")[:1] == ("day",)
    assert route(routes, "/history/2020-01-02/10-00-00-0123456789")[0] == "commit"
    assert route(routes, "/history/2020-01-02/10-00-00-0123456789/a/b")[:2] == (
        "commit", "/history/2020-01-02/10-00-00-0123456789")
    assert route(routes, "/history/2020-01-02/10-00-00-0123456789X")[0] == "day"
    assert route(routes, "/history/2020-01-02/10-00-00-01234567")[0] == "day"
    assert route(routes, "/history/0123abc")[0] == "commit_link"
    assert route(routes, "/history/" + "0123abcd" * 5)[2] == {"sha": "0123abcd" * 5}
    assert route(routes, "/history/0123ab")[0] == "day"  # 6 digits: not an id (and no day either)
    assert route(routes, "/history/0123ABC")[0] == "day"
    assert route(routes, "/history/" + "0" * 41)[0] == "day"
    assert route(routes, "/.gitfs")[0] == "status"
    assert route(routes, "/.gitfs/metrics")[0] == "status"
    assert route(routes, "/.gitfs/versions/a/b")[:2] == ("versions", "/.gitfs/versions")
    assert route(routes, "/.gitfs/conflicts/2020-01-02_10-00-00/a")[:2] == ("conflicts", "/.gitfs/conflicts")
    assert route(routes, "/.gitfs/versionsX")[0] == "status"


def test_routes_with_other_names_and_current_at_the_root():
    routes = build_routes(NO_VIEWS, current_path="tree", history_path="past")
    assert route(routes, "/tree/x")[0] == "current"
    assert route(routes, "/past/2020-01-02")[0] == "day"
    assert route(routes, "/current")[0] == "index"
    assert route(routes, "/history")[0] == "index"
    root = build_routes(NO_VIEWS, current_path="", history_path="history")
    assert route(root, "/")[0] == "current"
    assert route(root, "/a/file")[0] == "current"
    assert route(root, "/history/2020-01-02")[0] == "day"
    assert route(root, "/historyfile")[0] == "current"


def test_history_name_with_regex_characters_is_literal():
    routes = build_routes(NO_VIEWS, current_path="current", history_path="h.st")
    assert route(routes, "/h.st")[0] == "history"
    assert route(routes, "/hxst")[0] == "index"


# -- the views through a Router, as FUSE calls them ----------------------------------

def test_router_serves_history_paths_and_enoent_for_wrong_commits(history_remote, repo, days):
    from gitfs.router import Router

    class Views:
        def index(self):
            return IndexView(OWNER, entries=["current", "history"], mount_time=0)

        def history(self):
            return HistoryView(OWNER, days)

        def day(self, day):
            return DayView(OWNER, days, day)

        def commit(self, day, name):
            found = days.commit(day, name)
            if found is None:
                raise FuseOSError(errno.ENOENT)
            return CommitView(OWNER, repo, HandleTable(), commit=found[0], commit_time=found[1])

        def status(self):
            raise FuseOSError(errno.ENOENT)

        current = status

    router = Router(build_routes(Views(), current_path="current", history_path="history"), cache_size=4,
                    touch=lambda: None, on_init=lambda: None, on_destroy=lambda: None,
                    disk_figures=lambda: statvfs_dict(repo.workdir))
    first = "/history/2020-01-02/09-00-00-" + history_remote.first[:10]
    assert router.readdir("/", None) == [".", "..", "current", "history"]
    assert errno_of(router.getattr, "/currentX") == errno.ENOENT
    assert router.getattr(first + "/b/file")["st_size"] == len(b"b's different bytes\n")
    wrong_sha = "/history/2020-01-02/09-00-00-" + "0" * 10
    wrong_day = "/history/2020-01-04/09-00-00-" + history_remote.first[:10]
    wrong_time = "/history/2020-01-02/09-00-01-" + history_remote.first[:10]
    for path in (wrong_sha, wrong_day, wrong_time, wrong_sha + "/a/file", "/history/2020-01-03",
                 "/history/2020-01-02/junk", first + "/nope"):
        assert errno_of(router.getattr, path) == errno.ENOENT, path
    # Browsing more commit folders than cache_size evicts views; nothing breaks.
    for _ in range(3):
        for day in days.days():
            for name in days.names(day):
                assert router.getattr(f"/history/{day}/{name}/")["st_mode"] == stat.S_IFDIR | 0o555
    assert errno_of(router.rename, first + "/a/file", first + "/a/g") == errno.EROFS
    assert errno_of(router.mkdir, "/history/new", 0o755) == errno.EROFS
    assert errno_of(router.mkdir, "/new", 0o755) == errno.EROFS
    # statfs: the clone's disk everywhere, history/ included (not zeros, f_namemax 0).
    for path in ("/", "/history", "/history/2020-01-02", first, first + "/b/file"):
        figures = router.statfs(path)
        assert figures["f_namemax"] == os.statvfs(repo.workdir).f_namemax, path
        assert figures["f_blocks"] > 0 and figures["f_bsize"] > 0, path



def test_versionsreaddir_with_attrs_matches_getattr(history_remote, repo):
    """A file's versions are listed as they are read (ListedVersions): each entry's
    attributes are what getattr of that version gives, sizes included."""
    view = VersionsView(OWNER, repo, FileVersions(repo), HandleTable(), mount_time=0)
    for path in ("/a/file", "/b/deep/up", "/run.sh"):
        entries = view.readdir_with_attrs(path)
        listed = [entries[number] for number in range(len(entries))]
        assert [name for name, _attrs in listed] == view.readdir(path, None), path
        assert len(listed) > 2, path
        for name, attrs in listed[2:]:
            assert dict(attrs) == view.getattr(f"{path}/{name}"), name
    assert [attrs["st_size"] for _name, attrs in (view.readdir_with_attrs("/a/file")[number] for number in (2, 3))] \
        == [len(b"a's bytes\n"), len(b"changed\n")]
