"""Layer 2: the views of .gitfs/ (versions, the status folder) and history/<commit id>, called
directly with a real repository: the errno of every kind of miss, never EINVAL by accident."""

import errno
import os

import pytest

from gitfs.handles import HandleTable
from gitfs.repo.history.days import CommitDays
from gitfs.repo.history.versions import FileVersions
from gitfs.repo.repository import Repository
from gitfs.views.commit_link import CommitLinkView
from gitfs.views.generated_files import GeneratedFilesView
from gitfs.views.versions import VersionsView
from helpers import OWNER, Remote, commit_with, errno_of


@pytest.fixture
def repo(tmp_path, local_timezone):
    local_timezone("UTC0")
    remote = Remote(tmp_path / "r")
    remote.first = remote.commit({"d/f.txt": "1\n"}, "one", date="2020-01-02T09:00:00+0000")

    def change(work):
        (work / "d/f.txt").write_text("2\n")
        os.symlink("d/f.txt", work / "link")
    remote.second = commit_with(remote, change, message="two", date="2020-01-03T09:00:00+0000")
    repository = Repository(str(remote.work), remote.branch)
    repository.remote = remote
    return repository


def test_versions_view_answers_every_kind_of_path(repo):
    view = VersionsView(OWNER, repo, FileVersions(repo), HandleTable(), mount_time=0)
    first = "2020-01-02_09-00-00-" + repo.remote.first[:10]
    second = "2020-01-03_09-00-00-" + repo.remote.second[:10]
    assert view.readdir("/", None) == [".", "..", "d", "link"]
    assert view.readdir("/d/f.txt", None) == [".", "..", first, second]
    assert [name for name, _attrs in view.readdir_with_attrs("/d/f.txt")] == [".", "..", first, second]
    assert view.readdir_with_attrs("/d/f.txt")[2][1] == view.getattr(f"/d/f.txt/{first}")
    fh = view.open(f"/d/f.txt/{first}", os.O_RDONLY)
    assert view.read(f"/d/f.txt/{first}", 10, 0, fh) == b"1\n"
    view.release(f"/d/f.txt/{first}", fh)
    assert view.readlink(f"/link/{second}") == "d/f.txt"
    assert errno_of(view.readlink, f"/d/f.txt/{first}") == errno.EINVAL
    assert errno_of(view.open, "/d/f.txt", os.O_RDONLY) == errno.EISDIR
    assert errno_of(view.open, f"/d/f.txt/{first}", os.O_WRONLY) == errno.EROFS
    assert errno_of(view.readdir, f"/d/f.txt/{first}", None) == errno.ENOTDIR
    for missing in ("/nothing", "/d/nothing", "/d/f.txt/2020-01-01_00-00-00-0000000000", f"/d/{first}",
                    f"/d/f.txt/{first}/below"):
        assert errno_of(view.getattr, missing) == errno.ENOENT, missing


def test_commit_link_view(repo):
    days = CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor)
    link = CommitLinkView(OWNER, days, sha=repo.remote.second[:7])
    assert link.readlink("/") == "2020-01-03/09-00-00-" + repo.remote.second[:10]
    assert link.getattr("/")["st_size"] == len(link.readlink("/"))
    assert errno_of(link.readdir, "/", None) == errno.ENOTDIR
    unknown = CommitLinkView(OWNER, days, sha="0000000")
    assert errno_of(unknown.getattr, "/") == errno.ENOENT
    assert errno_of(unknown.readlink, "/") == errno.ENOENT


def test_status_folder_serves_its_files_and_lists_the_folders_beside_them():
    view = GeneratedFilesView(OWNER, {"status": lambda: b"{}\n", "metrics": lambda: b"# m\n"}, HandleTable(),
                              mount_time=0, folders=("conflicts", "versions"))
    assert view.readdir("/", None) == [".", "..", "status", "metrics", "conflicts", "versions"]
    assert view.getattr("/metrics")["st_size"] == 4
    fh = view.open("/metrics", os.O_RDONLY)
    assert view.read("/metrics", 100, 0, fh) == b"# m\n"
    view.release("/metrics", fh)
    assert errno_of(view.getattr, "/other") == errno.ENOENT
    assert errno_of(view.readdir, "/status", None) == errno.ENOTDIR
    assert errno_of(view.open, "/status", os.O_RDWR) == errno.EROFS
    assert errno_of(view.open, "/", os.O_RDONLY) == errno.EISDIR
