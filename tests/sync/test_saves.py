"""Layer 2: the usual programs' saves, done through CurrentView as FUSE calls it, then
committed by one sync cycle on real repositories: one commit, changing the document
alone, told as its change, never with a temporary's name nor as Deleted + Created.

The default ignore rules are installed in the clone as a mount installs them. Each
sequence is the one the program made (recorded with `strace -f -e trace=file,desc`,
summed up in each test; tests/mount/test_editors.py runs the programs themselves).
"""

import os

import pygit2
import pytest

from gitfs.handles import HandleTable
from gitfs.repo.errors import LocalWriteError, local_write
from gitfs.repo.merging.conflicts import ConflictLog
from gitfs.repo.repository import Repository
from gitfs.repo.workdir.ignore import IgnoreRules
from gitfs.sync.slow_saves import SAVE_WAIT
from gitfs.sync.status import ConflictRecorder
from gitfs.views.base import Owner
from gitfs.views.current import CurrentView
from helpers import git, make_rig

CREATE = os.O_WRONLY | os.O_CREAT
RW_NEW = os.O_RDWR | os.O_CREAT | os.O_EXCL


@pytest.fixture
def saving(remote, tmp_path):
    remote.commit({"notes.txt": "first\n", "docs/report.odt": b"PK old document"}, "documents")
    rig = make_rig(remote, tmp_path / "mine")
    IgnoreRules(rig.path).install()
    view = CurrentView(Owner(os.getuid(), os.getgid()), rig.path, HandleTable(), rig.state, rig.jobs, max_size=None)
    return rig, view


def write(view, path, data, flags=CREATE | os.O_TRUNC, keep_open=False):
    exists = os.path.lexists(os.path.join(view.root, path.lstrip("/")))
    fh = view.open(path, flags & ~os.O_CREAT) if exists and not flags & os.O_EXCL else view.create(path, 0o644, flags)
    if data:
        view.write(path, data, 0, fh)
    if keep_open:
        return fh
    view.release(path, fh)
    return None


def committed(rig):
    """(subject, name-status lines) of the commit the cycle pushed."""
    rig.cycle.run()
    assert not rig.jobs
    bare = str(rig.remote.bare)
    changes = git("--git-dir", bare, "show", "--format=", "--name-status", rig.remote.branch).split("\n")
    return rig.remote.log()[0], [line for line in changes if line]


def test_vim_renames_the_original_to_a_backup_and_writes_anew(saving):
    """vim 9.0, 'writebackup' (its default), its swap file open all along:
    open(.notes.txt.swp, O_RDWR|O_CREAT|O_EXCL) write ... ; open(4913, O_WRONLY|O_CREAT|O_EXCL)
    close unlink(4913); rename(notes.txt, notes.txt~); open(notes.txt, O_WRONLY|O_CREAT)
    ftruncate(0) write fsync fchmod(0644) close; unlink(notes.txt~); (at :q) unlink(.notes.txt.swp)."""
    rig, view = saving
    swap = write(view, "/.notes.txt.swp", b"b0VIM 9.0", RW_NEW, keep_open=True)
    write(view, "/4913", b"", CREATE | os.O_EXCL)
    view.unlink("/4913")
    view.rename("/notes.txt", "/notes.txt~")
    fh = view.create("/notes.txt", 0o644, CREATE)
    view.truncate("/notes.txt", 0, fh)
    view.write("/notes.txt", b"saved by vim\n", 0, fh)
    view.fsync("/notes.txt", False, fh)
    view.chmod("/notes.txt", 0o100644)
    view.release("/notes.txt", fh)
    view.unlink("/notes.txt~")
    view.write("/.notes.txt.swp", b"b0VIM 9.0 more", 0, swap)
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])
    assert rig.remote.show("notes.txt") == b"saved by vim\n"
    view.release("/.notes.txt.swp", swap)
    view.unlink("/.notes.txt.swp")


