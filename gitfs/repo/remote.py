"""Network side of the git core: clone, fetch and push, with credentials.

Every function here may block on the network; none is ever called from a FUSE
callback (see sync/state.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

import pygit2

from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.repository import REMOTE_NAME, Repository, branch_ref, remote_ref

_CREDENTIALS_IN_URL = re.compile(r"(://)[^/@]*@")


def redact_url(url: str) -> str:
    """The URL without a user:password part, for logs and messages."""
    return _CREDENTIALS_IN_URL.sub(r"\1", url)


@dataclass(frozen=True)
class Credentials:
    username: str = ""
    password: str = ""
    ssh_key: str = ""
    ssh_user: str = ""


class _Callbacks(pygit2.RemoteCallbacks):
    """Answers credential requests and records refs the server refused."""

    def __init__(self, credentials: Credentials):
        super().__init__()
        self._credentials = credentials
        self._asked = 0
        self.rejected: dict[str, str] = {}

    def credentials(self, url, username_from_url, allowed_types):
        # libgit2 asks again after a refusal; answering forever would loop.
        self._asked += 1
        if self._asked > 3:
            raise RemoteError("authentication failed")
        creds = self._credentials
        if allowed_types & pygit2.enums.CredentialType.USERPASS_PLAINTEXT and creds.password:
            return pygit2.UserPass(creds.username or username_from_url or "", creds.password)
        if allowed_types & pygit2.enums.CredentialType.SSH_KEY:
            user = creds.ssh_user or username_from_url or os.environ.get("USER", "git")
            key = creds.ssh_key or os.path.expanduser("~/.ssh/id_rsa")
            public = key + ".pub" if os.path.exists(key + ".pub") else None
            if creds.ssh_key or os.path.exists(key):
                return pygit2.Keypair(user, public, key, "")
            return pygit2.KeypairFromAgent(user)
        if allowed_types & pygit2.enums.CredentialType.USERNAME:
            return pygit2.Username(creds.ssh_user or username_from_url or "git")
        raise RemoteError("the server asks for credentials (give username= and password=)")

    def push_update_reference(self, refname, message):
        if message:
            self.rejected[refname] = message


def _describe(error: Exception, url: str) -> str:
    text = str(error).strip() or error.__class__.__name__
    return redact_url(text.splitlines()[0])


def clone(url: str, path: str, branch: Optional[str], credentials: Credentials) -> None:
    try:
        pygit2.clone_repository(url, path, checkout_branch=branch, callbacks=_Callbacks(credentials))
    except (pygit2.GitError, ValueError, KeyError, RemoteError) as error:
        text = _describe(error, url)
        if branch and ("reference" in text or "not found" in text.lower() and branch in text):
            raise RemoteError(f"branch {branch!r} does not exist on {redact_url(url)}") from None
        raise RemoteError(f"cannot clone {redact_url(url)}: {text}") from None


def remote_branches(repo: Repository, credentials: Credentials) -> tuple[Optional[str], set[str]]:
    """(default branch, all branch names) as the remote advertises them."""
    remote = repo.git.remotes[REMOTE_NAME]
    try:
        heads = remote.list_heads(callbacks=_Callbacks(credentials))
    except (pygit2.GitError, RemoteError) as error:
        raise RemoteError(f"cannot reach {redact_url(remote.url)}: {_describe(error, remote.url)}") from None
    default, names = None, set()
    for head in heads:
        if head.name == "HEAD" and head.symref_target:
            default = head.symref_target.removeprefix("refs/heads/")
        elif head.name.startswith("refs/heads/"):
            names.add(head.name.removeprefix("refs/heads/"))
    return default, names


def fetch(repo: Repository, credentials: Credentials) -> Optional[pygit2.Oid]:
    """Fetch the branch into its remote-tracking ref; the remote tip, or None if the branch is gone."""
    remote = repo.git.remotes[REMOTE_NAME]
    refspec = f"+{branch_ref(repo.branch)}:{remote_ref(repo.branch)}"
    try:
        remote.fetch([refspec], callbacks=_Callbacks(credentials))
    except (pygit2.GitError, RemoteError) as error:
        message = _describe(error, remote.url)
        if "couldn't find remote ref" in message:
            return None
        raise RemoteError(f"fetch from {redact_url(remote.url)} failed: {message}") from None
    return repo.remote_tip()


def push(repo: Repository, credentials: Credentials) -> pygit2.Oid:
    """Push the branch without force; PushRejected if the server refuses it."""
    remote = repo.git.remotes[REMOTE_NAME]
    tip = repo.branch_tip()
    ref = branch_ref(repo.branch)
    callbacks = _Callbacks(credentials)
    try:
        remote.push([f"{ref}:{ref}"], callbacks=callbacks)
    except pygit2.GitError as error:
        message = _describe(error, remote.url)
        if "non-fast-forward" in message or "not present locally" in message or "rejected" in message:
            raise PushRejected(f"push to {redact_url(remote.url)} rejected: {message}") from None
        raise RemoteError(f"push to {redact_url(remote.url)} failed: {message}") from None
    except RemoteError as error:
        raise RemoteError(f"push to {redact_url(remote.url)} failed: {error}") from None
    if callbacks.rejected:
        reason = "; ".join(callbacks.rejected.values())
        raise PushRejected(f"push to {redact_url(remote.url)} rejected: {reason}")
    repo.set_remote_tip(tip)
    return tip
