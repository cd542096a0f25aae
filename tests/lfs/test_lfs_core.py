"""Layer 1: the LFS core (gitfs/lfs) against the real git-lfs client, no mount, no network.

The client is the oracle: which texts are pointers (`git lfs pointer --check`), what a
canonical pointer is (`--strict`), where objects live (git-lfs's own clone and push
put them there, and `git lfs smudge` / `git lfs pull` read what GitFS put there).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
import threading

import pytest

from gitfs.lfs import attributes, endpoint, pointer
from gitfs.lfs.content import LfsContent
from gitfs.lfs.errors import ObjectCorrupt, ObjectMissing, ObjectPending, UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.store import ObjectStore, standalone_store
from gitfs.lfs.transfer import StandaloneTransfer
from gitfs.repo.commits.filter_source import COMMIT_ATTRIBUTES
from gitfs.repo.repository import Repository
from helpers import LFS_BIG, LfsRemote, clone_of, git, git_lfs, lfs_clone, lfs_repository, require_git_lfs

OID = "4" * 64
V1 = "https://git-lfs.github.com/spec/v1"

# (name, text): every text here is judged by git-lfs itself in test_parse_agrees_with_git_lfs.
VARIANTS = [
    ("canonical", f"version {V1}\noid sha256:{OID}\nsize 12\n"),
    ("crlf", f"version {V1}\r\noid sha256:{OID}\r\nsize 12\r\n"),
    ("surrounding whitespace", f"\n  version {V1}\noid sha256:{OID}\nsize 12\n\n  "),
    ("no final newline", f"version {V1}\noid sha256:{OID}\nsize 12"),
    ("empty line inside", f"version {V1}\noid sha256:{OID}\n\nsize 12\n"),
    ("hawser version", f"version https://hawser.github.com/spec/v1\noid sha256:{OID}\nsize 12\n"),
    ("git-media version", f"version http://git-media.io/v/2\noid sha256:{OID}\nsize 12\n"),
    ("size with plus", f"version {V1}\noid sha256:{OID}\nsize +12\n"),
    ("size with leading zero", f"version {V1}\noid sha256:{OID}\nsize 012\n"),
    ("size zero", f"version {V1}\noid sha256:{OID}\nsize 0\n"),
    ("unknown version", f"version https://example.com/v9\noid sha256:{OID}\nsize 12\n"),
    ("keys out of order", f"oid sha256:{OID}\nversion {V1}\nsize 12\n"),
    ("short oid", f"version {V1}\noid sha256:{OID[1:]}\nsize 12\n"),
    ("upper-case oid", f"version {V1}\noid sha256:{OID.replace('4', 'A')}\nsize 12\n"),
    ("sha1", f"version {V1}\noid sha1:{OID}\nsize 12\n"),
    ("negative size", f"version {V1}\noid sha256:{OID}\nsize -1\n"),
    ("size not a number", f"version {V1}\noid sha256:{OID}\nsize 12x\n"),
    ("extra key", f"version {V1}\noid sha256:{OID}\nsize 12\nfoo bar\n"),
    ("two spaces", f"version {V1}\noid  sha256:{OID}\nsize 12\n"),
    ("plain text", "hello\n" * 30),
    ("pointer then content", f"version {V1}\noid sha256:{OID}\nsize 12\n" + "x" * 1100),
]


@pytest.fixture(autouse=True)
def _git_lfs():
    require_git_lfs()


@pytest.mark.parametrize("name,text", VARIANTS, ids=[name for name, _ in VARIANTS])
def test_parse_agrees_with_git_lfs(tmp_path, name, text):
    """A text is read as a pointer exactly when git-lfs reads it as one."""
    path = tmp_path / "candidate"
    path.write_bytes(text.encode())
    git_says = git_lfs("pointer", "--check", f"--file={path}", cwd=tmp_path, check=False).returncode == 0
    parsed = pointer.parse(text.encode())
    assert (parsed is not None) == git_says, name
    if parsed is not None:
        assert parsed == Pointer(OID, int(text.split("size ")[1].split()[0]))


def test_parse_refuses_extensions(tmp_path):
    """git-lfs reads a pointer with extensions as a pointer; its content needs a program GitFS
    cannot run, so parsing says so instead of passing it off as a plain file."""
    text = f"version {V1}\next-0-foo sha256:{'5' * 64}\noid sha256:{OID}\nsize 12\n".encode()
    (tmp_path / "p").write_bytes(text)
    git_lfs("pointer", "--check", "--strict", f"--file={tmp_path / 'p'}", cwd=tmp_path)
    with pytest.raises(UnsupportedPointer, match="ext-0-foo"):
        pointer.parse(text)


@pytest.mark.parametrize("size", [1, 1000, 3_000_000])
def test_store_add_names_content_as_git_lfs_does(tmp_path, size):
    """The pointer ObjectStore.add returns is byte for byte git-lfs's, and canonical (--strict)."""
    content = os.urandom(size)
    source = tmp_path / "content"
    source.write_bytes(content)
    store = ObjectStore(str(tmp_path / "lfs"))
    with open(source, "rb") as handle:
        made = store.add(handle)
    theirs = git_lfs("pointer", f"--file={source}", cwd=tmp_path).stdout
    assert made.encode() == theirs
    assert pointer.parse(theirs) == made
    (tmp_path / "pointer").write_bytes(made.encode())
    git_lfs("pointer", "--check", "--strict", f"--file={tmp_path / 'pointer'}", cwd=tmp_path)
    with store.open(made) as handle:
        assert handle.read() == content
    assert stat.S_IMODE(os.stat(store.path(made.oid)).st_mode) == 0o644
    assert os.listdir(tmp_path / "lfs" / "tmp") == []