def test_emacs_keeps_its_backup_and_removes_its_lock_and_auto_save(saving):
    """Emacs 28 (first save of a session, backups on):
    symlink(user@host.pid, .#notes.txt); open(#notes.txt#, O_WRONLY|O_CREAT|O_TRUNC) write close;
    rename(notes.txt, notes.txt~); open(notes.txt, O_WRONLY|O_CREAT|O_TRUNC) write close;
    unlink(.#notes.txt); chmod(notes.txt, 0644); unlink(#notes.txt#)."""
    rig, view = saving
    view.symlink("/.#notes.txt", "root@host.4242")
    write(view, "/#notes.txt#", b"auto-saved\n")
    view.rename("/notes.txt", "/notes.txt~")
    write(view, "/notes.txt", b"saved by emacs\n")
    view.unlink("/.#notes.txt")
    view.chmod("/notes.txt", 0o100644)
    view.unlink("/#notes.txt#")
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])
    assert os.path.exists(os.path.join(rig.path, "notes.txt~"))


def test_nano_copies_a_backup_and_rewrites_in_place(saving):
    """nano 7.2 --locking --backup:
    open(.notes.txt.swp, O_WRONLY|O_CREAT|O_EXCL) write close; open(notes.txt~, O_WRONLY|O_CREAT|O_EXCL)
    write close; open(notes.txt, O_WRONLY|O_CREAT|O_TRUNC) write close; unlink(.notes.txt.swp)."""
    rig, view = saving
    write(view, "/.notes.txt.swp", b"\x62\x30nano 7.2", CREATE | os.O_EXCL)
    write(view, "/notes.txt~", b"first\n", CREATE | os.O_EXCL)
    write(view, "/notes.txt", b"saved by nano\n")
    view.unlink("/.notes.txt.swp")
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])


def test_gio_writes_a_temporary_and_renames_it_over(saving):
    """gedit's save (GIO g_file_replace, as `gio save`): open(notes.txt, O_WRONLY|O_CREAT|O_NOFOLLOW)
    close; open(.goutputstream-D00RZ3, O_WRONLY|O_CREAT|O_EXCL) write fsync;
    rename(.goutputstream-D00RZ3, notes.txt); close."""
    rig, view = saving
    fh = view.create("/.goutputstream-D00RZ3", 0o666, CREATE | os.O_EXCL)
    view.write("/.goutputstream-D00RZ3", b"saved by gedit\n", 0, fh)
    view.rename("/.goutputstream-D00RZ3", "/notes.txt")
    view.release("/notes.txt", fh)
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])


def test_a_temporary_no_rule_knows_leaves_no_trace_either(saving):
    """Kate and KWrite (QSaveFile): notes.txt.XXXXXX written, renamed over notes.txt; the
    swap file .notes.txt.kate-swp beside it."""
    rig, view = saving
    write(view, "/.notes.txt.kate-swp", b"Kate Swap File 2.0")
    write(view, "/notes.txt.aBcDeF", b"saved by kate\n", CREATE | os.O_EXCL)
    view.rename("/notes.txt.aBcDeF", "/notes.txt")
    view.unlink("/.notes.txt.kate-swp")
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])


def test_libreoffice_saves_through_its_lu_temporary(saving):
    """LibreOffice 7.4 (store through UNO), its lock file taken again around the save:
    unlink(.~lock.report.odt#); open(lu17362ftgp.tmp, O_RDWR|O_CREAT|O_EXCL) close; open(lu..tmp, O_RDWR);
    open(.~lock.report.odt#, O_RDWR|O_CREAT|O_EXCL) pwrite close; pwrite(lu..tmp) ... fsync close;
    rename(lu17362ftgp.tmp, report.odt); chown; chmod(report.odt, 0644)."""
    rig, view = saving
    write(view, "/docs/.~lock.report.odt#", b"lock", RW_NEW)
    view.unlink("/docs/.~lock.report.odt#")
    write(view, "/docs/lu17362ftgp.tmp", b"", RW_NEW)
    fh = view.open("/docs/lu17362ftgp.tmp", os.O_RDWR)
    write(view, "/docs/.~lock.report.odt#", b"lock again", RW_NEW)
    view.write("/docs/lu17362ftgp.tmp", b"PK new document", 0, fh)
    view.fsync("/docs/lu17362ftgp.tmp", False, fh)
    view.release("/docs/lu17362ftgp.tmp", fh)
    view.rename("/docs/lu17362ftgp.tmp", "/docs/report.odt")
    view.chown("/docs/report.odt", -1, os.getgid())
    view.chmod("/docs/report.odt", 0o100644)
    assert committed(rig) == ("Update /docs/report.odt", ["M\tdocs/report.odt"])
    assert rig.remote.show("docs/report.odt") == b"PK new document"
    assert "docs/.~lock.report.odt#" not in rig.remote.files()


