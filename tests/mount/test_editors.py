"""Layer 3: the programs people edit with, run on the mount: vim, Emacs and nano in a
terminal (tmux, typed into with send-keys), GIO's save (gedit's), LibreOffice driven
through its UNO pipe. Their swap, lock, backup and auto-save files work in current/
and never reach the remote; each save is one commit of the document alone; a swap
file open for a long time holds no other change back.

What each program does on a save (strace -f -e trace=file,desc, on a local disk):
- vim 9.0: open(.notes.txt.swp, O_RDWR|O_CREAT|O_EXCL), kept open and written while vim
  runs; on :w open(4913, O_WRONLY|O_CREAT|O_EXCL) close unlink(4913) (a probe);
  rename(notes.txt, notes.txt~); open(notes.txt, O_WRONLY|O_CREAT) ftruncate write fsync
  fchmod close; unlink(notes.txt~); on :q unlink(.notes.txt.swp).
- Emacs 28: symlink(user@host.pid, .#notes.txt) at the first change;
  open(#notes.txt#, O_WRONLY|O_CREAT|O_TRUNC) at an auto-save; on C-x C-s (first of the
  session) rename(notes.txt, notes.txt~), open(notes.txt, O_WRONLY|O_CREAT|O_TRUNC) write
  close, unlink(.#notes.txt), chmod, unlink(#notes.txt#).
- nano 7.2 --locking --backup: open(.notes.txt.swp, O_WRONLY|O_CREAT|O_EXCL) write close
  (rewritten at each save); open(notes.txt~, O_WRONLY|O_CREAT|O_EXCL) write close (a copy);
  open(notes.txt, O_WRONLY|O_CREAT|O_TRUNC) write close; on SIGHUP with unsaved changes
  open(notes.txt.save, O_WRONLY|O_CREAT|O_EXCL) write close.
- gio save (GIO's g_file_replace, as gedit): open(.goutputstream-XXXXXX,
  O_WRONLY|O_CREAT|O_EXCL) write fsync; rename(.goutputstream-XXXXXX, notes.txt).
- LibreOffice 7.4 (UNO store): at load open(report.odt, O_RDWR) kept open and
  open(.~lock.report.odt#, O_RDWR|O_CREAT|O_EXCL) pwrite close; on store unlink(.~lock..#),
  open(luNNNNxxxx.tmp, O_RDWR|O_CREAT|O_EXCL), the lock taken again, pwrite(lu..tmp) fsync
  close, rename(lu..tmp, report.odt), chown, chmod; at close unlink(.~lock..#).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers import descendants, git, read_status, wait_for

HERE = Path(__file__).parent
SYSTEM_PYTHON = "/usr/bin/python3"  # python3-uno is a module of Debian's python, not pip's


def needs(*programs):
    missing = [program for program in programs if shutil.which(program) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


def kill_tree(pid: int) -> None:
    """SIGKILL pid and every process below it, by their ids, and wait until they are gone
    (a dying process still holds its folder in current/: unmounting would fail)."""
    processes = [*descendants(pid), pid]
    for process in processes:
        try:
            os.kill(process, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not any(_alive(process) for process in processes), timeout=30, message="the programs' end")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Terminal:
    """One program in a tmux session of its own server (its own socket); typed into with send-keys."""

    def __init__(self, socket: Path):
        self.socket = str(socket)
        self.started = False

    def tmux(self, *args: str) -> str:
        result = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def start(self, command: list[str], cwd: Path) -> None:
        self.tmux("new-session", "-d", "-s", "edit", "-x", "100", "-y", "30", "-c", str(cwd), *command)
        self.started = True

    def program_pid(self) -> int:
        return int(self.tmux("list-panes", "-t", "edit", "-F", "#{pane_pid}").split()[0])

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "edit", "-l", text)

    def keys(self, *names: str) -> None:
        self.tmux("send-keys", "-t", "edit", *names)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "edit")

    def running(self) -> bool:
        result = subprocess.run(["tmux", "-S", self.socket, "has-session", "-t", "edit"], capture_output=True)
        return result.returncode == 0

    def stop(self) -> None:
        if not self.started:
            return
        server = subprocess.run(["tmux", "-S", self.socket, "display-message", "-p", "#{pid}"],
                                capture_output=True, text=True).stdout.strip()
        if server.isdigit():
            kill_tree(int(server))


@pytest.fixture
def terminal(tmp_path):
    term = Terminal(tmp_path / "tmux.sock")
    yield term
    term.stop()


def ever_committed(remote) -> set[str]:
    """Every path any commit of the remote's branch added or changed."""
    out = git("--git-dir", str(remote.bare), "log", "--format=", "--name-only", remote.branch)
    return {line for line in out.splitlines() if line}