def test_store_layout_is_git_lfs_own(lfs_remote, tmp_path):
    """A clone's .git/lfs is the store git-lfs filled; git-lfs reads what GitFS adds there."""
    work = lfs_remote.work
    big = pointer.parse(git("show", "HEAD:big.bin", cwd=work).encode())
    assert big is not None and big.size == 2 * 1024 * 1024
    store = ObjectStore.of_clone(str(work / ".git"))
    assert store.has(big)
    with store.open(big) as handle:
        assert handle.read() == (work / "big.bin").read_bytes()

    content = b"added by GitFS\n" * 1000
    added = store.add(io.BytesIO(content))
    smudged = git_lfs("smudge", "new.bin", cwd=work, data=added.encode()).stdout
    assert smudged == content


def test_store_refuses_wrong_bytes(tmp_path):
    store = ObjectStore(str(tmp_path / "lfs"))
    content = b"the real content\n"
    right = ObjectStore(str(tmp_path / "other")).add(io.BytesIO(content))
    for wrong in (b"the real c0ntent\n", content + b"more", content[:-1]):
        with pytest.raises(ObjectCorrupt, match=right.oid):
            store.add_checked(io.BytesIO(wrong), right)
        assert not store.has(right)
    assert os.listdir(tmp_path / "lfs" / "tmp") == []
    with pytest.raises(ObjectMissing, match=right.oid):
        store.open(right)
    store.add_checked(io.BytesIO(content), right)
    assert store.has(right)


def test_store_open_refuses_an_object_of_another_size(tmp_path):
    store = ObjectStore(str(tmp_path / "lfs"))
    made = store.add(io.BytesIO(b"0123456789"))
    os.truncate(store.path(made.oid), 5)
    assert not store.has(made)
    with pytest.raises(ObjectCorrupt, match="5 bytes"):
        store.open(made)


def test_standalone_store_of_path_remotes(lfs_remote, tmp_path):
    """git-lfs pushed to the bare path remote's lfs/ folder; GitFS finds it there, by path
    and by file:// URL, and nothing for network remotes."""
    big = pointer.parse(lfs_remote.show("big.bin"))
    assert big is not None and lfs_remote.object_path(big.oid).is_file()
    for url in (str(lfs_remote.bare), f"file://{lfs_remote.bare}"):
        store = standalone_store(url)
        assert store is not None and store.has(big), url
    relative = os.path.relpath(lfs_remote.bare)
    assert standalone_store(relative).root == str(lfs_remote.bare / "lfs")
    assert standalone_store(str(lfs_remote.work)).root == str(lfs_remote.work / ".git" / "lfs")
    for url in ("ssh://host/o/r.git", "user@host:o/r.git", "host:r.git", "https://host/o/r.git",
                "git://host/r.git"):
        assert standalone_store(url) is None, url


def test_objects_copied_to_a_path_remote_reach_git_lfs_clones(lfs_remote, tmp_path):
    """An object GitFS copies into a path remote's store, with its pointer pushed by plain
    git, is what a fresh `git clone` + `git lfs pull` checks out."""
    plain = tmp_path / "plain"
    clone_of(lfs_remote, plain)  # no git-lfs in it: pointers stay pointers
    local = ObjectStore.of_clone(str(plain / ".git"))
    content = os.urandom(300_000)
    made = local.add(io.BytesIO(content))
    local.copy_to(standalone_store(str(lfs_remote.bare)), made)
    (plain / "photo.bin").write_bytes(made.encode())
    git("add", "photo.bin", cwd=plain)
    git("commit", "-q", "-m", "photo", cwd=plain)
    git("push", "-q", "origin", "main", cwd=plain)

    fresh = lfs_clone(str(lfs_remote.bare), tmp_path / "fresh")
    assert (fresh / "photo.bin").read_bytes() == content
    assert (fresh / "big.bin").read_bytes() == LFS_BIG