def test_word_on_a_share_swaps_names_through_its_temporaries(saving):
    """Microsoft Word saving on a shared folder (as seen from the server; Word does not run
    here, so this is its documented sequence): ~$report.docx (owner file) written at open;
    ~WRD0000.tmp written; rename(report.docx, ~WRL0001.tmp); rename(~WRD0000.tmp, report.docx);
    unlink(~WRL0001.tmp); at close unlink(~$report.docx)."""
    rig, view = saving
    write(view, "/docs/~$report.odt", b"owner", CREATE | os.O_EXCL)
    write(view, "/docs/~WRD0000.tmp", b"PK saved by word", CREATE | os.O_EXCL)
    view.rename("/docs/report.odt", "/docs/~WRL0001.tmp")
    view.rename("/docs/~WRD0000.tmp", "/docs/report.odt")
    view.unlink("/docs/~WRL0001.tmp")
    assert committed(rig) == ("Update /docs/report.odt", ["M\tdocs/report.odt"])
    view.unlink("/docs/~$report.odt")


def test_truncate_and_rewrite(saving):
    """`cat > notes.txt`, Emacs on /tmp: truncate(notes.txt, 0) open(O_WRONLY) write close."""
    rig, view = saving
    view.truncate("/notes.txt", 0)
    write(view, "/notes.txt", b"rewritten\n", os.O_WRONLY)
    assert committed(rig) == ("Update /notes.txt", ["M\tnotes.txt"])


def test_a_save_beside_other_changes_counts_the_document_once(saving):
    rig, view = saving
    write(view, "/.notes.txt.swp", b"swap", RW_NEW)
    view.rename("/notes.txt", "/notes.txt~")
    write(view, "/notes.txt", b"saved\n")
    view.unlink("/notes.txt~")
    write(view, "/new.txt", b"new\n")
    view.unlink("/docs/report.odt")
    subject, changes = committed(rig)
    assert subject == "Update 3 items. Added 2 items. Removed 1 items."
    assert changes == ["D\tdocs/report.odt", "A\tnew.txt", "M\tnotes.txt"]


def test_a_document_created_by_a_save_is_told_as_created(saving):
    rig, view = saving
    write(view, "/.~lock.new.odt#", b"lock", RW_NEW)
    write(view, "/lu1234abcd.tmp", b"PK new", RW_NEW)
    view.rename("/lu1234abcd.tmp", "/new.odt")
    view.unlink("/.~lock.new.odt#")
    assert committed(rig) == ("Created /new.odt", ["A\tnew.odt"])


def test_a_gitignore_negation_commits_the_file_through_the_cycle(saving):
    rig, view = saving
    rig.cycle.ignore_rules = IgnoreRules(rig.path)
    rig.cycle.ignore_rules.install()
    write(view, "/.gitignore", b"!keep-this~\n")
    write(view, "/keep-this~", b"kept\n")
    write(view, "/other~", b"not kept\n")
    subject, changes = committed(rig)
    assert changes == ["A\t.gitignore", "A\tkeep-this~"]
    assert subject == "Update 2 items. Added 2 items."


