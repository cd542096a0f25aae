"""From Options to a running mount: checks, clone-or-reuse, daemonize, FUSE(...).

Every check that can fail runs before the fork, in the foreground, so that the
user sees one line and a non-zero exit. Without `foreground`, the parent then
waits until the child's mount answers (or fails) before it returns.
"""

from __future__ import annotations

import errno
import grp
import hashlib
import logging
import os
import pwd
import queue
import re
import resource
import shutil
import signal
import socket
import sys
import threading
import time
from typing import Optional

import pygit2
from mfusepy import FuseOSError

from gitfs import logs
from gitfs.errors import FatalError
from gitfs.handles import HandleTable
from gitfs.options import Options
from gitfs.repo import remote as remote_ops
from gitfs.repo import credentials as credential_files
from gitfs.repo.days import CommitDays
from gitfs.repo.errors import RemoteError
from gitfs.repo.ignore import install_extra_ignores
from gitfs.repo.repository import REMOTE_NAME, Repository
from gitfs.router import Router
from gitfs.routes import build_routes
from gitfs.sync.fetch_worker import FetchWorker
from gitfs.sync.jobs import CommitJob, job_paths
from gitfs.sync.state import SyncState
from gitfs.sync.status import SyncStatus
from gitfs.sync.sync_worker import SyncWorker
from gitfs.views.base import Owner
from gitfs.views.commit import CommitView
from gitfs.views.current import CurrentView
from gitfs.views.history import HistoryView
from gitfs.views.index import IndexView
from gitfs.views.status import StatusView

log = logging.getLogger(__name__)

UNMOUNT_PUSH_SECONDS = 30.0
READY_TIMEOUT = 120.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# -- checks -------------------------------------------------------------------

def boot_environment() -> None:
    """mount.fuse3 at boot runs us with no PATH and no HOME."""
    os.environ.setdefault("PATH", DEFAULT_PATH)
    if "HOME" not in os.environ:
        os.environ["HOME"] = pwd.getpwuid(os.getuid()).pw_dir


def resolve_owner(options: Options) -> Owner:
    try:
        uid = int(options.user) if options.user.isdigit() else pwd.getpwnam(options.user).pw_uid
    except KeyError:
        raise FatalError(f"unknown user {options.user!r} (option user)") from None
    try:
        gid = int(options.group) if options.group.isdigit() else grp.getgrnam(options.group).gr_gid
    except KeyError:
        raise FatalError(f"unknown group {options.group!r} (option group)") from None
    return Owner(uid, gid)


def check_mount_point(path: str) -> None:
    if not os.path.exists(path):
        raise FatalError(f"mount point {path} does not exist")
    if not os.path.isdir(path):
        raise FatalError(f"mount point {path} is not a directory")
    if os.path.ismount(path):
        raise FatalError(f"mount point {path} is already a mount")


def check_local_remote(url: str) -> None:
    """A remote given as a path must exist (libgit2 would say "unsupported URL protocol")."""
    if "://" in url or ":" in url.split("/", 1)[0]:
        return  # a URL, or scp-like [user@]host:path
    if not os.path.exists(url):
        raise FatalError(f"remote {url} does not exist")


def check_fuse() -> None:
    if not os.path.exists("/dev/fuse"):
        raise FatalError("/dev/fuse is missing: load the fuse module or install fuse3")
    if not (shutil.which("fusermount3") or shutil.which("fusermount")) and os.getuid() != 0:
        raise FatalError("fusermount3 not found: install fuse3")


def default_repo_path(remote_url: str) -> str:
    """/var/lib/gitfs/<name>-<hash> for root, ~/.cache/gitfs/<name>-<hash> for others."""
    cleaned = remote_ops.redact_url(remote_url).rstrip("/")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(cleaned) or "remote").strip("._") or "remote"
    digest = hashlib.sha1(cleaned.encode()).hexdigest()[:8]
    if os.getuid() == 0:
        parent = "/var/lib/gitfs"
    else:
        parent = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gitfs")
    return os.path.join(parent, f"{name}-{digest}")


# -- the clone ------------------------------------------------------------------

