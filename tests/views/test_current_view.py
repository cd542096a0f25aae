"""Layer 2: CurrentView called directly, on a real clone, with a real queue and SyncState.

No FUSE and no sync worker: each test performs operations as FUSE would call them
and asserts on the working tree and on the CommitJobs queued for the sync worker.
"""

import errno
import os
import queue
import stat
import threading
import time

import pytest
from mfusepy import FuseOSError

from gitfs.cache_policy import WorktreeForgetter
from gitfs.handles import HandleTable
from gitfs.sync.jobs import CommitJob
from gitfs.sync.state import SyncState
from gitfs.views.allocation import FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE
from gitfs.views.base import Owner
from gitfs.views.current import CurrentView
from gitfs.views.index import IndexView
from gitfs.views.modes import UTIME_NOW, UTIME_OMIT
from helpers import OWNER, errno_of

MiB = 1024 * 1024


@pytest.fixture
def jobs():
    return queue.Queue()


@pytest.fixture
def handles():
    return HandleTable()


@pytest.fixture
def view(clone, jobs, handles):
    return CurrentView(OWNER, str(clone), handles, SyncState(idle_after=60, freeze_timeout=0.2),
                       jobs, max_size=MiB)


def queued(jobs):
    items = []
    while True:
        try:
            items.append(jobs.get_nowait())
        except queue.Empty:
            return items