def test_a_slow_office_save_never_commits_the_document_deleted(saving):
    """Word over a network share: the steps come seconds apart, and a cycle runs between
    the document renamed away and the new version renamed into its place."""
    rig, view = saving
    write(view, "/docs/~$report.odt", b"owner")
    write(view, "/docs/~WRL0001.tmp", b"PK new document")
    view.rename("/docs/report.odt", "/docs/~WRL0002.tmp")
    result = rig.cycle.run()  # the quiet period ended in the middle of the save
    assert result.saves_awaited == ("docs/report.odt",) and not result.complete
    assert "docs/report.odt" in rig.remote.files() and rig.remote.log()[0] == "documents"
    view.rename("/docs/~WRL0001.tmp", "/docs/report.odt")
    view.unlink("/docs/~WRL0002.tmp")
    view.unlink("/docs/~$report.odt")
    subject, changes = committed(rig)
    assert (subject, changes) == ("Update /docs/report.odt", ["M\tdocs/report.odt"])
    assert rig.remote.show("docs/report.odt") == b"PK new document"


def test_a_document_renamed_away_for_good_is_deleted_after_the_wait(saving):
    rig, view = saving
    view.rename("/docs/report.odt", "/docs/~WRL0002.tmp")
    assert rig.cycle.run().saves_awaited == ("docs/report.odt",)
    rig.clock.advance(SAVE_WAIT - 1)
    assert rig.cycle.run().saves_awaited == ("docs/report.odt",)  # still within the wait
    assert "docs/report.odt" in rig.remote.files() and rig.remote.log()[0] == "documents"
    rig.clock.advance(1)
    subject, changes = committed(rig)
    assert changes == ["D\tdocs/report.odt"] and "docs/report.odt" not in rig.remote.files()


def test_a_colleague_s_version_during_a_slow_save_is_kept_as_a_conflict(saving):
    """Their version of the document arrives while it is renamed away: it waits, as for an
    open file, and is never written into the gap for the save's last rename to overwrite."""
    rig, view = saving
    rig.cycle.conflict_report = ConflictRecorder(ConflictLog(rig.repo), rig.status)
    write(view, "/docs/~WRL0001.tmp", b"PK my version")
    view.rename("/docs/report.odt", "/docs/~WRL0002.tmp")
    theirs = rig.remote.commit({"docs/report.odt": b"PK their version"}, "theirs")
    result = rig.cycle.run()
    assert result.waiting_for == ("docs/report.odt",) and not result.complete
    assert not os.path.lexists(os.path.join(rig.path, "docs/report.odt"))  # the gap stays the save's
    view.rename("/docs/~WRL0001.tmp", "/docs/report.odt")
    view.unlink("/docs/~WRL0002.tmp")
    assert rig.cycle.run().conflicts == ("docs/report.odt",)
    assert rig.remote.show("docs/report.odt") == b"PK my version"
    (entry,) = rig.status.snapshot()["conflicts"]
    assert entry["path"] == "docs/report.odt" and entry["remote_commit"] == theirs
    assert rig.remote.show("docs/report.odt", theirs) == b"PK their version"


class IgnoreRulesFailOnce(Repository):
    """A clone whose ignore rules cannot be read once, as when .git/info/exclude is
    unreadable: a fault injected in front of the real repository."""

    failures = 1

    def is_ignored(self, relative):
        if self.failures:
            self.failures -= 1
            with local_write():
                raise pygit2.GitError(f"could not read the ignore rules for {relative}")
        return super().is_ignored(relative)


def test_a_failure_while_waiting_for_a_save_keeps_the_batch(remote, tmp_path):
    remote.commit({"notes.txt": "first\n", "docs/report.odt": b"PK old document"}, "documents")
    rig = make_rig(remote, tmp_path / "mine", repository=IgnoreRulesFailOnce)
    view = CurrentView(Owner(os.getuid(), os.getgid()), rig.path, HandleTable(), rig.state, rig.jobs, max_size=None)
    write(view, "/notes.txt", b"second\n")
    view.rename("/docs/report.odt", "/docs/renamed.odt")
    with pytest.raises(LocalWriteError):
        rig.cycle.run()
    assert rig.jobs.paths() == {"notes.txt", "docs/report.odt", "docs/renamed.odt"}
    rig.cycle.run()
    assert rig.remote.show("notes.txt") == b"second\n" and "docs/renamed.odt" in rig.remote.files()
    assert "docs/report.odt" not in rig.remote.files() and not rig.jobs
