"""Network side of the git core: clone, fetch and push.

Every function here may block on the network; none is ever called from a FUSE
callback (see sync/state.py). What to offer the server and whom to trust is in
credentials.py; every failure here becomes one RemoteError line that says which
(unreachable, authentication refused, host key, repository not found), without
credentials in it.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Callable, Optional, cast

import pygit2

from gitfs.repo import compat
from gitfs.repo.credentials import AuthenticationError, Credentials, HostKeyError, _Callbacks, transport_of
from gitfs.repo.errors import (
    DENIED_CREDENTIALS,
    DENIED_EITHER,
    DENIED_RIGHTS,
    PushRefused,
    PushRejected,
    RemoteError,
)
from gitfs.repo.libgit2 import pack_settings
from gitfs.repo.remote import path_push
from gitfs.repo.remote.server_text import redact_url, server_words
from gitfs.repo.repository import GIT_DIR, REMOTE_NAME, Repository, branch_ref, remote_ref

__all__ = ["Credentials", "AuthenticationError", "HostKeyError", "RemoteUnreachable", "RepositoryNotFound",
           "BranchNotFound", "Transfer", "redact_url", "server_words", "server_lines", "clone", "fetch", "push"]

class RemoteUnreachable(RemoteError):
    """No connection: unknown host, refused, timed out, server down."""


class RepositoryNotFound(RemoteError):
    """The server answered but has no such repository (or does not export it)."""


class BranchNotFound(RemoteError):
    """The repository has no such branch."""


# Lower-case fragments of libgit2/libssh2/server messages, most specific first.
_NOT_FOUND = ("does not appear to be a git repository", "repository not exported", "repository not found",
              "http status code: 404", "could not find repository", "not a git repository",
              "failed to resolve path", "no such file or directory")
_UNREACHABLE = ("failed to connect", "failed to resolve address", "connection refused", "timed out",
                "no route to host", "network is unreachable", "connection reset", "failed to start ssh session",
                "unable to exchange encryption keys", "failed to send request", "failed to receive",
                "unexpected disconnect", "early eof", "unexpected eof", "hung up", "could not read from remote",
                "could not read refs from remote", "could not read report from remote", "connection closed",
                "connection aborted", "broken pipe", "http status code: 502", "http status code: 503",
                "http status code: 504")
_AUTH = ("authentication", "http status code: 401", "http status code: 403", "permission denied")


_ERROR_LENGTH = 1000  # libgit2's own words around the server's


def _describe(error: Exception) -> str:
    return server_words(str(error), _ERROR_LENGTH) or error.__class__.__name__


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
    if any(word in lower for word in _AUTH) or _CREDENTIALS_REFUSED.search(lower):
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


@functools.lru_cache(maxsize=64)
def _fetch_refspec(branch: str) -> str:
    """The same string for every fetch of a branch (pygit2 keeps the names it is given: refnames.py)."""
    return f"+{branch_ref(branch)}:{remote_ref(branch)}"


def fetch(repo: Repository, credentials: Credentials) -> Optional[pygit2.Oid]:
    """Fetch the branch into its remote-tracking ref; the remote tip, or None if the branch is gone."""
    remote, url = _origin(repo)
    refspec = _fetch_refspec(repo.branch)
    try:
        remote.fetch([refspec], callbacks=_Callbacks(credentials, url))
    except _ERRORS as error:
        if "couldn't find remote ref" in _describe(error):
            return None
        raise _failure(error, "fetch from", url) from None
    return repo.remote_tip()


class _PushCallbacks(_Callbacks):
    """The callbacks of a push: libgit2's figures (objects sent, objects to send, bytes
    sent) handed to `progress`, and what the server prints kept for a refusal."""

    def __init__(self, credentials: Credentials, url: str, progress: Optional[Callable[[int, int, int], None]]):
        super().__init__(credentials, url)
        self._progress = progress
        self._said: list[str] = []
        self._said_size = 0

    def push_transfer_progress(self, objects_pushed, total_objects, bytes_pushed):
        if self._progress is not None:
            self._progress(objects_pushed, total_objects, bytes_pushed)

    def sideband_progress(self, string):
        if self._said_size < _SIDEBAND_KEPT:  # a server could talk for ever
            self._said.append(string)
            self._said_size += len(string)

    def server_says(self) -> tuple[str, ...]:
        return server_lines("".join(self._said))


_SIDEBAND_KEPT = 64 * 1024
SERVER_LINES_SHOWN = 12
# git's own progress, which receive-pack sends on the same channel as the hooks' words.
_PROGRESS = re.compile(r"^(Resolving deltas|Unpacking objects|Counting objects|Compressing objects|"
                       r"Writing objects|Total \d+|Checking connectivity|Enumerating objects)\b")
# Per-reference answers that mean "the branch moved": merge and push again.
_RACE = ("non-fast-forward", "non-fastforwardable", "fetch first", "not present locally", "cannot lock ref",
         "failed to lock", "failed to create locked file", "stale info", "failed to update ref")
# The only failures of a push that are the server saying no (the fetch over the same URL
# works), besides an answer per reference: an unpack error (a pack over its size limit),
# HTTP 403, and the refusals known to come before receive-pack runs: gitolite's "FATAL: W
# any REPO USER DENIED", git daemon's "access denied" (or "service not enabled"), a forge's
# "Permission to REPO denied to USER" or "not allowed to push". Anything else, words the
# server printed before it went away included, is a failure retried as the network's are:
# a refusal backs off for minutes.
_REFUSED = re.compile(r"unpacking the sent packfile failed|http status code: 403|\bw any \S+ \S+ denied\b|"
                      r"access denied|service not enabled|permission to \S+ denied|not allowed to push")
# Words that blame the credentials (wrong, expired, revoked), not what they may do.
_CREDENTIALS_REFUSED = re.compile(
    r"http status code: 401|authentication failed|failed to authenticate|invalid credentials|bad credentials|"
    r"invalid (?:token|password|username or password)|(?:token|password|credentials|key) (?:has |have |is )?"
    r"(?:expired|revoked)|expired (?:token|password|credentials|key)")
# Words of a server that lets these credentials read but not write.
_RIGHTS_REFUSED = re.compile(r"service not enabled|read-only|read only|\bw any \S+ \S+ denied\b|write access|"
                             r"not allowed to push|permission to push|permission to \S+ denied")
# Words of a server that refuses every write of this mount without saying why: over HTTP
# a forge answers 403 to an expired or revoked token as well as to a reader; a git:// or
# SSH server has taken the credentials by then (git:// asks for none).
_WRITES_REFUSED = re.compile(r"http status code: 403|access denied")


def server_lines(text: str) -> tuple[str, ...]:
    """What a server printed during a push, as lines a status can show: progress lines
    (rewritten in place with CR) left out, each line cleaned by server_words, their number
    bounded."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = server_words(raw.rsplit("\r", 1)[-1])
        if line and not _PROGRESS.match(line):
            lines.append(line)
    if len(lines) > SERVER_LINES_SHOWN:
        lines = lines[:SERVER_LINES_SHOWN - 1] + [f"... and {len(lines) - SERVER_LINES_SHOWN + 1} more lines"]
    return tuple(lines)


