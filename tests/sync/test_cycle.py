"""Layer 2: one sync cycle (gitfs/sync/cycle.py) on real repositories, no mount, no thread.

commit -> fetch -> accept mine -> apply -> push, against a bare remote that the other
person's clone pushes to, sometimes right between our fetch and our push.
"""

import errno
import io
import logging
import os
from pathlib import Path

import pygit2
import pytest

from gitfs.handles import HandleTable
from gitfs.repo.errors import RemoteError, local_write
from gitfs.repo.repository import Repository
from gitfs.sync.failed_writes import FailedWrites
from gitfs.sync.jobs import CommitJob
from gitfs.views.base import Owner
from gitfs.views.current import CurrentView
from helpers import clone_of, git, ls_tree, make_rig, stage_files, worktree_tree


def test_a_write_is_committed_and_pushed(rig):
    rig.write("notes.txt", "mine\n")
    result = rig.cycle.run()
    assert result.committed is not None and result.pushed == result.committed
    assert result.complete and result.conflicts == ()
    assert rig.remote.show("notes.txt") == b"mine\n"
    assert rig.remote.log()[0] == "Update /notes.txt"


def test_several_jobs_become_one_commit(rig):
    for name in ("a", "b", "c"):
        rig.write(f"{name}.txt", name)
    rig.cycle.run()
    assert rig.remote.log()[0] == "Update 3 items. Added 3 items."
    assert not rig.jobs


def test_a_batch_that_creates_and_deletes_thousands_of_files_counts_the_commit_s_changes(rig):
    for number in range(1500):
        rig.write(f"burst/{number % 30}/f{number}", f"{number}\n")
    rig.cycle.run()
    for number in range(1500):
        if number % 3:
            for version in ("again", "and again"):  # written twice: one change each
                rig.write(f"burst/{number % 30}/f{number}", f"{version} {number}\n")
        else:
            with rig.state.mutation():
                os.unlink(os.path.join(rig.path, f"burst/{number % 30}/f{number}"))
                rig.jobs.put(CommitJob(f"Delete /burst/{number % 30}/f{number}",
                                       remove=(f"burst/{number % 30}/f{number}",)))
    for number in range(1500, 3000):
        rig.write(f"burst/new/f{number}", "new\n")
    rig.cycle.run()
    # 1,000 files rewritten, 500 deleted, 1,500 created.
    assert rig.remote.log()[0] == "Update 3000 items. Added 2500 items. Removed 500 items."


def test_a_write_through_one_hard_link_commits_every_name(rig):
    rig.write("a", "one\n")
    with rig.state.mutation():
        os.link(os.path.join(rig.path, "a"), os.path.join(rig.path, "b"))
        rig.jobs.put(CommitJob("Link /b to /a", add=("b",)))
    rig.cycle.run()
    rig.write("a", "two\n")  # the job names a; b is the same file
    rig.cycle.run()
    assert rig.remote.show("b") == b"two\n" and rig.remote.show("a") == b"two\n"
    assert rig.remote.log()[0] == "Update 2 items. Added 2 items."


def test_their_push_reaches_the_working_tree(rig):
    rig.remote.commit({"theirs.txt": "from them\n"}, "their change")
    result = rig.cycle.run()
    assert result.committed is None and result.pushed is None
    assert rig.read("theirs.txt") == "from them\n"
    assert str(rig.repo.branch_tip()) == rig.remote.head()


def test_a_conflict_keeps_mine_and_reports_theirs(rig):
    rig.remote.commit({"testing": "their version\n"}, "theirs")
    rig.write("testing", "my version\n")
    result = rig.cycle.run()
    assert result.conflicts == ("testing",)
    assert rig.remote.show("testing") == b"my version\n"
    assert rig.read("testing") == "my version\n"
    assert [c["path"] for c in rig.status.snapshot()["conflicts"]] == ["testing"]
    assert rig.remote.log()[:2] == ["Update /testing", "theirs"]  # linear: mine replayed on theirs


