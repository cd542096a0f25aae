"""From Options to a running mount: checks, clone-or-reuse, daemonize, FUSE(...).

Every check that can fail runs before the fork, in the foreground, so that the
user sees one line and a non-zero exit. Without `foreground`, the parent then
waits until the child's mount answers (or fails) before it returns.
"""

from __future__ import annotations

import ctypes
import faulthandler
import logging
import os
import resource
import signal
import socket
import threading

from gitfs import logs
from gitfs.checks import boot_environment, check_fuse, check_mount_point, resolve_owner
from gitfs.clone import check_branch, credentials_of, prepare_clone
from gitfs.errors import FatalError
from gitfs.fuselib import FuseLibrary
from gitfs.mount import Mount
from gitfs.options import Options
from gitfs.privacy import check_secret_files
from gitfs.progress import CloneProgress
from gitfs.repo import libgit2, private_dirs
from gitfs.repo.errors import SettingError
from gitfs.repo.remote.transfer import redact_url
from gitfs.repo.workdir.ignore import IgnoreRules

log = logging.getLogger(__name__)


def run(options: Options, library: FuseLibrary) -> int:
    """Mount with the libfuse that fuselib.choose() picked (and mfusepy loaded)."""
    boot_environment()
    tune_malloc()  # before any thread allocates: a thread's first malloc may make it an arena
    # `kill -USR2 PID` prints every thread's stack on stderr: what a hung daemon is waiting for.
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    # First: a startup error then reaches the log as well as stderr (cli prints it).
    logs.configure(options.log, options.log_level, foreground=options.foreground)
    log.debug("FUSE library: %s", library.describe())
    try:
        return _start(options)
    except SettingError as error:  # the git core's word for a key, a password or ignore file: the user's to fix
        logs.startup_error(str(error))
        raise FatalError(str(error)) from None
    except FatalError as error:
        logs.startup_error(str(error))
        raise


def _start(options: Options) -> int:
    """Every check that can fail, then the clone, then the mount (in this process or a child)."""
    owner = resolve_owner(options)
    check_mount_point(options.mount_point)
    check_fuse()
    if options.max_open_files != -1:
        _set_open_files_limit(options.max_open_files)
    check_secret_files(options)
    credentials = credentials_of(options)
    libgit2.configure(credentials, options.remote_url)
    repo = prepare_clone(options, credentials, CloneProgress(redact_url(options.remote_url)),
                         warn=logs.startup_warning, error=logs.startup_alarm)
    check_branch(repo)
    logs.record_crashes_in(private_dirs.state_folder(repo.git.path))
    ignore_rules = IgnoreRules(repo.path, default_ignore=options.default_ignore,
                               ignore_file=options.ignore_file, hard_ignore=options.hard_ignore)
    ignore_rules.install(repo.gitignore_paths())
    if options.foreground:
        return _serve(options, repo, owner, credentials, ignore_rules, on_ready=_notify_systemd)
    return _daemonize(options, repo, owner, credentials, ignore_rules)


def _set_open_files_limit(limit: int) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    except (ValueError, OverflowError, OSError) as error:
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        raise FatalError(f"option max_open_files: cannot set {limit} ({error}; the hard limit is {hard})") from None


MALLOC_ARENAS = 1
MMAP_THRESHOLD = 512 * 1024
TRIM_THRESHOLD = 2 * 1024 * 1024
M_ARENA_MAX = -8  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3
M_TRIM_THRESHOLD = -1


def tune_malloc() -> None:
    """glibc's malloc for a daemon that runs for months (elsewhere than glibc, nothing to do).

    One arena, the main one, for every thread: by default glibc gives each new thread an
    arena of its own, up to eight per core, and libfuse's threads, each allocating for a
    few calls and then ending, left memory spread over arenas that never shrink (a walk of
    history/ grew the daemon by tens of MB that way). With two, every thread but the main
    one (which waits in libfuse's loop) shared the second, and its free memory between
    blocks in use kept growing under a colleague's push a second (0.6 MB an hour, beside
    the main arena's own), for as long as the mount ran. Python's lock serializes most of
    what the threads allocate: four parallel readers of current/ were no slower with one.

    Blocks of MMAP_THRESHOLD or more are mapped, and given back when freed. By default
    glibc raises that threshold to the size of every mapped block it frees, and a freed
    block of 1 MiB and a page (libfuse's receive buffer) took it past the 1 MiB that
    libgit2's pack writer allocates for each object it sends (a push; a fetch from a path
    remote): those then came from the heap, several a second under a busy team, between
    blocks that stay, and the heap kept growing. FUSE reads' buffers (128 or 256 KiB) stay
    below it: mapped afresh at every read, they would cost big reads half their speed.
    Pinning it also stops glibc keeping twice as much free at the heap's top; without
    TRIM_THRESHOLD (what it kept before) each read's buffers went back to the system and
    were faulted in again at the next read, which cost current/'s reads as much."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(M_ARENA_MAX, MALLOC_ARENAS)
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def _serve(options, repo, owner, credentials, ignore_rules, on_ready) -> int:
    from gitfs.fuse_binding import GitFSFUSE  # mfusepy's FUSE, answering READDIRPLUS

    mount = Mount(options, repo, owner, credentials, on_ready=on_ready, ignore_rules=ignore_rules)
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


def _daemonize(options, repo, owner, credentials, ignore_rules) -> int:
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

        status = _serve(options, repo, owner, credentials, ignore_rules, on_ready=ready)
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