def _is_race(message: str) -> bool:
    lower = message.lower()
    return any(words in lower for words in _RACE)


def _denied(url: str, said: str) -> str:
    """What the server's words (lower case) say it denies this mount: its credentials, their
    rights, either, or nothing but this push ("")."""
    if _CREDENTIALS_REFUSED.search(said):
        return DENIED_CREDENTIALS
    if _RIGHTS_REFUSED.search(said):
        return DENIED_RIGHTS
    if _WRITES_REFUSED.search(said):
        return DENIED_EITHER if transport_of(url) in ("http", "https") else DENIED_RIGHTS
    return ""


def _refusal(url: str, reason: str, server_says: tuple[str, ...], commit: pygit2.Oid) -> PushRefused:
    denied = _denied(url, " ".join([reason, *server_says]).lower())
    text = f"push to {redact_url(url)} refused by the server: {reason}"
    if server_says:
        text += "; the server says: " + " | ".join(server_says)
    return PushRefused(text, reason=reason, server_says=server_says, denied=denied, commit=str(commit))


def push(repo: Repository, credentials: Credentials, *, source_ref: Optional[str] = None,
         progress: Optional[Callable[[int, int, int], None]] = None) -> pygit2.Oid:
    """Push the branch (or the commit `source_ref` names) to the remote's branch, without
    force, and return the commit pushed. PushRejected if the remote's branch moved
    meanwhile; PushRefused if the server said no to the push itself (its words kept).
    `progress`, if given, is called with (objects sent, objects to send, bytes sent)."""
    remote, url = _origin(repo)
    ref = branch_ref(repo.branch)
    source = source_ref or ref
    tip = repo.branch_tip() if source_ref is None else cast(pygit2.Oid, repo.git.references[source_ref].target)
    if tip is None:
        raise RemoteError(f"push to {redact_url(url)} failed: the clone has no branch {repo.branch!r}")
    callbacks = _PushCallbacks(credentials, url, progress)
    try:
        pack_settings(repo.git)
        kind = transport_of(url)
        if kind in ("local", "file"):
            git_dir = path_push.git_dir_of(url, kind)
            with path_push.one_push_at_a_time(git_dir, ref):
                compat.push(remote, [f"+{source}:{path_push.PUSHING_REF}"], callbacks, threads=0)
                if not callbacks.rejected:
                    path_push.move_branch(git_dir, ref, tip, redact_url(url))
        else:
            compat.push(remote, [f"{source}:{ref}"], callbacks, threads=0)
    except PushRejected:
        raise
    except _ERRORS as error:
        message = _describe(error)
        if not isinstance(error, RemoteError) and _is_race(message):
            raise PushRejected(f"push to {redact_url(url)} rejected: {message}") from None
        said = callbacks.server_says()
        # An AuthenticationError or HostKeyError here is the credential callbacks' own verdict.
        if not isinstance(error, (AuthenticationError, HostKeyError)) and _REFUSED.search(message.lower()):
            raise _refusal(url, message, said, tip) from None
        failure = _failure(error, "push to", url)
        if said:  # what the server printed before it failed may say why
            failure = type(failure)(f"{failure}; the server said: " + " | ".join(said))
        raise failure from None
    if callbacks.rejected:
        answers = [server_words(message) for message in callbacks.rejected.values()]
        reason = "; ".join(answers)
        if all(_is_race(message) for message in answers):
            raise PushRejected(f"push to {redact_url(url)} rejected: {reason}")
        raise _refusal(url, reason, callbacks.server_says(), tip)
    repo.set_remote_tip(tip)
    return tip