def test_lfs_paths_from_attributes(lfs_remote, tmp_path):
    work = lfs_remote.work
    repo = Repository(str(work), "main")
    assert attributes.is_lfs_path(repo, "big.bin")
    assert attributes.is_lfs_path(repo, "deep/er/new.bin")
    assert not attributes.is_lfs_path(repo, "notes.txt")
    assert attributes.tip_uses_lfs(repo)
    first = repo.branch_tip()

    # A later commit stops tracking *.bin: the working tree's rules say no; where pygit2 reads
    # a commit's attributes, the earlier commit's rules still say yes for its files.
    (work / ".gitattributes").write_text("*.txt text\n")
    git("add", ".gitattributes", cwd=work)
    git("commit", "-q", "-m", "untrack", cwd=work)
    repo = Repository(str(work), "main")
    assert not attributes.is_lfs_path(repo, "big.bin")
    assert not attributes.tip_uses_lfs(repo)
    assert attributes.is_lfs_path(repo, "big.bin", commit=first) == COMMIT_ATTRIBUTES


@pytest.mark.parametrize("text,uses", [
    (b"*.bin filter=lfs diff=lfs merge=lfs -text\n", True),
    (b"# *.bin filter=lfs\n*.txt text\n", False),
    (b"*.psd -filter\n", False),
    (b"  docs/*.pdf   filter=lfs  \r\n", True),
    (b"*.bin filter=lfsx\n", False),
    (b"", False),
])
def test_rules_use_lfs(text, uses):
    assert attributes.rules_use_lfs(text) == uses


def test_lfs_remote_fixture_is_real_lfs(lfs_remote):
    """Guard for the rig: the remote holds pointers, not content, and git-lfs's objects."""
    assert pointer.parse(lfs_remote.show("small.bin")) is not None
    assert lfs_remote.show("notes.txt") == b"plain\n"
    assert isinstance(lfs_remote, LfsRemote)


def test_endpoint_order_and_lfsconfig_limits(tmp_path):
    """option > the clone's git config > a committed .lfsconfig > the remote; a .lfsconfig
    naming a folder of this machine counts only for a remote that is itself a path."""
    work = tmp_path / "work"
    git("init", "-q", str(work))
    repo = Repository(str(work), "main")
    (work / ".lfsconfig").write_text("[lfs]\n\turl = file:///srv/objects.git\n")
    assert endpoint.find(repo, "/srv/remote.git") == endpoint.Endpoint(
        "file:///srv/objects.git", ".lfsconfig lfs.url")
    for network in ("https://host/o/r.git", "ssh://host/r.git", "host:r.git"):
        assert endpoint.find(repo, network) == endpoint.Endpoint(network, "the remote")
    (work / ".lfsconfig").write_text("[lfs]\n\turl = https://lfs.example.org/o/r\n")
    assert endpoint.find(repo, "https://host/o/r.git").url == "https://lfs.example.org/o/r"
    git("config", "remote.origin.lfsurl", "/srv/from-config.git", cwd=work)
    assert endpoint.find(repo, "https://host/o/r.git").source == "git config remote.origin.lfsurl"
    git("config", "lfs.url", "/srv/lfs-url.git", cwd=work)
    assert endpoint.find(repo, "/x.git").url == "/srv/lfs-url.git"
    assert endpoint.find(repo, "/x.git", "/srv/option.git").source == "option lfs_url"


class GatedTransfer:
    """The real StandaloneTransfer, held at a gate: a download that takes as long as the test says."""

    def __init__(self, transfer):
        self.transfer = transfer
        self.gate = threading.Event()

    def download(self, pointers):
        self.gate.wait(60)
        return self.transfer.download(pointers)