def last_commit(remote) -> tuple[str, list[str]]:
    """(subject, name-status lines) of the remote's last commit."""
    out = git("--git-dir", str(remote.bare), "show", "--format=%s", "--name-status", remote.branch)
    lines = [line for line in out.splitlines() if line]
    return lines[0], lines[1:]


def arrives(remote, name, timeout=15.0):
    wait_for(lambda: name in remote.files(), timeout=timeout, message=f"{name} on the remote")


# -- the open-file bound ------------------------------------------------------------------

# With sync_timeout=2 a file open for writing holds changes back for ten quiet periods
# (20 s); a change that arrives within 15 s while an ignored file is open was not held.
SYNC_TIMEOUT = 2
NOT_HELD = 15.0


@needs("vim", "tmux")
def test_vim_swap_file_open_across_quiet_periods_holds_nothing_back(remote, mount_gitfs, terminal):
    remote.commit({"notes.txt": "first line\n"}, "notes")
    mount = mount_gitfs(remote, sync_timeout=SYNC_TIMEOUT)
    current = mount.current
    # backupskip= : vim makes no backup for files under /tmp, where the test's mount is.
    terminal.start(["vim", "-u", "NONE", "-i", "NONE", "-N", "-c", "set backupskip= nobackup writebackup",
                    "notes.txt"], cwd=current)
    swap = current / ".notes.txt.swp"
    wait_for(swap.exists, message="vim's swap file")
    terminal.keys("G", "o")
    terminal.type("typed in vim")
    terminal.keys("Escape")
    for number in range(2):  # vim's swap stays open for writing meanwhile
        (current / f"elsewhere{number}.txt").write_text("written while vim runs\n")
        arrives(remote, f"elsewhere{number}.txt", timeout=NOT_HELD)
        assert swap.exists()
    # The swap file, written and open, is nothing that waits to be committed.
    wait_for(lambda: read_status(mount)["pending"] == {"commits_not_pushed": 0, "changes_not_committed": 0},
             message="nothing pending while vim runs")
    terminal.type(":w")
    terminal.keys("Enter")
    wait_for(lambda: remote.show("notes.txt") == b"first line\ntyped in vim\n", timeout=NOT_HELD,
             message="vim's save")
    assert last_commit(remote) == ("Update /notes.txt", ["M\tnotes.txt"])
    terminal.type(":q")
    terminal.keys("Enter")
    wait_for(lambda: not swap.exists(), message="vim's exit")
    assert ever_committed(remote) == {"testing", "me", "notes.txt", "elsewhere0.txt", "elsewhere1.txt"}
    assert (current / "notes.txt").read_text() == "first line\ntyped in vim\n"


def test_a_file_open_in_an_ignored_folder_holds_nothing_back(remote, mount_gitfs):
    remote.commit({".gitignore": "/build/\n"}, "ignore build")
    mount = mount_gitfs(remote, sync_timeout=SYNC_TIMEOUT)
    (mount.current / "build").mkdir()
    with open(mount.current / "build/out.log", "w") as log:
        log.write("a build writing its log\n")
        log.flush()
        (mount.current / "marker.txt").write_text("m\n")
        arrives(remote, "marker.txt", timeout=NOT_HELD)
        log.write("still writing\n")
    assert not any(path.startswith("build/") for path in ever_committed(remote))


# -- Emacs and nano in a terminal -------------------------------------------------------------

