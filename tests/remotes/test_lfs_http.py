"""Git LFS over HTTP(S): giftless behind the nginx that serves git, basic auth on the batch
API, the real git-lfs client as the other person (the `lfs_http` fixture).

What git-lfs pushed reads as content in current/ and history/; what is written through the
mount reaches giftless before its pointer reaches the remote, and a fresh git-lfs clone gets
its bytes; an object the server lacks is EIO and reported, never a deletion; while the LFS
server is down or refuses the password, writes go on and the branch waits; the remote's
password never goes to a host a committed .lfsconfig names; a small write never waits for
a big upload (nginx paces it).
"""

from __future__ import annotations

import errno
import hashlib
import os
from types import SimpleNamespace

import pytest

from gitfs.lfs import pointer
from helpers import LFS_BIG, commit_marker, git, git_lfs, git_status_with_lfs, read_status, wait_for, wait_synced
from servers import HTTP_PASSWORD, HTTP_USER

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")

def over(url: str, lfs_http) -> SimpleNamespace:
    """The remote as mount_gitfs and wait_synced see it: reached at url."""
    return SimpleNamespace(url=url, head=lfs_http.remote.head)


def mount_http(lfs_http, mount_gitfs, **options):
    return mount_gitfs(over(lfs_http.http_url, lfs_http), username=HTTP_USER, password=HTTP_PASSWORD, **options)


def access_log(lfs_http) -> list[str]:
    return (lfs_http.nginx.directory / "access.log").read_text().splitlines()


def test_content_pushed_by_git_lfs_reads_right_over_http(lfs_http, mount_gitfs):
    first = lfs_http.remote.head()
    changed = os.urandom(300_000)
    lfs_http.remote.commit({"big.bin": changed}, "big.bin changed")
    assert lfs_http.giftless.object_path(pointer.parse(lfs_http.remote.show("big.bin")).oid) is not None
    mount = mount_http(lfs_http, mount_gitfs)
    assert os.stat(mount.current / "big.bin").st_size == len(changed)
    assert (mount.current / "big.bin").read_bytes() == changed
    assert (mount.current / "small.bin").read_bytes() == b"tiny\n"
    old = mount.history / first[:7] / "big.bin"  # an older commit's object: fetched on first open
    assert os.stat(old).st_size == len(LFS_BIG)
    assert old.read_bytes() == LFS_BIG
    assert any("/org/remote.git/info/lfs/objects/batch" in line and f"{HTTP_USER} " in line
               for line in access_log(lfs_http))


def test_content_reads_right_over_https_with_the_test_ca(lfs_http, mount_gitfs):
    mount = mount_gitfs(over(lfs_http.https_url, lfs_http), username=HTTP_USER, password=HTTP_PASSWORD,
                        ssl_ca_file=lfs_http.ca.cert)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    assert (mount.history / lfs_http.remote.head()[:7] / "small.bin").read_bytes() == b"tiny\n"


def test_written_files_go_to_giftless_and_git_lfs_gets_them(lfs_http, mount_gitfs, tmp_path):
    mount = mount_gitfs(over(lfs_http.https_url, lfs_http), username=HTTP_USER, password=HTTP_PASSWORD,
                        ssl_ca_file=lfs_http.ca.cert)
    content = os.urandom(3 * 1024 * 1024)
    (mount.current / "new.bin").write_bytes(content)
    wait_for(lambda: "new.bin" in lfs_http.remote.files(), timeout=60, message="new.bin on the remote")
    text = lfs_http.remote.show("new.bin")
    (tmp_path / "pointer").write_bytes(text)
    git_lfs("pointer", "--check", "--strict", f"--file={tmp_path / 'pointer'}", cwd=tmp_path)
    made = pointer.parse(text)
    stored = lfs_http.giftless.object_path(made.oid)
    assert stored is not None and stored.read_bytes() == content

    clone = tmp_path / "fresh"
    # git-lfs is set up after the clone (no system config here): pointers first, then the pull.
    git("clone", "-q", "-c", f"credential.helper=store --file={lfs_credentials(lfs_http)}", lfs_http.http_url,
        str(clone))
    git_lfs("install", "--local", cwd=clone)
    git_lfs("pull", cwd=clone)
    assert (clone / "new.bin").read_bytes() == content
    assert (clone / "big.bin").read_bytes() == LFS_BIG


def lfs_credentials(lfs_http):
    return lfs_http.remote.root.parent / "git-credentials"