def credentials_of(options: Options) -> remote_ops.Credentials:
    """Credentials from the options, secret files read now (a missing file is a startup error).

    Passwords: password=, else password_file=, else $GITFS_PASSWORD; passphrases likewise."""
    try:
        password = options.password or (
            credential_files.read_secret(options.password_file, "password_file") if options.password_file
            else os.environ.get(credential_files.PASSWORD_ENV, ""))
        passphrase = options.ssh_key_passphrase or (
            credential_files.read_secret(options.ssh_key_passphrase_file, "ssh_key_passphrase_file")
            if options.ssh_key_passphrase_file else os.environ.get(credential_files.PASSPHRASE_ENV, ""))
        credentials = remote_ops.Credentials(
            username=options.username, password=password, ssh_key=options.ssh_key, ssh_user=options.ssh_user,
            ssh_public_key=options.ssh_public_key, ssh_key_passphrase=passphrase,
            ssh_known_hosts=options.ssh_known_hosts,
            ssh_strict_host_key_checking=options.ssh_strict_host_key_checking, ssl_ca_file=options.ssl_ca_file,
            state_dir=os.path.dirname(default_repo_path(options.remote_url)))
        credential_files.check(credentials, options.remote_url)
    except RemoteError as error:
        raise FatalError(str(error)) from None
    return credentials


def prepare_clone(options: Options, credentials: remote_ops.Credentials) -> Repository:
    """Clone the remote into repo_path, or reuse the clone already there."""
    path = options.repo_path or default_repo_path(options.remote_url)
    options.repo_path = path
    if os.path.isdir(os.path.join(path, ".git")):
        repo = _reuse(path, options, credentials)
    else:
        if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
            raise FatalError(f"repo_path {path} exists and is not a GitFS clone; choose another repo_path")
        check_local_remote(options.remote_url)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            remote_ops.clone(options.remote_url, path, options.branch, credentials)
        except RemoteError as error:  # one line: unreachable, authentication, host key, not found, branch
            shutil.rmtree(path, ignore_errors=True)
            raise FatalError(str(error)) from None
        git = pygit2.Repository(path)
        if git.head_is_unborn:
            shutil.rmtree(path, ignore_errors=True)
            raise FatalError(f"{remote_ops.redact_url(options.remote_url)} is empty: push a first commit to it")
        repo = Repository(path, git.head.shorthand)
    options.branch = repo.branch
    return repo


def _reuse(path: str, options: Options, credentials: remote_ops.Credentials) -> Repository:
    git = pygit2.Repository(path)
    origin = git.remotes[REMOTE_NAME].url if REMOTE_NAME in [r.name for r in git.remotes] else None
    if origin != options.remote_url:
        raise FatalError(f"repo_path {path} is a clone of {remote_ops.redact_url(origin or 'nothing')}, "
                         f"not of {remote_ops.redact_url(options.remote_url)}")
    _remove_stale_locks(path)
    branch = options.branch or (git.head.shorthand if not git.head_is_unborn else None)
    if branch is None:
        raise FatalError(f"repo_path {path} has no branch checked out; choose another repo_path")
    current = None if git.head_is_unborn else git.head.shorthand
    if current != branch:
        raise FatalError(f"repo_path {path} follows branch {current!r}, not {branch!r}; choose another repo_path")
    repo = Repository(path, branch)
    try:
        remote_ops.fetch(repo, credentials)
    except (remote_ops.AuthenticationError, remote_ops.HostKeyError) as error:
        # A wrong password or key, or a host key to check, is for the user to fix now; the clone is kept.
        raise FatalError(str(error)) from None
    except RemoteError as error:
        print(f"gitfs: warning: {error}; mounting the local clone, changes are pushed later", file=sys.stderr)
    return repo


def _remove_stale_locks(path: str) -> None:
    # We are the only writer of this clone: a lock left here is from a crash.
    for name in ("index.lock", "HEAD.lock"):
        lock = os.path.join(path, ".git", name)
        if os.path.exists(lock):
            os.unlink(lock)


def check_branch(repo: Repository, options: Options) -> None:
    if repo.branch_tip() is None:
        raise FatalError(f"branch {options.branch!r} does not exist in {options.repo_path}")


def recovered_jobs(paths: list[str]) -> list[CommitJob]:
    """Changes found on disk at start (left by a crash): one job per path."""
    return [CommitJob(f"Update /{path}", add=(path,)) for path in paths]


# -- wiring ---------------------------------------------------------------------------

