"""Startup checks that need no clone: environment, owner, mount point, FUSE.

Each failure is a FatalError: one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil

from gitfs.errors import FatalError
from gitfs.options import Options
from gitfs.views.base import Owner

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


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
