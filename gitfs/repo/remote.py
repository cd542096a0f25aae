"""Network side of the git core: clone, fetch and push.

Every function here may block on the network; none is ever called from a FUSE
callback (see sync/state.py). What to offer the server and whom to trust is in
credentials.py; every failure here becomes one RemoteError line that says which
(unreachable, authentication refused, host key, repository not found), without
credentials in it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Optional

import pygit2

from gitfs.repo import compat
from gitfs.repo.credentials import AuthenticationError, Credentials, HostKeyError, _Callbacks
from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.libgit2 import pack_settings
from gitfs.repo.repository import GIT_DIR, REMOTE_NAME, Repository, branch_ref, remote_ref

__all__ = ["Credentials", "AuthenticationError", "HostKeyError", "RemoteUnreachable", "RepositoryNotFound",
           "BranchNotFound", "Transfer", "redact_url", "clone", "fetch", "push"]

_CREDENTIALS_IN_URL = re.compile(r"(://)[^/@]*@")


class RemoteUnreachable(RemoteError):
    """No connection: unknown host, refused, timed out, server down."""


class RepositoryNotFound(RemoteError):
    """The server answered but has no such repository (or does not export it)."""


class BranchNotFound(RemoteError):
    """The repository has no such branch."""


def redact_url(url: str) -> str:
    """The URL without a user:password part, for logs and messages."""
    return _CREDENTIALS_IN_URL.sub(r"\1", url)


# Lower-case fragments of libgit2/libssh2/server messages, most specific first.
_NOT_FOUND = ("does not appear to be a git repository", "repository not exported", "repository not found",
              "http status code: 404", "could not find repository", "not a git repository",
              "failed to resolve path", "no such file or directory")
_UNREACHABLE = ("failed to connect", "failed to resolve address", "connection refused", "timed out",
                "no route to host", "network is unreachable", "connection reset", "failed to start ssh session",
                "unable to exchange encryption keys", "failed to send request", "failed to receive",
                "unexpected disconnect", "early eof", "hung up", "could not read from remote",
                "connection closed", "broken pipe", "http status code: 502", "http status code: 503",
                "http status code: 504")
_AUTH = ("authentication", "http status code: 401", "http status code: 403", "permission denied")


def _describe(error: Exception) -> str:
    text = str(error).strip() or error.__class__.__name__
    return redact_url(" ".join(text.split()))


def _failure(error: Exception, action: str, url: str) -> RemoteError:
    """`ACTION URL failed: WHY` as the RemoteError subclass that says which."""
    head = f"{action} {redact_url(url)} failed"
    if isinstance(error, (AuthenticationError, HostKeyError)):
        return type(error)(f"{head}: {_describe(error)}")
    text = _describe(error)
    lower = text.lower()
    if isinstance(error, RemoteError):
        return RemoteError(f"{head}: {text}")
    if any(word in lower for word in _NOT_FOUND):
        return RepositoryNotFound(f"{head}: repository not found ({text})")
    if any(word in lower for word in _UNREACHABLE):
        return RemoteUnreachable(f"{head}: cannot reach the server ({text})")
    if any(word in lower for word in _AUTH):
        return AuthenticationError(f"{head}: authentication refused ({text})")
    return RemoteError(f"{head}: {text}")


_ERRORS = (pygit2.GitError, ValueError, KeyError, OSError, RemoteError)


@dataclass(frozen=True)
class Transfer:
    """libgit2's figures for a clone or fetch in progress."""
    received_objects: int
    total_objects: int
    received_bytes: int
    indexed_deltas: int
    total_deltas: int


class _ReportingCallbacks(_Callbacks):
    """The callbacks of a clone, handing its transfer figures to `progress`."""

    def __init__(self, credentials: Credentials, url: str, progress: Callable[[Transfer], None]):
        super().__init__(credentials, url)
        self._progress = progress

    def transfer_progress(self, stats):
        self._progress(Transfer(stats.received_objects, stats.total_objects, stats.received_bytes,
                                stats.indexed_deltas, stats.total_deltas))