@needs("emacs", "tmux")
def test_emacs_lock_auto_save_and_backup_never_reach_the_remote(remote, mount_gitfs, terminal):
    remote.commit({"notes.txt": "first line\n"}, "notes")
    mount = mount_gitfs(remote)
    current = mount.current
    # Emacs makes no backup of a file under /tmp unless told to.
    terminal.start(["emacs", "-nw", "-Q", "--eval", "(setq backup-enable-predicate (lambda (name) t))",
                    "notes.txt"], cwd=current)
    wait_for(lambda: "first line" in terminal.screen(), timeout=60, message="Emacs showing the file")
    terminal.type("typed in emacs ")
    lock, auto_save = current / ".#notes.txt", current / "#notes.txt#"
    wait_for(lambda: os.path.islink(lock), message="Emacs' lock")
    terminal.keys("M-x")
    terminal.type("do-auto-save")
    terminal.keys("Enter")
    wait_for(auto_save.exists, message="Emacs' auto-save file")
    (current / "marker.txt").write_text("m\n")
    arrives(remote, "marker.txt")
    assert os.path.islink(lock) and auto_save.exists()
    terminal.keys("C-x", "C-s")
    wait_for(lambda: remote.show("notes.txt") == b"typed in emacs first line\n", message="Emacs' save")
    assert last_commit(remote) == ("Update /notes.txt", ["M\tnotes.txt"])
    wait_for(lambda: not auto_save.exists() and not os.path.lexists(lock), message="Emacs' cleanup")
    assert (current / "notes.txt~").read_text() == "first line\n"  # the backup stays, for the user
    terminal.keys("C-x", "C-c")
    wait_for(lambda: not terminal.running(), timeout=30, message="Emacs' exit")
    assert ever_committed(remote) == {"testing", "me", "notes.txt", "marker.txt"}


@needs("nano", "tmux")
def test_nano_lock_backup_and_save_file_never_reach_the_remote(remote, mount_gitfs, terminal):
    remote.commit({"notes.txt": "first line\n"}, "notes")
    mount = mount_gitfs(remote)
    current = mount.current
    terminal.start(["nano", "--locking", "--backup", "notes.txt"], cwd=current)
    lock = current / ".notes.txt.swp"
    wait_for(lock.exists, message="nano's lock file")
    terminal.type("typed in nano ")
    terminal.keys("C-s")
    wait_for(lambda: remote.show("notes.txt") == b"typed in nano first line\n", message="nano's save")
    assert last_commit(remote) == ("Update /notes.txt", ["M\tnotes.txt"])
    assert lock.exists() and (current / "notes.txt~").read_text() == "first line\n"
    terminal.type("unsaved ")
    wait_for(lambda: "unsaved" in terminal.screen(), message="the typing")
    os.kill(terminal.program_pid(), signal.SIGHUP)  # the terminal went away: nano saves the buffer aside
    wait_for(lambda: (current / "notes.txt.save").exists(), message="nano's .save file")
    (current / "marker.txt").write_text("m\n")
    arrives(remote, "marker.txt")
    assert ever_committed(remote) == {"testing", "me", "notes.txt", "marker.txt"}
    assert (current / "notes.txt.save").read_text() == "typed in nano unsaved first line\n"


@needs("gio")
def test_gio_save_the_way_gedit_saves(remote, mount_gitfs):
    remote.commit({"notes.txt": "first line\n"}, "notes")
    mount = mount_gitfs(remote)
    subprocess.run(["gio", "save", "notes.txt"], input=b"saved the way gedit saves\n", cwd=mount.current,
                   check=True, timeout=60)
    wait_for(lambda: remote.show("notes.txt") == b"saved the way gedit saves\n", message="the save")
    assert last_commit(remote) == ("Update /notes.txt", ["M\tnotes.txt"])
    assert ever_committed(remote) == {"testing", "me", "notes.txt"}


# -- the rules at the mount -------------------------------------------------------------------

def test_look_alike_names_are_committed_and_a_gitignore_brings_one_back(remote, mount_gitfs):
    remote.commit({".gitignore": "!keep-this~\n"}, "keep one backup")
    mount = mount_gitfs(remote)
    current = mount.current
    for name in ("notes~draft.txt", "lock.txt", "keep-this~", "other~", ".DS_Store", "~$report.docx"):
        (current / name).write_text(f"{name}\n")
    (current / "marker.txt").write_text("m\n")
    arrives(remote, "marker.txt")
    files = set(remote.files())
    assert {"notes~draft.txt", "lock.txt", "keep-this~"} <= files
    assert not files & {"other~", ".DS_Store", "~$report.docx"}
    assert (current / "other~").read_text() == "other~\n"  # fully usable in current/


