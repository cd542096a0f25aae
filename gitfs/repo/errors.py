"""Typed errors of the git core: views turn them into errno values, the sync layer into
a back-off, the daemon into one line on stderr. Nothing of libgit2's or the OS's own
exceptions leaves the core's write side: local_write() turns them into LocalWriteError."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pygit2


class GitCoreError(Exception):
    pass


class PathNotFound(GitCoreError):
    pass


class NotADirectory(GitCoreError):
    pass


class ContentUnavailable(GitCoreError):
    """What a file of a commit stands for cannot be had now (a content filter's object that
    is missing, still downloading or damaged): the filter has reported why; readers get EIO."""


class RemoteError(GitCoreError):
    """Fetch, push or clone failed; the message says why in words."""


class PushRejected(RemoteError):
    """The remote's branch moved meanwhile (not a fast-forward): merge and push again."""


# What a server that refuses every write of a mount denies it (PushRefused.denied).
DENIED_CREDENTIALS = "credentials"  # its words blame them: wrong, expired, revoked
DENIED_RIGHTS = "rights"  # the credentials are good, and may only read
DENIED_EITHER = "credentials or rights"  # its words do not tell (an HTTP 403 alone)


class PushRefused(RemoteError):
    """The server said no to the push itself (a hook, a protected branch, a size limit,
    read-only access, credentials it no longer takes): pushing the same commits again gets
    the same answer.

    `reason` is the per-reference (or transport) message, `server_says` the lines the
    server printed (git shows them as `remote: ...`), `denied` what a server that refuses
    this mount any write at all denies it (DENIED_CREDENTIALS, DENIED_RIGHTS or
    DENIED_EITHER; "" when it refused this push only), `commit` the commit whose push was
    refused."""

    def __init__(self, message: str, *, reason: str, server_says: tuple[str, ...] = (), denied: str = "",
                 commit: str = ""):
        super().__init__(message)
        self.reason = reason
        self.server_says = server_says
        self.denied = denied
        self.commit = commit

    @property
    def writes_refused(self) -> bool:
        """Whether the server refuses this mount any write, whatever it blames."""
        return bool(self.denied)


class SettingError(GitCoreError):
    """A local file or option the git core cannot use: a key, a password file, an ignore file."""


class LocalWriteError(GitCoreError):
    """Changing the clone failed on this machine (a full disk, a lock file left by another
    program, a working file that vanished or cannot be read); the message is the system's
    or libgit2's. The clone is left as it was, so the same change can be tried again."""


@contextlib.contextmanager
def local_write() -> Iterator[None]:
    """Around (or, as a decorator, on) a change to the clone: libgit2's and the OS's errors,
    and the KeyError/ValueError pygit2 raises for a path its index refuses, become
    LocalWriteError."""
    try:
        yield
    except (OSError, pygit2.GitError, KeyError, ValueError) as error:
        raise LocalWriteError(str(error)) from error
