"""Layer 3: history/<commit id> on a real mount: a relative symlink to the commit's folder,
by full sha or any unique prefix of at least 7 hex digits, never listed."""

import errno
import os

import pytest

from helpers import errno_of, git, history_folder, wait_for


def test_a_commit_by_its_id_is_a_relative_link_to_its_folder(remote, mount_gitfs, local_timezone):
    local_timezone("XYZ+5")
    first = remote.head()
    second = remote.commit({"testing": "second version\n"}, "second", date="2020-01-02T02:00:00+0000")
    mount = mount_gitfs(remote)
    for sha, text in ((first, "just testing around here\n"), (second, "second version\n")):
        day, name = history_folder(remote, sha)
        for length in (7, 10, 23, 40):
            link = mount.history / sha[:length]
            assert os.path.islink(link)
            assert os.readlink(link) == f"{day}/{name}"
            assert (link / "testing").read_text() == text
            assert os.path.samefile(link, mount.history / day / name)
    assert history_folder(remote, second)[0] == "2020-01-01"  # the local day, as the folder it points at
    # Reached by name only: history/ lists days, nothing else.
    assert all(entry[:4].isdigit() and entry.count("-") == 2 for entry in os.listdir(mount.history))
    assert sorted(os.listdir(mount.path)) == ["current", "history"]


@pytest.mark.parametrize("name", ["0000000", "0" * 40, "SHORT6", "abcdef", "ABCDEF0123", "g123456"])
def test_an_unknown_or_too_short_id_is_enoent(remote, mount_gitfs, name):
    mount = mount_gitfs(remote)
    assert remote.head()[:len(name)] != name
    assert errno_of(os.lstat, mount.history / name) == errno.ENOENT
    assert errno_of(os.lstat, mount.history / remote.head()[:6]) == errno.ENOENT


def test_the_link_is_read_only(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    link = mount.history / remote.head()[:12]
    assert errno_of(os.unlink, link) == errno.EROFS
    assert errno_of(os.rename, link, mount.history / "x") == errno.EROFS
    head = remote.head()
    not_a_prefix = head[:7] + ("1" if head[7] == "0" else "0")  # head[:8] would name the commit (EEXIST)
    assert errno_of(os.symlink, "x", mount.history / not_a_prefix) == errno.EROFS
    assert os.path.islink(link)


def test_a_new_commit_on_the_remote_is_found_by_its_id(remote, mount_gitfs):
    mount = mount_gitfs(remote, fetch_timeout=1)
    assert os.listdir(mount.history / remote.head()[:7] / "")
    remote.commit({"fresh": "new\n"}, "fresh", push=False)
    sha = git("rev-parse", "HEAD", cwd=remote.work).strip()
    assert not os.path.lexists(mount.history / sha[:9])  # not on the remote yet: unknown
    git("push", "-q", "origin", remote.branch, cwd=remote.work)
    wait_for(lambda: os.path.lexists(mount.history / sha[:9]), timeout=20, message="history/<new sha>")
    assert (mount.history / sha / "fresh").read_text() == "new\n"
    assert os.readlink(mount.history / sha) == "/".join(history_folder(remote, sha))
