"""The clone behind a mount: credentials, clone-or-reuse of repo_path, recovery.

The clone is never deleted: a clone of the same remote at repo_path is reused
(fetched), so nothing a previous mount left unpushed is lost. A new clone is private
to the mounting user (privacy.py): its folder, and the parents GitFS creates, are 0700.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
from typing import Callable

import pygit2

from gitfs import privacy
from gitfs.checks import check_local_remote
from gitfs.errors import FatalError
from gitfs.options import Options
from gitfs.repo import credentials as credential_files
from gitfs.repo import private_dirs
from gitfs.repo.errors import LocalWriteError, RemoteError
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.repository import REMOTE_NAME, Repository
from gitfs.repo.workdir import worktree

log = logging.getLogger(__name__)


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


def credentials_of(options: Options) -> remote_ops.Credentials:
    """Credentials from the options, secret files read now (a missing file is a startup error).

    Passwords: password=, else password_file=, else $GITFS_PASSWORD; passphrases likewise.
    A file that cannot be read is a SettingError (the daemon makes it a FatalError)."""
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
    return credentials


def prepare_clone(options: Options, credentials: remote_ops.Credentials, progress=None,
                  warn: Callable[[str], None] = log.warning, error: Callable[[str], None] = log.error) -> Repository:
    """Clone the remote into repo_path, or reuse the clone already there. The Repository
    says what was learnt: the clone's path and the branch it follows.

    `progress` (a progress.CloneProgress) reports a new clone as it arrives; `warn`
    tells the user that the remote cannot be reached and the clone is mounted as it is,
    or that a clone GitFS did not create can be read by others; `error`, that it held a password."""
    path = options.repo_path or default_repo_path(options.remote_url)
    if os.path.isdir(os.path.join(path, ".git")):
        repo = _reuse(path, options, credentials, warn, error)
    else:
        if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
            raise FatalError(f"repo_path {path} exists and is not a GitFS clone; choose another repo_path")
        check_local_remote(options.remote_url)
        if os.path.isdir(path):  # an empty folder the user made: used as it is
            privacy.check_clone(path, credential_in_config=False, warn=warn, error=error)
        else:
            try:
                private_dirs.make_private_dirs(path)
            except OSError as failure:
                raise FatalError(f"cannot create repo_path {path}: {failure.strerror}") from None
        try:
            remote_ops.clone(options.remote_url, path, options.branch, credentials, progress=progress)
        except RemoteError as error:  # one line: unreachable, authentication, host key, not found, branch
            shutil.rmtree(path, ignore_errors=True)
            raise FatalError(str(error)) from None
        finally:
            if progress is not None:
                progress.finish()
        git = pygit2.Repository(path)
        if git.head_is_unborn:
            shutil.rmtree(path, ignore_errors=True)
            raise FatalError(f"{remote_ops.redact_url(options.remote_url)} is empty: push a first commit to it")
        repo = Repository(path, git.head.shorthand)
        _check_out(repo)
    return repo


def _check_out(repo: Repository) -> None:
    try:
        worktree.check_out(repo)
    except LocalWriteError as error:  # a full disk: the next mount finishes it
        raise FatalError(f"writing the working tree of {repo.path} failed: {error}") from None


def _reuse(path: str, options: Options, credentials: remote_ops.Credentials,
           warn: Callable[[str], None], error: Callable[[str], None]) -> Repository:
    git = pygit2.Repository(path)
    origin = git.remotes[REMOTE_NAME].url if REMOTE_NAME in [r.name for r in git.remotes] else None
    stored = privacy.without_userinfo(origin, keep_user=privacy.is_ssh(origin)) if origin else None
    if stored != options.remote_url:
        raise FatalError(f"repo_path {path} is a clone of {remote_ops.redact_url(origin or 'nothing')}, "
                         f"not of {remote_ops.redact_url(options.remote_url)}")
    held_password = bool(privacy.url_credentials(origin or "")[1])
    privacy.check_clone(path, credential_in_config=held_password, warn=warn, error=error)
    if origin != stored:  # written by an earlier GitFS or by git clone: the credential callback supplies it now
        git.remotes.set_url(REMOTE_NAME, options.remote_url)
        log.info("the credentials in the remote URL of %s/.git/config were removed", path)
    _remove_stale_locks(path)
    branch = options.branch or (git.head.shorthand if not git.head_is_unborn else None)
    if branch is None:
        raise FatalError(f"repo_path {path} has no branch checked out; choose another repo_path")
    current = None if git.head_is_unborn else git.head.shorthand
    if current != branch:
        raise FatalError(f"repo_path {path} follows branch {current!r}, not {branch!r}; choose another repo_path")
    repo = Repository(path, branch)
    if worktree.check_out_unfinished(repo):  # a first mount stopped while it wrote the working tree
        _check_out(repo)
    try:
        remote_ops.fetch(repo, credentials)
    except (remote_ops.AuthenticationError, remote_ops.HostKeyError) as error:
        # A wrong password or key, or a host key to check, is for the user to fix now; the clone is kept.
        raise FatalError(str(error)) from None
    except RemoteError as error:
        warn(f"{error}; mounting the local clone, changes are pushed later")
    return repo


TOP_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "FETCH_HEAD.lock", "ORIG_HEAD.lock", "config.lock")


def _remove_stale_locks(path: str) -> None:
    """We are the only writer of this clone: a lock left here is from a crash (of GitFS,
    or of the git gc it runs, which locks refs and reflogs while it packs and expires
    them). Left in place, a ref's lock would fail every fetch and push for good."""
    git_dir = os.path.join(path, ".git")
    locks = [os.path.join(git_dir, name) for name in TOP_LOCKS]
    for folder in ("refs", "logs"):
        for top, _dirs, files in os.walk(os.path.join(git_dir, folder)):
            locks += [os.path.join(top, name) for name in files if name.endswith(".lock")]
    for lock in locks:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def check_branch(repo: Repository) -> None:
    if repo.branch_tip() is None:
        raise FatalError(f"branch {repo.branch!r} does not exist in {repo.path}")