def test_default_ignore_false_commits_them(remote, mount_gitfs):
    mount = mount_gitfs(remote, default_ignore="false", hard_ignore="*.bak")
    for name in ("notes.txt~", ".DS_Store", "old.bak"):
        (mount.current / name).write_text(f"{name}\n")
    (mount.current / "marker.txt").write_text("m\n")
    arrives(remote, "marker.txt")
    files = set(remote.files())
    assert {"notes.txt~", ".DS_Store"} <= files and "old.bak" not in files


# -- LibreOffice ---------------------------------------------------------------------------------

def _uno_available() -> bool:
    if shutil.which("soffice") is None or not os.path.exists(SYSTEM_PYTHON):
        return False
    return subprocess.run([SYSTEM_PYTHON, "-c", "import uno"], capture_output=True).returncode == 0


class Office:
    """A `soffice --headless` of its own (own profile, own UNO pipe, own process group) and
    the lo_edit.py script that drives it, one command per line."""

    def __init__(self, folder: Path):
        pipe = f"gitfs-test-{os.getpid()}-{id(self)}"
        self.log = folder / "soffice.log"
        self.soffice = subprocess.Popen(
            ["soffice", "--headless", "--invisible", "--norestore", "--nologo", "--nodefault", "--nolockcheck",
             f"--accept=pipe,name={pipe};urp;", f"-env:UserInstallation=file://{folder}/profile"],
            stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.driver = subprocess.Popen([SYSTEM_PYTHON, str(HERE / "lo_edit.py"), pipe], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, start_new_session=True)

    def ask(self, command: str) -> str:
        assert self.driver.stdin is not None and self.driver.stdout is not None
        self.driver.stdin.write(command + "\n")
        self.driver.stdin.flush()
        answer = self.driver.stdout.readline().rstrip("\n")
        assert answer.startswith("ok"), f"{command}: {answer or 'no answer'}\n{self.log.read_text()}"
        return answer[3:]

    def stop(self) -> None:
        for process in (self.driver, self.soffice):
            kill_tree(process.pid)
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def office(tmp_path_factory):
    """One LibreOffice for the module's tests: it takes seconds to start."""
    if not _uno_available():
        pytest.skip("LibreOffice (libreoffice-writer-nogui) or python3-uno is not installed")
    office = Office(tmp_path_factory.mktemp("office"))
    try:
        yield office
    finally:
        office.stop()


def odt_text(data: bytes, folder: Path) -> str:
    path = folder / "check.odt"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as document:
        return document.read("content.xml").decode()


def test_libreoffice_edit_keeps_its_lock_and_temporaries_local(remote, mount_gitfs, office, tmp_path):
    made = tmp_path / "made.odt"
    office.ask(f"create {made} The first version.")
    remote.commit({"docs/report.odt": made.read_bytes()}, "a report")
    mount = mount_gitfs(remote)
    current = mount.current
    document, lock = current / "docs/report.odt", current / "docs/.~lock.report.odt#"
    office.ask(f"open {document}")
    assert lock.exists()  # taken while the document is open
    (current / "marker.txt").write_text("m\n")
    arrives(remote, "marker.txt")
    office.ask("append  And a second sentence.")
    office.ask("store")
    wait_for(lambda: "second sentence" in odt_text(remote.show("docs/report.odt"), tmp_path),
             message="LibreOffice's save")
    assert last_commit(remote) == ("Update /docs/report.odt", ["M\tdocs/report.odt"])
    assert lock.exists()
    assert remote.show("docs/report.odt") == document.read_bytes()
    office.ask("close")
    wait_for(lambda: not lock.exists(), message="the lock's removal")
    (current / "marker2.txt").write_text("m\n")
    arrives(remote, "marker2.txt")
    assert ever_committed(remote) == {"testing", "me", "docs/report.odt", "marker.txt", "marker2.txt"}
    assert not [name for name in os.listdir(current / "docs") if name.startswith("lu")]