def test_a_missing_object_is_eio_reported_and_never_deleted(lfs_http, mount_gitfs, tmp_path):
    ghost = pointer.Pointer("cd" * 32, 5151)
    plain = tmp_path / "plain"
    git("clone", "-q", "-c", f"credential.helper=store --file={lfs_credentials(lfs_http)}", lfs_http.http_url,
        str(plain))
    (plain / "ghost.bin").write_bytes(ghost.encode())
    git("add", "ghost.bin", cwd=plain)
    git("commit", "-q", "-m", "a pointer without its object", cwd=plain)
    git("-c", f"credential.helper=store --file={lfs_credentials(lfs_http)}", "push", "-q", "origin", "main",
        cwd=plain)
    mount = mount_http(lfs_http, mount_gitfs, expect_errors=True)
    with pytest.raises(OSError) as raised:
        (mount.current / "ghost.bin").read_bytes()
    assert raised.value.errno == errno.EIO
    (mount.current / "hello.txt").write_text("hello\n")
    wait_for(lambda: "hello.txt" in lfs_http.remote.files(), timeout=60, message="hello.txt on the remote")
    wait_synced(mount)
    assert lfs_http.remote.show("ghost.bin") == ghost.encode()
    (entry,) = read_status(mount)["lfs_missing"]
    assert entry["oid"] == ghost.oid and entry["path"] == "ghost.bin" and "404" in entry["error"]
    assert f"{ghost.oid}" in mount.log_text()


