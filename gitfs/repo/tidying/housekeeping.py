"""Keeping a clone compact over months: its packs consolidated and its loose objects packed.

libgit2 keeps every fetch that brought objects as a pack of its own and has no gc: a
mount that fetched a colleague's pushes for a few weeks had 2,000 packs, and every
commit GitFS made stayed a loose object for good. Reading slows down with the packs
(every lookup asks each one), and so do open files and maps (libgit2.py, packindex.py).

The tidying is git's own, run through the git program: `git gc` repacks into one pack
reusing what is packed already (no object is compressed again), packs and drops loose
objects, expires reflog entries older than git's 90 days and prunes what nothing has
reached for two weeks. It is safe with readers: git writes the new pack and renames it
into place before deleting the old ones, a reader that still has an old pack keeps it
open, and libgit2 (like GitFS's own pack reader) looks at the pack folder again when an
object is not where it was. A kill at any moment leaves every object in an old or a new
pack (git's temporary files are cleaned by the next gc).

What git reads: only the clone's own configuration (.git/config), never the system's nor
the user's (/etc/gitconfig, ~/.gitconfig, ~/.config/git/config: GIT_CONFIG_NOSYSTEM and
GIT_CONFIG_GLOBAL=/dev/null in its environment). GitFS writes the clone's: its remote,
core.bare, core.logAllRefUpdates and the pack-building bounds of libgit2.py (git's
repack keeps to pack.windowMemory and pack.deltaCacheSize too); what anyone adds there
applies as well (pack.threads, gc.cruftPacks), except GC_SETTINGS, given on the command
line over every file: git's defaults for what the tidying relies on. Prune what nothing
has reached for two weeks, never sooner (an object written a moment ago, a file being
staged, is not reached yet); keep reflog entries 90 days, and 30 those of commits no
longer on the branch (the commits a replaced push leaves there); consolidate every pack,
however big; no hook, in the foreground. git's gc.auto and gc.autoPackLimit never apply:
GitFS runs `git gc` without --auto, on its own thresholds.

When: git's default thresholds (more than AUTO_PACK_LIMIT packs, or about AUTO_LOOSE loose
objects), checked at most every CHECK_SECONDS by the sync worker between its cycles, with
the remote link's lock held, so that no fetch, push or commit of GitFS's own changes the
clone meanwhile. A busy mount (files changed every second, as a log written through it)
may never be idle: past BUSY_FACTOR times the thresholds the tidying runs between two
cycles all the same (a few seconds on a clone of months, while commits wait). Never while
a commit waits to be pushed:
libgit2 re-compresses every packed object it sends (a push of packed objects took ~8x
that of loose ones), so what the remote lacks stays loose until it is pushed.

A tidying that fails (git's error, git that cannot be started, the caller's `tidied`) is
said once in the log until one completes, and tried again an hour later; it never delays
a sync, nor makes it back off. Without the git program, nothing is tidied (said once in
the log): libgit2's and GitFS's open packs are bounded all the same, and the clone only
grows.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
import time
from contextlib import AbstractContextManager
from typing import Any, Callable, Optional

from gitfs.repo.filemodes import GIT_DIR

log = logging.getLogger(__name__)

AUTO_PACK_LIMIT = 50  # git's gc.autoPackLimit
AUTO_LOOSE = 6700  # git's gc.auto
BUSY_FACTOR = 2  # a mount never idle is tidied past twice the thresholds
CHECK_SECONDS = 60.0
FAILED_WAIT_SECONDS = 3600.0  # after a failed gc, before trying again
# What the tidying relies on, whatever the clone's configuration says (the module's docstring).
GC_SETTINGS = {
    "gc.pruneExpire": "2.weeks.ago",
    "gc.reflogExpire": "90.days.ago",
    "gc.reflogExpireUnreachable": "30.days.ago",
    "gc.bigPackThreshold": "0",  # no pack kept apart for its size
    # Neither applies without --auto; pinned so that no git may detach or run a hook here
    # (the lock and the wait must be this process's).
    "gc.autoDetach": "false",
    "core.hooksPath": os.devnull,
}
GC_ARGS = (*(part for key, value in GC_SETTINGS.items() for part in ("-c", f"{key}={value}")), "gc", "--quiet")


def clone_figures(repo_path: str) -> tuple[int, int]:
    """(packs, loose objects) of a clone's object folder."""
    objects = os.path.join(repo_path, GIT_DIR, "objects")
    try:
        packs = sum(1 for name in os.listdir(os.path.join(objects, "pack")) if name.endswith(".pack"))
    except OSError:
        packs = 0
    loose = 0
    try:
        folders = [name for name in os.listdir(objects) if len(name) == 2]
    except OSError:
        folders = []
    for name in folders:
        with contextlib.suppress(OSError):
            loose += len(os.listdir(os.path.join(objects, name)))
    return packs, loose