class Mount:
    """Builds the views, router and workers from Options; owns their lifecycle."""

    def __init__(self, options: Options, repo: Repository, owner: Owner, credentials: remote_ops.Credentials,
                 *, on_ready=None):
        self.options = options
        self.repo = repo
        self.owner = owner
        self.on_ready = on_ready
        self.mount_time = int(time.time())
        self.handles = HandleTable()
        self.jobs: queue.Queue = queue.Queue()
        # Idle after min_idle_times quiet sync periods, as the original (at least 1 s).
        self.state = SyncState(idle_after=max(options.min_idle_times * options.sync_timeout, 1.0))
        self.days = CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor)
        self.status = SyncStatus(remote=remote_ops.redact_url(options.remote_url), branch=repo.branch,
                                 pending=self.pending)
        self.sync_worker = SyncWorker(
            repo, self.jobs, self.state, credentials=credentials, signature=self.signature,
            writers=self.handles.writers, dirty_open_paths=self.handles.dirty_paths,
            open_paths=self.handles.open_paths, sync_timeout=options.sync_timeout, status=self.status)
        self.fetch_worker = FetchWorker(
            repo, self.state, credentials=credentials, fetch_timeout=options.fetch_timeout,
            idle_fetch_timeout=options.idle_fetch_timeout, on_remote_moved=self.sync_worker.wake,
            status=self.status)
        routes = build_routes(current_path=options.current_path, history_path=options.history_path)
        self.router = Router(routes, self.make_view, cache_size=options.cache_size, touch=self.state.touch,
                             on_init=self.start, on_destroy=self.stop)

    def signature(self) -> pygit2.Signature:
        return pygit2.Signature(self.options.commiter_name, self.options.commiter_email)

    def pending(self) -> dict:
        """What is not on the remote yet, for the status file."""
        queued = list(self.sync_worker.pending) + [job for job in list(self.jobs.queue)  # snapshots; the worker
                                                   if job is not None]                 # owns both (None: a wake-up)
        return {"commits_not_pushed": self.repo.count_ahead(),
                "changes_not_committed": len(job_paths(queued) | set(self.handles.dirty_paths()))}

    def make_view(self, kind: str, prefix: str, groups: tuple):
        groups = dict(groups)
        if kind == "status":
            return StatusView(self.owner, self.status, self.handles, mount_time=self.mount_time)
        if kind == "current":
            extra = (self.options.history_path,) if not self.options.current_path else ()
            return CurrentView(self.owner, self.repo.workdir, self.handles, self.state, self.jobs,
                               max_size=self.options.max_size_bytes, extra_root_entries=extra)
        if kind == "index":
            return IndexView(self.owner, entries=[self.options.current_path, self.options.history_path],
                             mount_time=self.mount_time, disk_path=self.repo.workdir)
        if kind == "history":
            return HistoryView(self.owner, self.days, mount_time=self.mount_time)
        if kind == "day":
            return HistoryView(self.owner, self.days, day=groups["day"], mount_time=self.mount_time)
        found = self.days.commit(groups["day"], groups["name"])
        if found is None:
            raise FuseOSError(errno.ENOENT)  # not cached: lru_cache keeps no exceptions
        commit, commit_time = found
        return CommitView(self.owner, self.repo, self.handles, commit=commit, commit_time=commit_time)

    def start(self) -> None:
        """FUSE init: after any fork, so the threads live in the mounting process."""
        self.sync_worker.start()
        self.fetch_worker.start()
        log.info("mounted %s (branch %s) on %s", remote_ops.redact_url(self.options.remote_url),
                 self.options.branch, self.options.mount_point)
        if self.on_ready:
            self.on_ready()

    def stop(self) -> None:
        """FUSE destroy: commit what is pending and push it if the remote answers in time."""
        deadline = time.monotonic() + UNMOUNT_PUSH_SECONDS
        self.fetch_worker.stop(timeout=10)
        self.sync_worker.stop(timeout=UNMOUNT_PUSH_SECONDS)
        self.sync_worker.final_sync(deadline)
        log.info("unmounted %s", self.options.mount_point)

    def fuse_options(self) -> dict:
        options = self.options
        fuse_kwargs = dict(foreground=True, fsname=remote_ops.redact_url(options.remote_url).replace(",", "_"),
                           subtype="gitfs", allow_other=options.allow_other,
                           allow_root=options.allow_root and not options.allow_other,
                           # Explicit: libfuse 3.14 prints a bogus warning for its own default.
                           max_threads=16, max_idle_threads=8)
        if options.allow_other:
            fuse_kwargs["default_permissions"] = True
        if options.read_only:
            fuse_kwargs["ro"] = True
        return fuse_kwargs