def test_a_push_that_meets_a_moved_remote_is_merged_and_pushed_again(rig):
    rig.link.races = 2
    rig.write("mine.txt", "mine\n")
    result = rig.cycle.run()
    assert result.pushed is not None
    assert rig.link.fetches == 3
    assert {"mine.txt", "race0.txt", "race1.txt"} <= set(rig.remote.files())
    assert git("--git-dir", str(rig.remote.bare), "log", "--merges", "--format=%H", "main") == ""


def test_a_remote_that_keeps_moving_fails_the_cycle_and_the_commit_stays(rig, caplog):
    rig.link.races = 5
    rig.write("mine.txt", "mine\n")
    with pytest.raises(RemoteError, match="5 times in a row"):
        rig.cycle.run()
    assert "mine.txt" in git("ls-tree", "--name-only", "HEAD", cwd=rig.path)
    assert rig.status.snapshot()["last_push"]["result"] == "failed"
    rig.link.races = 0
    assert rig.cycle.run().pushed is not None  # the next cycle pushes it
    assert "mine.txt" in rig.remote.files()


def test_a_remote_change_to_an_open_file_waits_until_it_is_closed(rig):
    rig.remote.commit({"testing": "changed by them\n"}, "theirs")
    rig.open_paths = {"/testing"}
    result = rig.cycle.run()
    assert result.waiting_for == ("testing",) and not result.complete
    assert rig.read("testing") == "just testing around here\n"
    rig.open_paths = set()
    assert rig.cycle.run().complete
    assert rig.read("testing") == "changed by them\n"