def test_open_waits_for_a_download_only_so_long(lfs_remote, tmp_path):
    """An object opened for the first time downloads in a thread of its own; the open waits
    a bounded time, then fails with ObjectPending (not reported as missing), and a later
    open finds the object."""
    big = pointer.parse(lfs_remote.show("big.bin"))
    local = ObjectStore(str(tmp_path / "lfs"))
    gated = GatedTransfer(StandaloneTransfer(local, standalone_store(str(lfs_remote.bare))))
    reported = []
    source = Repository(str(lfs_remote.work), "main")
    content = LfsContent(local, gated, source, on_missing=lambda *args: reported.append(args))
    content.download_wait = 0.2
    with pytest.raises(ObjectPending):
        content.open(big, "big.bin")
    gated.gate.set()
    content.download_wait = 60
    reader = content.open(big, "big.bin")
    try:
        assert reader.read(10, 256) == bytes(range(10))
    finally:
        reader.close()
    assert reported == []
    ghost = Pointer("ef" * 32, 7)
    with pytest.raises(ObjectMissing):
        content.open(ghost, "ghost.bin")
    assert [(path, oid) for path, oid, _why in reported] == [("ghost.bin", ghost.oid)]


@pytest.mark.parametrize("remote_url, expected", [
    ("https://host/o/r", "https://host/o/r.git/info/lfs"),
    ("https://host/o/r.git", "https://host/o/r.git/info/lfs"),
    ("https://host:8443/o/r.git/", "https://host:8443/o/r.git/info/lfs"),
    ("https://alice:pw@host/o/r.git", "https://host/o/r.git/info/lfs"),
    ("http://127.0.0.1:8080/o/r.git", "http://127.0.0.1:8080/o/r.git/info/lfs"),
    ("ssh://git@host:2222/o/r.git", "https://host/o/r.git/info/lfs"),
    ("ssh://host/o/r", "https://host/o/r.git/info/lfs"),
    ("git@host:o/r.git", "https://host/o/r.git/info/lfs"),
    ("git://host/o/r.git", "https://host/o/r.git/info/lfs"),
])
def test_server_url_derived_from_the_remote(remote_url, expected):
    assert endpoint.server_url(endpoint.Endpoint(remote_url, endpoint.FROM_REMOTE)) == expected


def test_server_url_given_is_used_as_it_is():
    given = endpoint.Endpoint("https://lfs.example.org/o/r/", "git config lfs.url")
    assert endpoint.server_url(given) == "https://lfs.example.org/o/r"
    assert endpoint.server_url(endpoint.Endpoint("/srv/r.git", endpoint.FROM_REMOTE)) is None


def test_credentials_go_only_to_the_remotes_own_server_or_lfs_url():
    remote = "https://host/o/r.git"

    def allowed(url, source):
        where = endpoint.Endpoint(url, source)
        return endpoint.may_authenticate(where, endpoint.server_url(where), remote)
    assert allowed(remote, endpoint.FROM_REMOTE)
    assert allowed("https://host:443/lfs", ".lfsconfig lfs.url")  # the same origin
    assert not allowed("https://other/lfs", ".lfsconfig lfs.url")
    assert not allowed("http://host/lfs", ".lfsconfig lfs.url")  # another scheme
    assert not allowed("https://host:8443/lfs", "git config lfs.url")  # another port
    assert allowed("https://other/lfs", endpoint.FROM_OPTION)
    ssh = endpoint.Endpoint("ssh://git@host/o/r.git", endpoint.FROM_REMOTE)
    assert not endpoint.may_authenticate(ssh, endpoint.server_url(ssh), ssh.url)


def test_the_cleaner_never_follows_a_folder_replaced_by_a_link(lfs_remote, tmp_path):
    """A folder of the working tree replaced by a symlink to a folder outside the clone
    (by a remote change, by a program working in the clone directly) after a write in it
    was queued: cleaning that path reads nothing through the link, so the file outside
    is neither copied into the store nor staged. The folder outside is another checkout
    of a project that uses LFS: its own rules make the path an LFS one for libgit2 (which
    resolves the link), so the attributes do not stop the cleaner by themselves."""
    clone, repo, lfs = lfs_repository(lfs_remote, tmp_path / "clone")
    (clone / "deep").mkdir()
    (clone / "deep" / "scan.bin").write_bytes(b"the user's own scan\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = b"a file outside the clone, never to be committed\n"
    (outside / "scan.bin").write_bytes(secret)
    (outside / ".gitattributes").write_text("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    (clone / "deep" / "scan.bin").unlink()
    (clone / "deep").rmdir()
    (clone / "deep").symlink_to(outside)

    repo.prepare_staging(["deep/scan.bin"])  # outside the freeze: hashes into the store
    root = os.open(clone, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as through_a_link:
            lfs.cleaner.clean(root, "deep/scan.bin")
    finally:
        os.close(root)
    assert through_a_link.value.errno == errno.ELOOP
    outside_object = Pointer(hashlib.sha256(secret).hexdigest(), len(secret))
    assert not lfs.store.has(outside_object)
    repo.stage_paths(["deep/scan.bin"])
    assert not [path for path in (entry.path for entry in repo.index()) if path.startswith("deep")]