def clone(url: str, path: str, branch: Optional[str], credentials: Credentials, *,
          progress: Optional[Callable[[Transfer], None]] = None) -> None:
    """Clone url into path, without a working tree (worktree.check_out writes it: libgit2
    would refuse a path too long for one system call, or a name this disk cannot hold,
    and fail the whole clone); `progress`, if given, is called with the figures as they change."""
    callbacks = _Callbacks(credentials, url) if progress is None else _ReportingCallbacks(credentials, url, progress)
    try:
        git = pygit2.clone_repository(url, os.path.join(path, GIT_DIR), bare=True, checkout_branch=branch,
                                      callbacks=callbacks)
        git.config["core.bare"] = False  # the folder above .git is its working tree
        git.config["core.logallrefupdates"] = True
    except _ERRORS as error:
        text = _describe(error)
        if branch and not isinstance(error, RemoteError) and (
                "reference" in text or "not found" in text.lower() and branch in text):
            raise BranchNotFound(f"branch {branch!r} does not exist on {redact_url(url)}") from None
        raise _failure(error, "clone of", url) from None


def _origin(repo: Repository) -> tuple[pygit2.Remote, str]:
    """The clone's remote and its URL (the clone always records one)."""
    remote = repo.git.remotes[REMOTE_NAME]
    if remote.url is None:
        raise RemoteError(f"the clone's remote {REMOTE_NAME!r} has no URL")
    return remote, remote.url


def fetch(repo: Repository, credentials: Credentials) -> Optional[pygit2.Oid]:
    """Fetch the branch into its remote-tracking ref; the remote tip, or None if the branch is gone."""
    remote, url = _origin(repo)
    refspec = f"+{branch_ref(repo.branch)}:{remote_ref(repo.branch)}"
    try:
        remote.fetch([refspec], callbacks=_Callbacks(credentials, url))
    except _ERRORS as error:
        if "couldn't find remote ref" in _describe(error):
            return None
        raise _failure(error, "fetch from", url) from None
    return repo.remote_tip()


class _PushCallbacks(_Callbacks):
    """The callbacks of a push, handing libgit2's figures (objects sent, objects to send,
    bytes sent) to `progress`."""

    def __init__(self, credentials: Credentials, url: str, progress: Callable[[int, int, int], None]):
        super().__init__(credentials, url)
        self._progress = progress

    def push_transfer_progress(self, objects_pushed, total_objects, bytes_pushed):
        self._progress(objects_pushed, total_objects, bytes_pushed)


def push(repo: Repository, credentials: Credentials, *,
         progress: Optional[Callable[[int, int, int], None]] = None) -> pygit2.Oid:
    """Push the branch without force; PushRejected if the server refuses it. `progress`,
    if given, is called with (objects sent, objects to send, bytes sent) as they change."""
    remote, url = _origin(repo)
    tip = repo.branch_tip()
    if tip is None:
        raise RemoteError(f"push to {redact_url(url)} failed: the clone has no branch {repo.branch!r}")
    ref = branch_ref(repo.branch)
    callbacks = _Callbacks(credentials, url) if progress is None else _PushCallbacks(credentials, url, progress)
    try:
        pack_settings(repo.git)
        compat.push(remote, [f"{ref}:{ref}"], callbacks, threads=0)
    except _ERRORS as error:
        message = _describe(error)
        if not isinstance(error, RemoteError) and (
                "non-fast-forward" in message or "not present locally" in message or "rejected" in message):
            raise PushRejected(f"push to {redact_url(url)} rejected: {message}") from None
        raise _failure(error, "push to", url) from None
    if callbacks.rejected:
        reason = "; ".join(callbacks.rejected.values())
        raise PushRejected(f"push to {redact_url(url)} rejected: {reason}")
    repo.set_remote_tip(tip)
    return tip