def test_an_unreachable_remote_keeps_the_commit_and_logs_once(remote, tmp_path, caplog):
    rig = make_rig(remote, tmp_path / "mine", url=str(tmp_path / "gone.git"))
    rig.write("offline.txt", "written offline\n")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            with pytest.raises(RemoteError):
                rig.cycle.run()
    assert "offline.txt" in git("ls-tree", "--name-only", "HEAD", cwd=rig.path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "gone.git" in warnings[0], warnings
    assert rig.status.snapshot()["last_fetch"]["result"] == "failed"
    git("remote", "set-url", "origin", str(remote.bare), cwd=rig.path)
    with caplog.at_level(logging.WARNING):
        assert rig.cycle.run().pushed is not None
    assert "fetch works again" in caplog.text
    assert remote.show("offline.txt") == b"written offline\n"


def test_no_commit_while_writing_still_brings_their_change(rig):
    with open(f"{rig.path}/mine.txt", "w") as handle:  # open for writing: no job until release
        handle.write("half written\n")
    rig.open_paths, rig.dirty_paths = {"/mine.txt"}, ["/mine.txt"]
    rig.remote.commit({"theirs.txt": "theirs\n"}, "theirs")
    result = rig.cycle.run(commit=False)
    assert result.committed is None and result.complete
    assert rig.read("theirs.txt") == "theirs\n"
    assert rig.read("mine.txt") == "half written\n"
    assert "mine.txt" not in rig.remote.files()


def test_a_file_open_too_long_is_committed_with_what_it_holds(rig):
    with open(f"{rig.path}/long.txt", "w") as handle:
        handle.write("so far\n")
    rig.open_paths, rig.dirty_paths = {"/long.txt"}, ["/long.txt"]
    result = rig.cycle.run(include_open=True)
    assert result.committed is not None
    assert rig.remote.show("long.txt") == b"so far\n"


def test_final_commits_and_pushes(rig):
    rig.write("last.txt", "at unmount\n")
    rig.cycle.final(seconds=30)
    assert rig.remote.show("last.txt") == b"at unmount\n"


def test_a_rewritten_remote_branch_saves_the_local_history_as_a_rescue_not_a_conflict(rig):
    dropped = rig.remote.commit({"dropped.txt": "dropped\n"}, "dropped by the force-push")
    rig.cycle.run()
    git("reset", "-q", "--hard", "HEAD~1", cwd=rig.remote.work)  # and a commit in its place, force-pushed
    stage_files(rig.remote.work, {"rewritten.txt": "new\n"})
    git("commit", "-q", "-m", "rewritten", cwd=rig.remote.work)
    git("push", "-q", "--force", "origin", rig.remote.branch, cwd=rig.remote.work)
    rig.cycle.run()
    state = rig.status.snapshot()
    assert state["conflicts"] == []
    [rescue] = state["rescues"]
    assert rescue["saved_commit"] == dropped and rescue["branch"].startswith("gitfs-rescue-")
    assert git("rev-parse", rescue["branch"], cwd=rig.path).strip() == dropped


class StagingFails(Repository):
    """A clone whose single-path staging fails, as a bug in it would: a fault injected
    in front of the real repository to show that the sync worker's way out holds."""

    def stage_paths(self, paths):
        with local_write():  # libgit2's error, typed by the git core as the real one's would be
            raise pygit2.GitError("index does not contain tools/run.sh at stage 0")


def test_a_failing_stage_commits_the_whole_working_tree_and_logs_an_error(remote, tmp_path, caplog):
    remote.commit({"scripts/run.sh": "echo run\n", "scripts/lib/util.sh": "echo util\n"}, "scripts")
    rig = make_rig(remote, tmp_path / "clone", repository=StagingFails)
    clone = Path(rig.path)
    with open(clone / "scripts/run.sh", "a") as handle:
        handle.write("echo more\n")
    os.rename(clone / "scripts", clone / "tools")
    expected = worktree_tree(clone)
    with caplog.at_level("ERROR"):
        oid = rig.cycle.commit_everything(lambda paths: [CommitJob("Update", add=tuple(paths))])
    assert oid is not None and ls_tree(clone, str(oid)) == expected
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "index does not contain" in errors[0] and "tools/run.sh" in errors[0]


def test_the_kernel_is_told_what_the_remote_s_change_replaced(rig):
    rig.remote.commit({"theirs/new.txt": "theirs\n", "testing": "their edit\n"}, "theirs")
    rig.cycle.run()
    assert rig.read("testing") == "their edit\n"
    ((paths, removed),) = rig.kernel.told
    assert paths == {"theirs/new.txt", "testing"}
    # A file rewritten as a file keeps its name (its attributes and pages go, as `paths`):
    # a forgotten name's new node would take a reply read from the old file as current.
    assert "testing" not in removed
    assert rig.kernel.rewritten_told == [paths]  # their attributes first, under the freeze
    # Nothing stood there before: no name to hide until the kernel is told (the new file
    # shows at once, with the rest of their change).
    assert rig.kernel.replaced_told == [set()]
    rig.cycle.run()  # nothing new: nothing to tell
    assert len(rig.kernel.told) == 1 and len(rig.kernel.rewritten_told) == 1


def test_a_file_the_remote_turns_into_a_link_or_a_folder_loses_its_name(rig):
    theirs = clone_of(rig.remote, Path(rig.path).parent / "theirs")
    os.remove(theirs / "testing")
    os.symlink("me", theirs / "testing")
    os.remove(theirs / "me")
    os.mkdir(theirs / "me")
    (theirs / "me" / "inside.txt").write_text("inside\n")
    git("add", "-A", cwd=theirs)
    git("commit", "-qm", "a link and a folder", cwd=theirs)
    git("push", "-q", "origin", rig.remote.branch, cwd=theirs)
    rig.cycle.run()
    assert os.readlink(os.path.join(rig.path, "testing")) == "me"
    ((_paths, removed),) = rig.kernel.told
    assert {"testing", "me"} <= set(removed)
    # Missing from the freeze until the kernel forgot them: never the other kind's attributes
    # for the node the kernel holds (EIO); the file new inside the new folder is not hidden.
    assert rig.kernel.replaced_told == [{"testing", "me"}]


class StaleOnce(Repository):
    """A clone whose next write of `stale_path` into the working tree gets its old bytes,
    as if the update had been lost: what the cycle's own check must find and mend."""

    stale_path = "testing"
    stale_bytes: bytes | None = b"just testing around here\n"

    def checkout_source(self, path, oid, mode):
        if path == self.stale_path and StaleOnce.stale_bytes is not None:
            data, StaleOnce.stale_bytes = StaleOnce.stale_bytes, None
            return io.BytesIO(data)
        return super().checkout_source(path, oid, mode)


def test_a_working_file_left_behind_the_branch_is_brought_up_to_date_at_the_cycle_s_end(remote, tmp_path, caplog):
    rig = make_rig(remote, tmp_path / "clone", repository=StaleOnce)
    StaleOnce.stale_bytes = b"just testing around here\n"
    remote.commit({"testing": "their line\n"}, "theirs")
    rig.write("mine.txt", "mine\n")
    with caplog.at_level(logging.ERROR):
        result = rig.cycle.run()
    assert result.pushed is not None and rig.remote.show("testing") == b"their line\n"
    assert rig.read("testing") == "their line\n"  # not the bytes the lost update left
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and "the working tree differed from the branch" in errors[0] and "testing" in errors[0]
    assert rig.kernel.told[-1][0] == {"testing"}  # the kernel told of the file written again
    rig.write("testing", "their line\nmy line\n")  # an edit now keeps the colleague's line
    rig.cycle.run()
    assert rig.remote.show("testing") == b"their line\nmy line\n"


def test_a_local_change_since_the_remote_s_came_in_is_not_taken_for_a_lag(rig, caplog):
    rig.remote.commit({"testing": "their line\n"}, "theirs")
    rig.cycle.sync_with_remote()  # brought in; the cycle's end not reached yet
    rig.write("testing", "mine now\n")
    with caplog.at_level(logging.ERROR):
        rig.cycle.check_brought_in()
    assert rig.read("testing") == "mine now\n"
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_a_kernel_still_showing_the_old_file_is_told_again_and_said_once(rig, caplog):
    for number in range(2):
        rig.remote.commit({"testing": f"their line {number}\n"}, f"theirs {number}")
        rig.kernel.stale = ["testing"]
        with caplog.at_level(logging.DEBUG, logger="gitfs.sync.cycle"):
            rig.cycle.run()
    said = [record for record in caplog.records if "what the kernel shows of current/" in record.getMessage()]
    assert [record.levelno for record in said] == [logging.ERROR, logging.DEBUG]


# -- a file whose last write failed is never published, by any route ------------------

MAX_SIZE = 64  # bytes: the views' max_size in these tests, so that a copy can fail with EFBIG


def failing_view(rig) -> CurrentView:
    """current/ on the rig's clone, telling the cycle's FailedWrites how each write ended."""
    return CurrentView(Owner(os.getuid(), os.getgid()), rig.path, HandleTable(), rig.state, rig.jobs,
                       max_size=MAX_SIZE, failed_writes=rig.cycle.failed_writes)


def copy_fails(view, path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> None:
    """A copy into `path` that stops with EFBIG after its first block, as cp does."""
    exists = os.path.lexists(os.path.join(view.root, path.lstrip("/")))
    fh = view.open(path, flags & ~os.O_CREAT) if exists else view.create(path, 0o644, flags)
    try:
        view.write(path, b"x" * MAX_SIZE, 0, fh)
        with pytest.raises(OSError) as raised:
            view.write(path, b"y" * MAX_SIZE, MAX_SIZE, fh)
        assert raised.value.errno == errno.EFBIG
    finally:
        view.release(path, fh)


def test_a_failed_file_is_not_published_when_its_folder_is_renamed(rig):
    view = failing_view(rig)
    view.mkdir("/scans", 0o755)
    copy_fails(view, "/scans/scan.pdf")
    rig.write("scans/notes.txt", "notes\n")
    rig.cycle.run()
    view.rename("/scans", "/papers")  # stages the folder, and every file in it
    rig.cycle.run()
    assert "papers/notes.txt" in rig.remote.files() and "papers/scan.pdf" not in rig.remote.files()
    assert rig.cycle.failed_writes.paths() == {"papers/scan.pdf"}


def test_a_failed_file_is_not_published_under_its_other_name(rig):
    rig.write("report.txt", "whole report\n")
    view = failing_view(rig)
    view.link("/copy.txt", "/report.txt")
    rig.cycle.run()
    assert rig.remote.show("copy.txt") == b"whole report\n"
    copy_fails(view, "/report.txt")
    fh = view.open("/copy.txt", os.O_WRONLY)  # a write through the other name: the job names the inode
    view.write("/copy.txt", b"X", 0, fh)
    view.release("/copy.txt", fh)
    view.chmod("/copy.txt", 0o100755)
    rig.write("notes.txt", "notes\n")
    rig.cycle.run()
    assert rig.remote.show("notes.txt") == b"notes\n"
    assert rig.remote.show("copy.txt") == b"whole report\n" and rig.remote.show("report.txt") == b"whole report\n"


def test_a_failed_file_is_not_published_when_the_whole_tree_is_staged(remote, tmp_path):
    remote.commit({"scan.pdf": "the old scan\n"}, "a scan")
    rig = make_rig(remote, tmp_path / "clone", repository=StagingFails)
    copy_fails(failing_view(rig), "/scan.pdf")
    rig.write("notes.txt", "notes\n")
    rig.cycle.run()  # staging the batch fails: the whole working tree is staged instead
    assert rig.remote.show("notes.txt") == b"notes\n" and rig.remote.show("scan.pdf") == b"the old scan\n"


class StatusFails(Repository):
    """A clone whose status cannot be listed (libgit2 fails to read the tree), a fault
    injected in front of the real repository: recovery stages the whole tree."""

    def changed_paths(self):
        with local_write():
            raise pygit2.GitError("failed to read the working tree")


def test_a_failed_file_is_not_published_by_the_recovery_s_whole_tree_commit(remote, tmp_path):
    rig = make_rig(remote, tmp_path / "clone", repository=StatusFails)
    copy_fails(failing_view(rig), "/scan.pdf")
    rig.write_file("left-by-a-crash.txt", "left\n")
    oid = rig.cycle.commit_everything(lambda paths: [CommitJob("Update", add=tuple(paths))])
    assert oid is not None
    committed = ls_tree(Path(rig.path), str(oid))
    assert "left-by-a-crash.txt" in committed and "scan.pdf" not in committed


def test_a_lower_write_that_finishes_after_the_failure_does_not_clear_it(rig):
    """Samba's asynchronous writes, a multi-threaded copier: the write below the one that
    failed finishes last. The file is still missing the failed range."""
    view = failing_view(rig)
    fh = view.create("/scan.pdf", 0o644, os.O_WRONLY | os.O_CREAT)
    with pytest.raises(OSError) as raised:
        view.write("/scan.pdf", b"y" * MAX_SIZE, MAX_SIZE // 2, fh)
    assert raised.value.errno == errno.EFBIG
    view.write("/scan.pdf", b"x" * (MAX_SIZE // 2), 0, fh)
    view.release("/scan.pdf", fh)
    rig.write("notes.txt", "notes\n")
    rig.cycle.run()
    assert "notes.txt" in rig.remote.files() and "scan.pdf" not in rig.remote.files()
    assert rig.cycle.failed_writes.paths() == {"scan.pdf"}
    fh = view.open("/scan.pdf", os.O_WRONLY | os.O_TRUNC)  # written whole again
    view.write("/scan.pdf", b"a small scan\n", 0, fh)
    view.release("/scan.pdf", fh)
    rig.cycle.run()
    assert rig.remote.show("scan.pdf") == b"a small scan\n" and not rig.cycle.failed_writes.paths()


def test_a_failed_range_is_cleared_only_by_writes_that_cover_it():
    failed = FailedWrites()
    failed.failed("/video.mp4", errno.ENOSPC, 100, 200)
    failed.written("/video.mp4", 0, 100)  # below it
    failed.written("/video.mp4", 150, 300)  # past its end, but a hole is left
    assert failed.paths() == {"video.mp4"}
    failed.written("/video.mp4", 100, 150)  # the program retried what failed
    assert failed.paths() == set()
    failed.failed("/video.mp4", errno.EIO)  # as fsync reports it: the whole file
    failed.written("/video.mp4", 0, 1 << 30)
    assert failed.paths() == {"video.mp4"}
    failed.truncated("/video.mp4", 0)
    assert failed.paths() == set()
    failed.failed("/other", errno.EBUSY, 0, 10)  # writes nothing: the file is as it was
    assert failed.paths() == set()


def test_an_unreadable_record_holds_back_what_differs_from_the_branch(rig, tmp_path):
    """The record of failed writes is on the clone's disk, full when ENOSPC was the
    failure: a damaged one must not mean "nothing failed"."""
    record = tmp_path / "failed-writes.json"
    record.write_text('[{"path": "scan.pdf", "err')  # torn
    rig.write_file("scan.pdf", "the first block of a copy that failed\n")  # left by the last mount
    rig.write_file("notes.txt", "left by a crash\n")
    rig.cycle.failed_writes = FailedWrites(str(record))
    view = failing_view(rig)
    fh = view.create("/new.txt", 0o644, os.O_WRONLY | os.O_CREAT)  # written whole since the mount
    view.write("/new.txt", b"new\n", 0, fh)
    view.release("/new.txt", fh)
    rig.cycle.commit_everything(lambda paths: [CommitJob(f"Update /{path}", add=(path,)) for path in paths])
    rig.cycle.run()
    assert "scan.pdf" not in rig.remote.files() and "notes.txt" not in rig.remote.files()
    assert rig.remote.show("new.txt") == b"new\n"
    assert {entry["path"] for entry in rig.cycle.failed_writes.entries()} == {"scan.pdf", "notes.txt"}
    assert FailedWrites(str(record)).paths() == {"scan.pdf", "notes.txt"}  # the record is whole again
    view.truncate("/notes.txt", 0)
    rig.write("notes.txt", "written again\n")
    rig.cycle.run()
    assert rig.remote.show("notes.txt") == b"written again\n" and "scan.pdf" not in rig.remote.files()


def test_a_record_that_cannot_be_written_is_kept_in_memory_said_and_saved_later(tmp_path):
    folder = tmp_path / "gitfs"
    folder.mkdir()
    record = folder / "failed-writes.json"
    failed = FailedWrites(str(record))
    failed.failed("/scan.pdf", errno.ENOSPC, 0, 10)
    assert FailedWrites(str(record)).paths() == {"scan.pdf"}
    os.rename(folder, tmp_path / "elsewhere")  # the record cannot be written where it lives
    failed.failed("/video.mp4", errno.ENOSPC, 0, 10)
    assert {entry["record"] for entry in failed.entries()} == {"not saved: No such file or directory"}
    assert failed.paths() == {"scan.pdf", "video.mp4"}
    os.rename(tmp_path / "elsewhere", folder)
    assert failed.paths() == {"scan.pdf", "video.mp4"}  # each commit asks: saved again
    assert "record" not in failed.entries()[0]
    assert FailedWrites(str(record)).paths() == {"scan.pdf", "video.mp4"}


def test_local_commits_go_out_while_the_remote_s_change_waits_for_a_file_open_here(rig):
    """A log held open here (for days, say) that a colleague's push changed: current/ waits
    for it to close, but the local commits are merged on the remote's and pushed all along;
    each line of both sides is on the remote once, and in current/ once the file is closed."""
    rig.remote.commit({"testing": "just testing around here\ntheirs 1\n"}, "their line")
    rig.open_paths = {"/testing"}
    rig.write("testing", "just testing around here\nmine 1\n")  # its job: committed while open
    result = rig.cycle.run()
    assert result.waiting_for == ("testing",) and result.pushed is not None
    assert rig.read("testing") == "just testing around here\nmine 1\n"  # not under the open file
    remote_lines = rig.remote.show("testing").decode().splitlines()
    assert sorted(remote_lines) == ["just testing around here", "mine 1", "theirs 1"]
    rig.write("testing", "just testing around here\nmine 1\nmine 2\n")
    rig.write("notes.txt", "saved beside it\n")
    result = rig.cycle.run()
    assert result.waiting_for == ("testing",) and result.pushed is not None
    assert rig.remote.show("notes.txt") == b"saved beside it\n"
    remote_lines = rig.remote.show("testing").decode().splitlines()
    assert sorted(remote_lines) == ["just testing around here", "mine 1", "mine 2", "theirs 1"]
    assert remote_lines.index("mine 1") < remote_lines.index("mine 2")
    rig.open_paths = set()  # closed: current/ catches up with the merge, nothing is pushed twice
    result = rig.cycle.run()
    assert result.complete
    assert rig.read("testing").splitlines() == remote_lines
    assert str(rig.repo.branch_tip()) == rig.remote.head()
    assert rig.repo.count_ahead() == 0
