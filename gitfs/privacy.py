"""The clone is as private as the mount, and secrets stay out of files.

FUSE makes a mount private to the user who mounted it (unless allow_other); the clone
behind it holds the same files and the whole history, so the folders GitFS creates for
it are 0700 whatever the umask. A credential written in the remote's URL is moved out
of the URL at start (into username and password, which only the credential callback
hands to libgit2), so that it reaches neither the clone's .git/config nor the process's
command line, which every local user can read in `ps`. Secret files are checked as
OpenSSH checks a private key: readable by group or others is refused.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from typing import Callable, Optional
from urllib.parse import quote, urlsplit, urlunsplit

from gitfs.errors import FatalError
from gitfs.options import Options
from gitfs.repo import private_dirs
from gitfs.repo.credentials import url_credentials

HANDED_PASSWORD_ENV = "GITFS_URL_PASSWORD"  # the URL's password, from a process to the one it runs again


# -- the clone ----------------------------------------------------------------------------------

def check_clone(path: str, *, credential_in_config: bool, warn: Callable[[str], None],
                error: Callable[[str], None]) -> None:
    """An existing clone (GitFS did not create it) that others may enter: said once at mount,
    with the command that fixes it; an error if its .git/config held a credential."""
    if not private_dirs.open_to_others(path):
        return
    fix = f"chmod 700 {path}"
    if credential_in_config:
        error(f"the clone {path} can be read by other users, and its .git/config held a password "
              f"(removed now: change that password); {fix} makes the clone private")
    else:
        warn(f"the clone {path} can be read by other users (every file and the whole history); {fix} makes it private")


# -- secret files -------------------------------------------------------------------------------

def check_secret_file(path: str, what: str) -> None:
    """Refuse a secret file that group or others can read, as ssh refuses such a key."""
    try:
        mode = os.stat(os.path.expanduser(path)).st_mode
    except OSError:
        return  # missing or unreadable: the reader of the file says so, in its own words
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise FatalError(f"{what} {path} can be read by other users (mode {stat.S_IMODE(mode):04o}): "
                         f"chmod 600 {path}")


def check_secret_files(options: Options) -> None:
    for what in ("password_file", "ssh_key_passphrase_file", "ssh_key"):
        path = getattr(options, what)
        if path:
            check_secret_file(path, what)


# -- credentials in the URL ---------------------------------------------------------------------

def without_userinfo(url: str, *, keep_user: bool = False) -> str:
    """The URL without its user:password@ part (keep_user: without the password only)."""
    if "://" not in url:
        return url  # a path, or scp-like user@host:path, which holds no password
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
    netloc = f"{user}@{host}" if keep_user and user else host
    return urlunsplit(parts._replace(netloc=netloc))


def is_ssh(url: str) -> bool:
    return url.lower().startswith(("ssh://", "git+ssh://", "ssh+git://"))


def move_url_credentials(options: Options) -> Options:
    """The options with the URL's credentials moved out of the URL: its user becomes
    username (an SSH URL keeps its user, the login name), its password the password
    unless password or password_file was given (those come first)."""
    user, password = url_credentials(options.remote_url)
    if not user and not password:
        return options
    ssh = is_ssh(options.remote_url)
    changes: dict[str, object] = {"remote_url": without_userinfo(options.remote_url, keep_user=ssh)}
    if user and not ssh and not options.username:
        changes["username"] = user
    if password and not options.password and not options.password_file:
        changes["password"] = password
    return dataclasses.replace(options, **changes)  # type: ignore[arg-type]


def hide_url_password(url: str, argv: list[str]) -> None:
    """A password in the URL is on this process's command line, which any local user can
    read (`ps`, /proc/PID/cmdline), for as long as the mount runs: run again at once with
    the URL without it and the password in the environment (private to the user), where
    handed_password takes it back. Returns only where that cannot be done (Python before
    3.10 keeps no original command line); the caller then goes on."""
    _user, password = url_credentials(url)
    orig_argv: Optional[list[str]] = getattr(sys, "orig_argv", None)
    if not password or orig_argv is None or url not in argv:
        return
    # orig_argv ends with the arguments main() got (the interpreter and its options come first).
    at = len(orig_argv) - len(argv) + argv.index(url)
    if at < 0 or orig_argv[at] != url:
        return
    command = list(orig_argv)
    command[at] = without_userinfo(url, keep_user=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, dict(os.environ, **{HANDED_PASSWORD_ENV: password}))


def handed_password(url: str) -> str:
    """The URL as the user gave it: with the password hide_url_password moved to the
    environment put back (in this process's memory only), and that variable removed."""
    password = os.environ.pop(HANDED_PASSWORD_ENV, None)
    if password is None or "://" not in url:
        return url
    parts = urlsplit(url)
    user = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))