# -- running ----------------------------------------------------------------------

def run(options: Options) -> int:
    boot_environment()
    # First: a startup error then reaches the log as well as stderr (cli prints it).
    logs.configure(options.log, options.log_level, foreground=options.foreground)
    try:
        owner = resolve_owner(options)
        check_mount_point(options.mount_point)
        check_fuse()
        if options.max_open_files != -1:
            resource.setrlimit(resource.RLIMIT_NOFILE, (options.max_open_files, options.max_open_files))
        credentials = credentials_of(options)
        repo = prepare_clone(options, credentials)
        check_branch(repo, options)
        install_extra_ignores(repo.path, options.ignore_file, options.hard_ignore)
        if options.foreground:
            return _serve(options, repo, owner, credentials, on_ready=_notify_systemd)
        return _daemonize(options, repo, owner, credentials)
    except FatalError as error:
        logs.startup_error(str(error))
        raise


def _serve(options, repo, owner, credentials, on_ready) -> int:
    from gitfs.router import GitFSFUSE  # mfusepy's FUSE, answering READDIRPLUS

    mount = Mount(options, repo, owner, credentials, on_ready=on_ready)
    mount.sync_worker.commit_everything(recovered_jobs)  # left on disk by a crash
    _sync_on_sigusr1(mount.sync_worker.sync_now)
    try:
        GitFSFUSE(mount.router, options.mount_point, raw_fi=True, **mount.fuse_options())
    except RuntimeError as error:
        raise FatalError(f"cannot mount on {options.mount_point}: libfuse error {error}") from None
    return 0


def _sync_on_sigusr1(sync_now) -> None:
    """`kill -USR1 PID` syncs now.

    The main thread sits in libfuse's C loop for the life of the mount, so a
    Python signal handler would only run after unmount. Instead SIGUSR1 is
    blocked here, before libfuse starts its threads (they inherit the mask), and
    a small thread takes it with sigwait().
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})

    def wait_for_signals() -> None:
        while True:
            signal.sigwait({signal.SIGUSR1})
            log.info("SIGUSR1: syncing now")
            sync_now()

    threading.Thread(target=wait_for_signals, name="SignalWaiter", daemon=True).start()


def _notify_systemd() -> None:
    """READY=1 to $NOTIFY_SOCKET (Type=notify units), without a systemd library.

    Called once the mount answers (FUSE init), in the process that serves it."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(b"READY=1\nSTATUS=mounted\n")
    except OSError as error:
        log.warning("cannot notify systemd at NOTIFY_SOCKET=%s: %s", os.environ["NOTIFY_SOCKET"], error)


def _daemonize(options, repo, owner, credentials) -> int:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return _wait_for_child(pid, read_end, options.mount_point)
    os.close(read_end)
    os.setsid()
    status = 1
    try:
        def ready():
            _notify_systemd()
            os.write(write_end, b"ok\n")
            os.close(write_end)
            _detach_stdio()

        status = _serve(options, repo, owner, credentials, on_ready=ready)
    except FatalError as error:  # the parent logs it and prints it
        _tell_parent(write_end, str(error))
    except Exception as error:  # noqa: BLE001 - the child must report, never print a traceback
        log.exception("mount failed")
        _tell_parent(write_end, f"mount failed: {error}")
    finally:
        log.info("gitfs daemon exits with status %d", status)
        logging.shutdown()
        os._exit(status)


def _tell_parent(fd: int, message: str) -> None:
    try:
        os.write(fd, f"error: {message}\n".encode())
    except OSError:
        pass


def _detach_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _wait_for_child(pid: int, read_end: int, mount_point: str) -> int:
    with os.fdopen(read_end, "rb") as pipe:
        line = pipe.readline().decode(errors="replace").strip()
    if line == "ok":
        return 0
    _, status = os.waitpid(pid, 0)
    if line.startswith("error: "):
        raise FatalError(line[len("error: "):])
    raise FatalError(f"mounting on {mount_point} failed (exit status {os.waitstatus_to_exitcode(status)})")