def write_file(view, path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fh = view.create(path, 0o644, flags) if flags & os.O_CREAT else view.open(path, flags)
    if data:
        view.write(path, data, 0, fh)
    view.release(path, fh)


def refused(call, *args, codes=(errno.EACCES, errno.EPERM)):
    with pytest.raises(FuseOSError) as raised:
        call(*args)
    assert raised.value.errno in codes
    return raised.value.errno


# -- files -----------------------------------------------------------------------

def test_create_and_write_queue_one_update_at_release(view, jobs, clone):
    fh = view.create("/new", 0o644, os.O_WRONLY)
    assert view.write("/new", b"hello\n", 0, fh) == 6
    assert queued(jobs) == []  # nothing before release: the file is still being written
    view.release("/new", fh)
    assert queued(jobs) == [CommitJob("Update /new", add=("new",))]
    assert (clone / "new").read_bytes() == b"hello\n"


def test_create_without_write_is_created(view, jobs, clone):
    fh = view.create("/empty", 0o644, os.O_WRONLY)
    view.release("/empty", fh)
    assert queued(jobs) == [CommitJob("Created /empty", add=("empty",))]
    assert (clone / "empty").read_bytes() == b""


def test_open_for_writing_without_a_write_queues_nothing(view, jobs):
    fh = view.open("/testing", os.O_WRONLY)
    view.release("/testing", fh)
    fh = view.open("/testing", os.O_RDONLY)
    view.release("/testing", fh)
    assert queued(jobs) == []


def test_open_with_o_trunc_is_an_update(view, jobs, clone):
    fh = view.open("/testing", os.O_WRONLY | os.O_TRUNC)
    view.release("/testing", fh)
    assert queued(jobs) == [CommitJob("Update /testing", add=("testing",))]
    assert (clone / "testing").read_bytes() == b""


def test_append_writes_at_the_offset_given(view, jobs, clone):
    # The kernel computes append offsets; the view writes where it is told.
    fh = view.open("/testing", os.O_WRONLY | os.O_APPEND)
    size = (clone / "testing").stat().st_size
    view.write("/testing", b"more\n", size, fh)
    view.release("/testing", fh)
    assert (clone / "testing").read_bytes() == b"just testing around here\nmore\n"
    assert queued(jobs) == [CommitJob("Update /testing", add=("testing",))]


def test_read_through_a_handle(view):
    fh = view.open("/testing", os.O_RDONLY)
    assert view.read("/testing", 4, 5, fh) == b"test"
    view.release("/testing", fh)


def test_truncate(view, jobs, clone):
    view.truncate("/testing", 4)
    assert (clone / "testing").read_bytes() == b"just"
    assert queued(jobs) == [CommitJob("Update /testing", add=("testing",))]


def test_fallocate_punches_a_hole_and_allocates_and_queues_an_update_at_release(view, jobs, clone):
    (clone / "holes").write_bytes(b"x" * 3 * 4096)
    fh = view.open("/holes", os.O_RDWR)
    view.fallocate("/holes", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096, fh)
    view.fallocate("/holes", FALLOC_FL_KEEP_SIZE, 0, 8 * 4096, fh)
    assert os.path.getsize(clone / "holes") == 3 * 4096
    view.fallocate("/holes", 0, 0, 4 * 4096, fh)
    assert queued(jobs) == []
    view.release("/holes", fh)
    assert (clone / "holes").read_bytes() == b"x" * 4096 + bytes(4096) + b"x" * 4096 + bytes(4096)
    assert queued(jobs) == [CommitJob("Update /holes", add=("holes",))]


def test_fallocate_that_grows_a_file_past_max_size_is_efbig(view, jobs, clone):
    fh = view.create("/big", 0o644, os.O_WRONLY)
    view.fallocate("/big", 0, 0, MiB, fh)
    assert errno_of(view.fallocate, "/big", 0, MiB, 1, fh) == errno.EFBIG
    view.fallocate("/big", FALLOC_FL_KEEP_SIZE, MiB, 1, fh)  # the size stays
    view.release("/big", fh)
    assert os.path.getsize(clone / "big") == MiB


def test_fallocate_elsewhere_is_eopnotsupp_never_enosys():
    # ENOSYS would make the kernel stop sending fallocate for the whole mount, current/ too.
    view = IndexView(OWNER, entries=["current"], mount_time=0)
    assert errno_of(view.fallocate, "/current", 0, 0, 1, 1) == errno.EOPNOTSUPP


def test_unlink(view, jobs, clone):
    view.unlink("/testing")
    assert not (clone / "testing").exists()
    assert queued(jobs) == [CommitJob("Deleted /testing", remove=("testing",))]


def test_unlink_of_a_missing_file_is_enoent_and_queues_nothing(view, jobs):
    with pytest.raises(FileNotFoundError):
        view.unlink("/missing")
    assert queued(jobs) == []


def test_mknod_of_a_regular_file_and_refusal_of_a_fifo(view, jobs, clone):
    view.mknod("/node", stat.S_IFREG | 0o644, 0)
    assert (clone / "node").is_file()
    assert queued(jobs) == [CommitJob("Created /node", add=("node",))]
    refused(view.mknod, "/fifo", stat.S_IFIFO | 0o644, 0)
    assert not (clone / "fifo").exists()
    assert queued(jobs) == []


# -- directories -----------------------------------------------------------------------

def test_mkdir_writes_a_keep_and_queues_it(view, jobs, clone):
    view.mkdir("/dir", 0o755)
    assert (clone / "dir/.keep").is_file()
    assert queued(jobs) == [CommitJob("Create the /dir directory", add=("dir/.keep",))]
    assert view.readdir("/dir", 0) == [".", ".."]


def test_readdir_hides_keep_and_the_root_git(view, clone):
    (clone / "dir").mkdir()
    (clone / "dir/.keep").write_bytes(b"")
    (clone / "dir/.git").mkdir()  # a nested repository is shown
    assert ".git" not in view.readdir("/", 0)
    assert set(view.readdir("/", 0)) == {".", "..", "testing", "me", "dir"}
    assert set(view.readdir("/dir", 0)) == {".", "..", ".git"}


def test_readdir_with_attrs_gives_each_entry_what_getattr_gives(view, clone):
    (clone / "dir").mkdir()
    (clone / "dir/.keep").write_bytes(b"")
    (clone / "dir/sub").mkdir()
    (clone / "dir/sub/deep.txt").write_text("deep\n")
    os.symlink("testing", clone / "link")
    os.mkfifo(clone / "fifo")  # nothing GitFS makes, but a listing must not choke on it
    listed = dict(view.readdir_with_attrs("/"))
    assert sorted(listed) == [".", "..", "dir", "fifo", "link", "me", "testing"]
    assert listed["."] == listed[".."] == stat.S_IFDIR
    for name in ("dir", "fifo", "link", "me", "testing"):
        assert listed[name] == view.getattr("/" + name), name
    assert stat.S_ISLNK(listed["link"]["st_mode"])  # the link itself, never its target
    assert view.readdir_with_attrs("/dir") == [(".", stat.S_IFDIR), ("..", stat.S_IFDIR),
                                               ("sub", view.getattr("/dir/sub"))]
    assert view.readdir_with_attrs("/dir/sub")[2] == ("deep.txt", view.getattr("/dir/sub/deep.txt"))


def test_a_listing_with_types_only_gives_each_entry_s_kind(view, clone):
    (clone / "dir").mkdir()
    (clone / "dir/.keep").write_bytes(b"")
    os.symlink("testing", clone / "link")
    os.mkfifo(clone / "fifo")
    view.readdir_with_attrs("/")  # attributes handed over; nothing asked since: types next
    assert sorted(view.readdir_with_attrs("/")) == sorted([
        (".", stat.S_IFDIR), ("..", stat.S_IFDIR), ("testing", stat.S_IFREG), ("me", stat.S_IFREG),
        ("dir", stat.S_IFDIR), ("link", stat.S_IFLNK), ("fifo", None)])
    view.readdir_with_attrs("/dir")
    assert view.readdir_with_attrs("/dir") == [(".", stat.S_IFDIR), ("..", stat.S_IFDIR)]


def test_a_folder_listed_again_carries_types_until_the_kernel_asks_about_an_entry(view, clone):
    (clone / "dir").mkdir()
    (clone / "dir/a.txt").write_text("a\n")
    (clone / "dir/b.txt").write_text("b\n")
    types = [(".", stat.S_IFDIR), ("..", stat.S_IFDIR), ("a.txt", stat.S_IFREG), ("b.txt", stat.S_IFREG)]
    assert sorted(view.readdir_with_attrs("/dir"))[2][1] == view.getattr("/dir/a.txt")  # first: attributes
    view.readdir_with_attrs("/dir")  # the getattr above asked about an entry: attributes again
    assert sorted(view.readdir_with_attrs("/dir")) == types  # the kernel holds them all
    view.getattr("/dir/b.txt")  # a LOOKUP or GETATTR: the kernel lacked b.txt's
    assert isinstance(dict(view.readdir_with_attrs("/dir"))["b.txt"], dict)
    assert sorted(view.readdir_with_attrs("/dir")) == types
    fh = view.open("/dir/a.txt", os.O_RDONLY)
    assert view.read("/dir/a.txt", 10, 0, fh) == b"a\n"  # FUSE marks a.txt's atime stale after a READ
    view.release("/dir/a.txt", fh)
    assert isinstance(dict(view.readdir_with_attrs("/dir"))["a.txt"], dict)


def test_a_listing_shows_an_lfs_placeholder_at_its_object_s_size(clone, handles):
    (clone / "sub").mkdir()
    (clone / "sub/big.bin").write_text("pointer text\n")
    asked = []

    class Placeholders:  # what Git LFS answers for a file left holding its pointer's text
        def takes(self, relative):
            return False

        def placeholder(self, relative, fd):
            return False

        def shown_size(self, _root_fd, relative, size):
            asked.append(relative)
            return 5_000_000 if relative == "sub/big.bin" else None

    view = CurrentView(OWNER, str(clone), handles, SyncState(idle_after=60, freeze_timeout=0.2), queue.Queue(),
                       max_size=None, worktree_filter=Placeholders())
    listed = dict(view.readdir_with_attrs("/sub"))
    assert listed["big.bin"]["st_size"] == 5_000_000 == view.getattr("/sub/big.bin")["st_size"]
    assert asked == ["sub/big.bin", "sub/big.bin"]  # the path as getattr names it; asked for files only


def test_rmdir_removes_the_keep(view, jobs, clone):
    view.mkdir("/dir", 0o755)
    queued(jobs)
    view.rmdir("/dir")
    assert not (clone / "dir").exists()
    assert queued(jobs) == [CommitJob("Delete the /dir directory", remove=("dir/.keep",))]


def test_rmdir_of_a_directory_without_keep_queues_nothing(view, jobs, clone):
    # rm -rf: the files were unlinked one by one (each queued); the directory had no .keep.
    (clone / "plain").mkdir()
    view.rmdir("/plain")
    assert not (clone / "plain").exists()
    assert queued(jobs) == []


def test_rmdir_of_a_non_empty_directory_is_enotempty(view, jobs, clone):
    (clone / "full/sub").mkdir(parents=True)
    (clone / "full/.keep").write_bytes(b"")
    (clone / "full/sub/f").write_bytes(b"f")
    with pytest.raises(FuseOSError) as raised:
        view.rmdir("/full")
    assert raised.value.errno == errno.ENOTEMPTY
    assert (clone / "full/.keep").exists() and (clone / "full/sub/f").exists()
    assert queued(jobs) == []


# -- renames ------------------------------------------------------------------------

def test_rename_of_a_file_in_a_subdirectory(view, jobs, clone):
    (clone / "a/b").mkdir(parents=True)
    (clone / "a/b/f").write_bytes(b"f")
    view.rename("/a/b/f", "/a/g")
    assert (clone / "a/g").read_bytes() == b"f"
    assert queued(jobs) == [CommitJob("Rename /a/b/f to /a/g", add=("a/g",), remove=("a/b/f",))]


def test_rename_of_a_directory(view, jobs, clone):
    (clone / "src/sub").mkdir(parents=True)
    (clone / "src/sub/f").write_bytes(b"f")
    view.rename("/src", "/dst")
    assert (clone / "dst/sub/f").read_bytes() == b"f"
    assert queued(jobs) == [CommitJob("Rename /src to /dst", add=("dst",), remove=("src",))]


def test_rename_of_a_directory_over_one_holding_only_keep(view, jobs, clone):
    (clone / "src").mkdir()
    (clone / "src/f").write_bytes(b"f")
    view.mkdir("/empty", 0o755)
    queued(jobs)
    view.rename("/src", "/empty")
    assert os.listdir(clone / "empty") == ["f"]
    assert queued(jobs) == [CommitJob("Rename /src to /empty", add=("empty",), remove=("src",))]


def test_rename_over_an_existing_file(view, jobs, clone):
    write_file(view, "/.testing.tmp", b"new\n")
    view.rename("/.testing.tmp", "/testing")
    assert (clone / "testing").read_bytes() == b"new\n"
    assert queued(jobs) == [CommitJob("Update /.testing.tmp", add=(".testing.tmp",)),
                            CommitJob("Rename /.testing.tmp to /testing", add=("testing",),
                                      remove=(".testing.tmp",))]


def test_rename_of_an_open_file_releases_under_the_new_name(view, jobs, clone):
    fh = view.create("/draft", 0o644, os.O_WRONLY)
    view.write("/draft", b"text", 0, fh)
    view.rename("/draft", "/final")
    view.release("/final", fh)
    assert queued(jobs) == [CommitJob("Rename /draft to /final", add=("final",), remove=("draft",)),
                            CommitJob("Update /final", add=("final",))]


def test_rename_of_a_directory_holding_an_open_file(view, jobs, clone, handles):
    (clone / "dir").mkdir()
    fh = view.create("/dir/f", 0o644, os.O_WRONLY)
    view.write("/dir/f", b"x", 0, fh)
    view.rename("/dir", "/moved")
    assert handles.dirty_paths() == ["/moved/f"]
    view.release("/moved/f", fh)
    assert queued(jobs)[-1] == CommitJob("Update /moved/f", add=("moved/f",))


# -- links --------------------------------------------------------------------------

def test_symlink(view, jobs, clone):
    view.symlink("/link", "/etc")  # fusepy: (new name, text it holds)
    assert os.readlink(clone / "link") == "/etc"
    assert queued(jobs) == [CommitJob("Create symlink to /etc for /link", add=("link",))]


def test_hard_link(view, jobs, clone):
    view.link("/hard", "/testing")
    assert (clone / "hard").read_bytes() == b"just testing around here\n"
    assert os.stat(clone / "hard").st_ino == os.stat(clone / "testing").st_ino
    assert queued(jobs) == [CommitJob("Create link to /testing for /hard", add=("hard",))]


# -- metadata -----------------------------------------------------------------------

def test_chmod_of_a_file_queues_the_exec_bit_change(view, jobs, clone):
    view.chmod("/testing", stat.S_IFREG | 0o755)
    assert stat.S_IMODE(os.stat(clone / "testing").st_mode) == 0o755
    assert queued(jobs) == [CommitJob("Chmod to 0755 on /testing", add=("testing",))]


def test_chmod_0600_is_applied_and_queues_nothing_git_records(view, jobs, clone):
    view.chmod("/testing", 0o600)
    assert stat.S_IMODE(os.stat(clone / "testing").st_mode) == 0o600
    assert queued(jobs) == []


def test_chmod_taking_the_exec_bit_away_is_queued(view, jobs, clone):
    os.chmod(clone / "testing", 0o755)
    view.chmod("/testing", stat.S_IFREG | 0o644)
    assert queued(jobs) == [CommitJob("Chmod to 0644 on /testing", add=("testing",))]


def test_chmod_of_a_link_itself_is_eopnotsupp_and_leaves_its_target(view, jobs, clone):
    os.symlink("testing", clone / "link")
    before = os.stat(clone / "testing").st_mode
    refused(view.chmod, "/link", 0o777, codes=(errno.EOPNOTSUPP,))
    assert os.stat(clone / "testing").st_mode == before
    assert queued(jobs) == []


def test_chmod_of_a_directory_queues_nothing(view, jobs, clone):
    (clone / "dir").mkdir()
    view.chmod("/dir", 0o700)
    assert stat.S_IMODE(os.stat(clone / "dir").st_mode) == 0o700
    assert queued(jobs) == []


def test_utimens_and_chown_queue_nothing(view, jobs, clone):
    view.utimens("/testing", (1_000_000_000 * 10**9, 1_000_000_000 * 10**9))
    assert os.stat(clone / "testing").st_mtime == 1_000_000_000
    view.utimens("/testing")
    view.chown("/testing", 0, 0)
    assert queued(jobs) == []


def test_getattr_shows_the_owner_option(view):
    attrs = view.getattr("/testing")
    assert (attrs["st_uid"], attrs["st_gid"]) == (1234, 5678)
    assert stat.S_ISREG(attrs["st_mode"]) and attrs["st_size"] == 25


# -- refusals -------------------------------------------------------------------------

def test_the_clone_dot_git_does_not_exist_for_any_call(view, jobs, clone):
    head = (clone / ".git/HEAD").read_bytes()
    missing = (errno.ENOENT,)
    for call, args in ((view.getattr, ("/.git",)), (view.getattr, ("/.git/HEAD",)),
                       (view.readdir, ("/.git", 0)), (view.readlink, ("/.git/HEAD",)),
                       (view.access, ("/.git/HEAD", os.R_OK)), (view.chown, ("/.git/HEAD", 0, 0)),
                       (view.open, ("/.git/HEAD", os.O_RDONLY)), (view.open, ("/.git/HEAD", os.O_WRONLY)),
                       (view.open, ("/.git/config", os.O_RDWR | os.O_APPEND)),
                       (view.create, ("/.git/new", 0o644, os.O_WRONLY)), (view.mkdir, ("/.git/dir", 0o755)),
                       (view.truncate, ("/.git/HEAD", 0)), (view.unlink, ("/.git/HEAD",)),
                       (view.rmdir, ("/.git",)), (view.rmdir, ("/.git/refs",)),
                       (view.rename, ("/.git", "/stolen")), (view.rename, ("/.git/HEAD", "/HEAD")),
                       (view.rename, ("/testing", "/.git/testing")), (view.symlink, ("/.git/link", "/etc")),
                       (view.link, ("/.git/hard", "/testing")), (view.link, ("/hard", "/.git/HEAD")),
                       (view.chmod, ("/.git/HEAD", 0o777)), (view.utimens, ("/.git/HEAD", (0, 0))),
                       (view.mknod, ("/.git/node", stat.S_IFREG | 0o644, 0))):
        assert refused(call, *args, codes=missing), call.__name__
    # The name itself is taken: creating it is refused, not "missing".
    for call, args in ((view.mkdir, ("/.git", 0o755)), (view.create, ("/.git", 0o644, os.O_WRONLY)),
                       (view.symlink, ("/.git", "x")), (view.rename, ("/testing", "/.git")),
                       (view.link, ("/.git", "/testing")), (view.mknod, ("/.git", stat.S_IFREG | 0o644, 0))):
        refused(call, *args, codes=(errno.EACCES,))
    assert (clone / ".git/HEAD").read_bytes() == head
    assert os.stat(clone / ".git/HEAD").st_mtime_ns != 0
    assert not (clone / "stolen").exists() and not (clone / "hard").exists() and (clone / "testing").exists()
    assert queued(jobs) == []


def test_a_nested_dot_git_is_usable(view, jobs, clone):
    # git clone into current/ writes its own .git: only the clone's root .git is hidden.
    (clone / "vendor").mkdir()
    view.mkdir("/vendor/.git", 0o755)
    write_file(view, "/vendor/.git/HEAD", b"ref: refs/heads/main\n")
    assert (clone / "vendor/.git/HEAD").exists()
    assert view.getattr("/vendor/.git/HEAD")["st_size"] == 21
    assert ".git" in view.readdir("/vendor", 0)
    assert len(queued(jobs)) == 2


def test_write_past_max_size_is_efbig(view, jobs, clone):
    fh = view.create("/big", 0o644, os.O_WRONLY)
    assert view.write("/big", b"x" * MiB, 0, fh) == MiB
    with pytest.raises(FuseOSError) as raised:
        view.write("/big", b"x", MiB, fh)
    assert raised.value.errno == errno.EFBIG
    view.release("/big", fh)
    assert os.path.getsize(clone / "big") == MiB
    with pytest.raises(FuseOSError) as raised:
        view.truncate("/testing", MiB + 1)
    assert raised.value.errno == errno.EFBIG


def test_max_size_none_is_unlimited(clone, jobs, handles):
    view = CurrentView(Owner(0, 0), str(clone), handles, SyncState(idle_after=60), jobs, max_size=None)
    fh = view.create("/big", 0o644, os.O_WRONLY)
    view.write("/big", b"y", 12 * MiB, fh)
    view.release("/big", fh)
    assert os.path.getsize(clone / "big") == 12 * MiB + 1


def test_ignored_paths_are_writable_and_queued_like_any_file(view, jobs, clone):
    # The sync worker leaves ignored files out of the commit; the view must not refuse them.
    (clone / ".gitignore").write_text("*.swp\n")
    write_file(view, "/.f.swp", b"swap")
    view.unlink("/.f.swp")
    assert queued(jobs) == [CommitJob("Update /.f.swp", add=(".f.swp",)),
                            CommitJob("Deleted /.f.swp", remove=(".f.swp",))]


# -- the freeze ----------------------------------------------------------------------

def test_a_mutation_waits_for_the_freeze_then_is_ebusy(clone, jobs, handles):
    state = SyncState(idle_after=60, freeze_timeout=0.1)
    view = CurrentView(Owner(0, 0), str(clone), handles, state, jobs, max_size=None)
    with state.frozen():
        with pytest.raises(OSError) as raised:  # the FUSE binding answers an OSError's errno
            view.unlink("/testing")
        assert raised.value.errno == errno.EBUSY
    assert (clone / "testing").exists()
    assert queued(jobs) == []
    view.unlink("/testing")  # works again once the freeze ends
    assert queued(jobs) == [CommitJob("Deleted /testing", remove=("testing",))]


def test_a_short_freeze_delays_a_mutation_without_failing_it(clone, jobs, handles):
    state = SyncState(idle_after=60, freeze_timeout=5)
    view = CurrentView(Owner(0, 0), str(clone), handles, state, jobs, max_size=None)
    frozen, release = threading.Event(), threading.Event()

    def hold():
        with state.frozen():
            frozen.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    frozen.wait(5)
    threading.Timer(0.1, release.set).start()
    view.unlink("/testing")
    holder.join()
    assert queued(jobs) == [CommitJob("Deleted /testing", remove=("testing",))]


def test_a_file_open_at_the_freeze_stays_open_to_the_sync_worker_until_it_ends(clone, jobs, handles):
    """A program's close(2) returns before the kernel sends RELEASE: a release that came
    during the freeze would let the sync worker take the file for closed and write the
    remote's version over lines appended to it that no commit holds yet. It waits, however
    long the freeze lasts (far past freeze_timeout), and is never an error."""
    state = SyncState(idle_after=60, freeze_timeout=0.05)
    view = CurrentView(Owner(0, 0), str(clone), handles, state, jobs, max_size=None)
    fh = view.open("/testing", os.O_WRONLY | os.O_APPEND)
    view.write("/testing", b"appended\n", 25, fh)
    done = threading.Event()
    with state.frozen():
        releaser = threading.Thread(target=lambda: (view.release("/testing", fh), done.set()))
        releaser.start()
        assert not done.wait(0.3)  # six freeze timeouts
        assert handles.open_paths() == {"/testing"} and queued(jobs) == []
    releaser.join(5)
    assert done.is_set() and handles.open_paths() == set()
    assert queued(jobs) == [CommitJob("Update /testing", add=("testing",))]


def test_open_writers_are_counted_until_release(view, handles):
    assert handles.writers()[0] == 0
    fh = view.open("/testing", os.O_WRONLY)
    reader = view.open("/me", os.O_RDONLY)
    assert handles.writers()[0] == 1
    view.release("/testing", fh)
    view.release("/me", reader)
    assert handles.writers()[0] == 0


# -- modes, times, long paths ----------------------------------------------------------

@pytest.fixture
def daemon_umask_077():
    """The daemon's own umask must not reach what a caller creates (the kernel applied theirs)."""
    saved = os.umask(0o077)
    yield
    os.umask(saved)


def test_created_files_and_folders_get_the_mode_asked(view, clone, daemon_umask_077):
    view.release("/f", view.create("/f", stat.S_IFREG | 0o664, os.O_WRONLY))
    view.mkdir("/d", 0o775)
    view.mkdir("/sticky", 0o1777)
    view.mkdir("/closed", 0o555)
    view.mknod("/n", stat.S_IFREG | 0o640, 0)
    modes = {name: stat.S_IMODE(os.lstat(clone / name).st_mode) for name in ("f", "d", "sticky", "closed", "n")}
    assert modes == {"f": 0o664, "d": 0o775, "sticky": 0o1777, "closed": 0o555, "n": 0o640}
    assert (clone / "closed/.keep").is_file()  # written before the folder became read-only


def test_create_of_a_file_made_meanwhile_opens_it_and_keeps_its_mode(view, clone, jobs):
    os.chmod(clone / "testing", 0o600)
    fh = view.create("/testing", 0o666, os.O_WRONLY)  # no O_EXCL: open the existing file
    view.release("/testing", fh)
    assert stat.S_IMODE(os.stat(clone / "testing").st_mode) == 0o600
    assert (clone / "testing").read_bytes() == b"just testing around here\n"
    assert queued(jobs) == []
    with pytest.raises(FileExistsError):
        view.create("/testing", 0o666, os.O_WRONLY | os.O_EXCL)


def test_utimens_now_and_omit(view, clone):
    old = (10**9, 2 * 10**9)
    os.utime(clone / "testing", ns=old)
    view.utimens("/testing", (UTIME_OMIT, 5 * 10**18))  # touch -m -d: the access time stays
    st = os.stat(clone / "testing")
    assert (st.st_atime_ns, st.st_mtime_ns) == (10**9, 5 * 10**18)
    view.utimens("/testing", (7 * 10**18, UTIME_OMIT))
    st = os.stat(clone / "testing")
    assert (st.st_atime_ns, st.st_mtime_ns) == (7 * 10**18, 5 * 10**18)
    before = time.time_ns() - 10**9  # the kernel's clock is coarser than time_ns
    view.utimens("/testing", (UTIME_OMIT, UTIME_NOW))
    st = os.stat(clone / "testing")
    assert st.st_atime_ns == 7 * 10**18 and st.st_mtime_ns >= before
    view.utimens("/testing", (UTIME_NOW, UTIME_NOW))
    assert os.stat(clone / "testing").st_atime_ns >= before
    view.utimens("/testing", (UTIME_OMIT, UTIME_OMIT))
    assert os.stat(clone / "testing").st_atime_ns >= before


def test_utimens_of_a_link_sets_the_link(view, clone):
    os.symlink("testing", clone / "link")
    target_mtime = os.stat(clone / "testing").st_mtime_ns
    view.utimens("/link", (UTIME_OMIT, 3 * 10**9))
    assert os.lstat(clone / "link").st_mtime_ns == 3 * 10**9
    assert os.stat(clone / "testing").st_mtime_ns == target_mtime


def test_paths_up_to_path_max_work_whatever_the_clone_s_location(view, clone, jobs):
    folder = "/" + "/".join(["d" * 200] * 20)
    file = folder + "/" + "f" * (4095 - len(folder))  # 4095 bytes relative to current/
    assert len(file.lstrip("/")) == 4095 and len(str(clone) + file) > 4096
    for depth in range(1, 21):
        view.mkdir("/" + "/".join(["d" * 200] * depth), 0o755)
    write_file(view, file, b"deep\n")
    assert view.getattr(file)["st_size"] == 5
    view.utimens(file, (UTIME_OMIT, 10**9))
    view.truncate(file, 2)
    view.chmod(file, 0o700)
    assert view.readdir(folder, 0) == [".", "..", "f" * (4095 - len(folder))]
    view.rename(file, folder + "/g")
    view.unlink(folder + "/g")
    view.rmdir(folder)  # its placeholder's path, 4100 bytes, is reached through the folder
    assert "Delete the" in queued(jobs)[-1].message


# -- .keep ---------------------------------------------------------------------------

def test_a_keep_with_content_is_listed_and_keeps_its_folder(view, jobs, clone):
    view.mkdir("/d", 0o755)
    assert view.readdir("/d", 0) == [".", ".."]
    write_file(view, "/d/.keep", b"precious\n", flags=os.O_WRONLY | os.O_TRUNC)
    assert view.readdir("/d", 0) == [".", "..", ".keep"]
    refused(view.rmdir, "/d", codes=(errno.ENOTEMPTY,))
    assert (clone / "d/.keep").read_bytes() == b"precious\n"
    view.truncate("/d/.keep", 0)  # empty again: the placeholder
    assert view.readdir("/d", 0) == [".", ".."]
    queued(jobs)
    view.rmdir("/d")
    assert queued(jobs) == [CommitJob("Delete the /d directory", remove=("d/.keep",))]


def test_a_keep_that_is_not_a_regular_file_is_the_users(view, clone):
    (clone / "l").mkdir()
    os.symlink("nowhere", clone / "l/.keep")
    assert view.readdir("/l", 0) == [".", "..", ".keep"]
    refused(view.rmdir, "/l", codes=(errno.ENOTEMPTY,))


def test_the_placeholder_is_reachable_by_name(view):
    view.mkdir("/d", 0o755)
    assert view.getattr("/d/.keep")["st_size"] == 0
    view.release("/d/.keep", view.open("/d/.keep", os.O_RDONLY))


def test_rename_over_a_folder_with_a_users_keep_is_enotempty(view, clone):
    (clone / "src").mkdir()
    (clone / "users").mkdir()
    (clone / "users/.keep").write_bytes(b"mine\n")
    with pytest.raises(OSError) as raised:
        view.rename("/src", "/users")
    assert raised.value.errno in (errno.ENOTEMPTY, errno.EEXIST)
    assert (clone / "users/.keep").read_bytes() == b"mine\n"


def test_a_failed_rename_puts_the_placeholder_back(view, clone, jobs):
    view.mkdir("/src", 0o755)
    view.mkdir("/src/inner", 0o755)
    queued(jobs)
    with pytest.raises(OSError) as raised:
        view.rename("/src", "/src/inner")  # into itself
    assert raised.value.errno == errno.EINVAL
    assert (clone / "src/inner/.keep").is_file()
    assert queued(jobs) == []


def test_a_name_the_sync_replaced_shows_missing_until_the_kernel_forgot_it(clone, jobs, handles, tmp_path):
    """The kernel may ask the attributes of the old file's node for a name whose file the
    sync just replaced by a folder: the folder's would have it fail that node with EIO."""
    class Kernel:
        active = True

        def invalidate(self, paths):
            list(paths)

        def node_ids(self, paths):
            return {}

        def forget_entries(self, parents, removed):
            pass

    (clone / "thing").mkdir()
    forgetter = WorktreeForgetter(Kernel(), "", str(clone))
    view = CurrentView(OWNER, str(clone), handles, SyncState(idle_after=60, freeze_timeout=0.2), jobs,
                       max_size=MiB, kernel=forgetter)
    forgetter.rewritten({"thing"}, ["thing"])
    assert errno_of(view.getattr, "/thing") == errno.ENOENT
    forgetter.changed({"thing"}, ["thing"])
    assert stat.S_ISDIR(view.getattr("/thing")["st_mode"])


def test_a_name_made_through_the_mount_after_the_sync_removed_it_shows_at_once(clone, jobs, handles):
    """libfuse answers a create or mkdir by looking the name up (a getattr): a name the sync
    removed a moment ago, which shows missing until the kernel forgot it, must show what
    the call made, or the call fails with ENOENT after making it."""
    class Kernel:
        active = True

        def invalidate(self, paths):
            list(paths)

    forgetter = WorktreeForgetter(Kernel(), "", str(clone))
    view = CurrentView(OWNER, str(clone), handles, SyncState(idle_after=60, freeze_timeout=0.2), jobs,
                       max_size=MiB, kernel=forgetter)
    (clone / "other.txt").write_text("the remote's new file of that name\n")
    forgetter.rewritten({"gone.txt", "old", "other.txt"}, ["gone.txt", "old", "other.txt"])
    os.close(handles.pop(view.create("/gone.txt", 0o100644, os.O_WRONLY | os.O_TRUNC)).fd)
    assert stat.S_ISREG(view.getattr("/gone.txt")["st_mode"])
    view.mkdir("/old", 0o755)
    assert stat.S_ISDIR(view.getattr("/old")["st_mode"])
    assert errno_of(view.getattr, "/other.txt") == errno.ENOENT  # not made here: missing until forgotten