def content_or_none(path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def test_files_left_as_pointers_get_their_content_once_the_server_answers(lfs_http, mount_gitfs):
    """giftless is down at mount: the LFS files are EIO in current/ (with their objects'
    sizes) and reported; once it is back, a fetch round gets their objects and current/
    shows their content and size, the reports go, and nothing was ever committed for them."""
    head = lfs_http.remote.head()
    lfs_http.giftless.stop()
    mount = mount_http(lfs_http, mount_gitfs, expect_errors=True)
    with pytest.raises(OSError) as raised:
        (mount.current / "big.bin").read_bytes()
    assert raised.value.errno == errno.EIO
    assert os.stat(mount.current / "big.bin").st_size == len(LFS_BIG)  # the object's size, as `ls -l` shows it
    assert {entry["path"] for entry in read_status(mount)["lfs_missing"]} == {"big.bin", "small.bin"}
    (mount.current / "hello.txt").write_text("written while the LFS server is down\n")
    wait_for(lambda: "hello.txt" in lfs_http.remote.files(), timeout=60, message="hello.txt on the remote")

    lfs_http.giftless.start()
    wait_for(lambda: content_or_none(mount.current / "big.bin") == LFS_BIG, timeout=60,
             message="big.bin's content in current/")
    assert os.stat(mount.current / "big.bin").st_size == len(LFS_BIG)
    assert (mount.current / "small.bin").read_bytes() == b"tiny\n"
    wait_for(lambda: read_status(mount)["lfs_missing"] == [], timeout=30, message="the reports gone")
    commit_marker(mount, lfs_http.remote)  # whatever the mount would commit of the content that came is up too
    assert git("log", "--format=%H", f"{head}..main", "--", "big.bin", "small.bin",
               cwd=lfs_http.remote.bare) == ""
    assert lfs_http.remote.show("big.bin") == lfs_http.remote.show("big.bin", head)
    assert git_status_with_lfs(mount.repo_path) == ""  # git with git-lfs's filters agrees: no change


def assert_held_back(mount, lfs_http, head, name: str, words: str) -> None:
    wait_for(lambda: words in ((read_status(mount).get("last_push") or {}).get("error") or ""), timeout=60,
             message=f"the failed upload ({words}) in the status")
    assert lfs_http.remote.head() == head
    assert name not in lfs_http.remote.files()


def test_giftless_down_holds_the_push_until_it_is_back(lfs_http, mount_gitfs):
    mount = mount_http(lfs_http, mount_gitfs, expect_errors=True)
    head = lfs_http.remote.head()
    lfs_http.giftless.stop()
    content = os.urandom(200_000)
    (mount.current / "held.bin").write_bytes(content)
    (mount.current / "also.txt").write_text("written while the LFS server is down\n")
    assert_held_back(mount, lfs_http, head, "held.bin", "LFS upload failed")
    assert (mount.current / "held.bin").read_bytes() == content  # writes go on
    lfs_http.giftless.start()
    wait_for(lambda: "held.bin" in lfs_http.remote.files(), timeout=90, message="held.bin pushed after all")
    stored = lfs_http.giftless.object_path(pointer.parse(lfs_http.remote.show("held.bin")).oid)
    assert stored is not None and stored.read_bytes() == content


def test_a_refused_password_holds_the_push_until_it_is_right(lfs_http, mount_gitfs):
    mount = mount_http(lfs_http, mount_gitfs, expect_errors=True)
    head = lfs_http.remote.head()
    lfs_http.nginx.set_password("changed-on-the-lfs-server", lfs_only=True)
    content = os.urandom(100_000)
    (mount.current / "held.bin").write_bytes(content)
    assert_held_back(mount, lfs_http, head, "held.bin", "refused the credentials")
    lfs_http.nginx.set_password(HTTP_PASSWORD, lfs_only=True)
    wait_for(lambda: "held.bin" in lfs_http.remote.files(), timeout=90, message="held.bin pushed after all")
    assert lfs_http.giftless.object_path(pointer.parse(lfs_http.remote.show("held.bin")).oid) is not None


SLOW_UPLOAD_BYTES = 24 << 20  # at 2 MiB/s: about 12 s on the way


@pytest.mark.parametrize("lfs_http", [{"upload_rate": "2m"}], indirect=True)
def test_a_small_write_never_waits_for_a_big_upload(lfs_http, mount_gitfs):
    """nginx lets objects go up at 2 MiB/s. While a big one is on its way, a small file is
    written and closed through current/: that returned while the server held only part of
    the object (an order, not a time), and the small file reaches the remote with the big
    one or after it, never before (the ref waits for the upload)."""
    mount = mount_http(lfs_http, mount_gitfs)
    content = os.urandom(SLOW_UPLOAD_BYTES)
    oid = hashlib.sha256(content).hexdigest()
    (mount.current / "video.bin").write_bytes(content)

    def stored_size() -> int:
        stored = lfs_http.giftless.object_path(oid)
        return stored.stat().st_size if stored is not None else 0

    wait_for(lambda: stored_size() > 0, timeout=60, message="the upload of video.bin under way")
    (mount.current / "note.txt").write_text("written while the big file goes up\n")
    assert stored_size() < len(content), "the small write returned only after the upload"
    assert "video.bin" not in lfs_http.remote.files()
    wait_for(lambda: "note.txt" in lfs_http.remote.files(), timeout=120, message="note.txt on the remote")
    assert "video.bin" in lfs_http.remote.files()
    assert lfs_http.giftless.object_path(oid).read_bytes() == content
    assert lfs_http.remote.show("note.txt") == b"written while the big file goes up\n"


def test_a_committed_lfsconfig_for_another_host_gets_no_password(lfs_http, mount_gitfs):
    """localhost is another host than 127.0.0.1 (the same nginx answers both): the batch request
    to it goes without the remote's password, is refused, and the files are reported missing."""
    other = lfs_http.http_url.replace("127.0.0.1", "localhost") + "/info/lfs"
    lfs_http.remote.commit({".lfsconfig": f"[lfs]\n\turl = {other}\n"}, "LFS objects elsewhere")
    mount = mount_http(lfs_http, mount_gitfs, expect_errors=True)
    with pytest.raises(OSError) as raised:
        (mount.current / "big.bin").read_bytes()
    assert raised.value.errno == errno.EIO
    to_other = [line for line in access_log(lfs_http) if line.startswith("localhost:")]
    assert to_other and all(line.split()[1] == "-" and line.endswith(" 401") for line in to_other), to_other
    assert "none may be sent there" in read_status(mount)["lfs_missing"][0]["error"]


def test_ssh_remote_gets_its_lfs_server_from_git_lfs_authenticate(lfs_ssh, ssh_keys, mount_gitfs):
    remote = lfs_ssh.http.remote
    mount = mount_gitfs(SimpleNamespace(url=lfs_ssh.url, head=remote.head), ssh_key=ssh_keys.plain.private)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    content = os.urandom(150_000)
    (mount.current / "over-ssh.bin").write_bytes(content)
    wait_for(lambda: "over-ssh.bin" in remote.files(), timeout=60, message="over-ssh.bin on the remote")
    stored = lfs_ssh.http.giftless.object_path(pointer.parse(remote.show("over-ssh.bin")).oid)
    assert stored is not None and stored.read_bytes() == content
    asked = lfs_ssh.log.read_text().splitlines()
    path = str(remote.bare)
    assert f"git-lfs-authenticate '{path}' download" in asked and f"git-lfs-authenticate '{path}' upload" in asked


def test_ssh_server_without_git_lfs_authenticate_falls_back_to_https(lfs_ssh, ssh_keys, mount_gitfs):
    """Exit 127: the derived https://127.0.0.1/... endpoint (nothing listens on 443 here)."""
    lfs_ssh.refuse.write_text("")
    remote = lfs_ssh.http.remote
    mount = mount_gitfs(SimpleNamespace(url=lfs_ssh.url, head=remote.head), ssh_key=ssh_keys.plain.private,
                        expect_errors=True)
    with pytest.raises(OSError) as raised:
        (mount.current / "big.bin").read_bytes()
    assert raised.value.errno == errno.EIO
    assert "download" in lfs_ssh.log.read_text()
    assert f"https://127.0.0.1{remote.bare}/info/lfs" in mount.log_text()
    assert "no git-lfs-authenticate" in mount.log_text()