class _GcFailed(Exception):
    """git gc ran and failed; the message has git's last words."""


class Housekeeper:
    """Tidies one clone when it needs it (see the module's docstring).

    `pushed()`: whether every local commit is on the remote; `exclusive()`: a context in
    which nothing else of GitFS's changes the clone; `tidied()`: told after a gc (the
    caller lets go of what it read of the old packs)."""

    def __init__(self, repo_path: str, *, pushed: Callable[[], bool], exclusive: Callable[[], AbstractContextManager],
                 tidied: Callable[[], None] = lambda: None, git: Optional[str] = None,
                 check_seconds: float = CHECK_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.repo_path = repo_path
        self._pushed = pushed
        self._exclusive = exclusive
        self._tidied = tidied
        self._git = git if git is not None else shutil.which("git")
        self._check_seconds = check_seconds
        self._clock = clock
        self._next_check = 0.0  # at once: a clone that arrives aged is tidied at mount
        self._lock = threading.Lock()
        self._running: Optional[Any] = None  # the git gc under way (an sh RunningCommand)
        self._interrupted = False
        self._failing = False  # the last tidying failed, and was said
        self.runs = 0  # gc runs that completed
        self._packs_left = self._loose_left = 0  # what the last gc left
        if self._git is None:
            log.info("git is not installed: the clone's packs are never consolidated (install git to keep it compact)")

    def tidy_if_due(self, busy: bool = False) -> bool:
        """Run git gc if the clone needs it and it is safe now; whether it ran to its end.
        busy: changes wait to be committed (only a clone past BUSY_FACTOR times the
        thresholds is tidied then). Never raises: a failure is the tidying's, not the
        sync's (said once until a tidying completes, tried again after FAILED_WAIT_SECONDS)."""
        if self._git is None or self._clock() < self._next_check:
            return False
        self._next_check = self._clock() + self._check_seconds
        try:
            done = self._tidy(busy)
        except Exception as error:  # whatever it is, the sync must not wait on it nor back off for it
            self._next_check = self._clock() + FAILED_WAIT_SECONDS
            if not self._failing:  # the same failure would come back every hour
                reason = str(error) if isinstance(error, _GcFailed) else f"{type(error).__name__}: {error}"
                log.warning("tidying the clone failed (%s); tried again in an hour", reason)
            self._failing = True
            return False
        if done:
            self._failing = False
        return done

    def _tidy(self, busy: bool) -> bool:
        packs, loose = clone_figures(self.repo_path)
        factor = BUSY_FACTOR if busy else 1
        # Counted from what the last gc left: objects nothing reaches stay loose for git's two
        # weeks, and would otherwise have a gc run again every check.
        if packs - self._packs_left <= AUTO_PACK_LIMIT * factor and \
                loose - self._loose_left <= AUTO_LOOSE * factor:
            return False
        if not self._pushed():
            log.debug("housekeeping waits: commits not on the remote stay loose until pushed")
            return False
        with self._exclusive():
            done = self._gc(packs, loose)
        if done:
            self._tidied()
        return done

    def interrupt(self) -> None:
        """End a gc under way (unmount), with the git repack and pack-objects it runs, which
        would otherwise outlive the daemon: git removes its temporary files on SIGTERM, and
        the clone keeps every object, in the old packs or the new one."""
        with self._lock:
            self._interrupted = True
            if self._running is not None:
                with contextlib.suppress(ProcessLookupError):  # it may have just ended
                    os.killpg(self._running.pid, signal.SIGTERM)  # gc leads its session: its group id is its pid

    def _gc(self, packs: int, loose: int) -> bool:
        import sh  # only where the git program is run: a mount without git never needs it

        assert self._git is not None
        started = time.monotonic()
        with self._lock:
            if self._interrupted:
                return False
            # In a session of its own: its whole process group can be ended (interrupt), and a
            # terminal's Ctrl-C reaches the daemon alone.
            running = sh.Command(self._git)(*GC_ARGS, _cwd=self.repo_path, _bg=True, _bg_exc=False,
                                            _new_session=True, _err_to_out=True, _env=_git_environment())
            self._running = running
        try:
            running.wait()
        except sh.ErrorReturnCode as error:
            if self._interrupted:
                return False
            said = error.stdout.decode(errors="replace").strip().splitlines()
            raise _GcFailed(f"git gc: {said[-1] if said else f'exit status {error.exit_code}'}") from None
        finally:
            with self._lock:
                self._running = None
        self.runs += 1
        packs_after, loose_after = clone_figures(self.repo_path)
        self._packs_left, self._loose_left = packs_after, loose_after
        log.info("clone tidied in %.1f s: %d packs and %d loose objects, now %d and %d",
                 time.monotonic() - started, packs, loose, packs_after, loose_after)
        return True


def _git_environment() -> dict[str, str]:
    """The daemon's environment without what would point git elsewhere than the clone, nor
    any configuration file but the clone's."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    environment.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return environment
