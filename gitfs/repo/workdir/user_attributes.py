"""Extended attributes of the working tree's files: the `user.` namespace only.

Git has no place for extended attributes, so they are kept where the file is: on the
clone's file, by the clone's file system, and never committed. Programs that keep
their metadata there (Samba's DOS attributes in user.DOSATTRIB, macOS's Finder info
and resource forks through Samba's streams_xattr, `cp -a`, `rsync -X`) then work on
current/. The other namespaces are the kernel's and security modules' business
(trusted.*, security.*, system.* ACLs): GitFS does not keep them, as a file system
without them does (ENODATA when read, EOPNOTSUPP when written).

Every call reaches the file through an O_PATH descriptor opened beneath the clone's
root without following links (beneath.py), named as /proc/self/fd/N: the *xattr calls
have no *at form, and a path through the clone would follow a link planted in it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

from gitfs.repo import beneath

NAMESPACE = "user."


@contextlib.contextmanager
def _file(root_fd: int, relative: str, code: int) -> Iterator[str]:
    """/proc/self/fd/N of the file; OSError(code) for anything but a file or a folder
    (Linux keeps user attributes on those only, and a link must never be followed)."""
    fd = beneath.open_beneath(root_fd, relative, os.O_PATH | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) and not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, os.strerror(code), relative)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def _kept(name: str, code: int) -> None:
    if not name.startswith(NAMESPACE):
        raise OSError(code, os.strerror(code), name)


def get(root_fd: int, relative: str, name: str) -> bytes:
    _kept(name, errno.ENODATA)
    with _file(root_fd, relative, errno.ENODATA) as path:
        return os.getxattr(path, name)


def names(root_fd: int, relative: str) -> list[str]:
    try:
        with _file(root_fd, relative, errno.ENODATA) as path:
            return [name for name in os.listxattr(path) if name.startswith(NAMESPACE)]
    except OSError as error:
        if error.errno == errno.ENODATA:  # a link, a device: none
            return []
        raise


def set_value(root_fd: int, relative: str, name: str, value: bytes, flags: int) -> None:
    """setxattr(2); flags: os.XATTR_CREATE, os.XATTR_REPLACE or 0."""
    _kept(name, errno.EOPNOTSUPP)
    with _file(root_fd, relative, errno.EPERM) as path:
        os.setxattr(path, name, value, flags)


def remove(root_fd: int, relative: str, name: str) -> None:
    _kept(name, errno.ENODATA)
    with _file(root_fd, relative, errno.EPERM) as path:
        os.removexattr(path, name)


def carry_over(folder_fd: int, old_name: str, new_fd: int) -> None:
    """Give the file open as new_fd the user attributes of old_name in folder_fd (the
    file it is about to replace): a colleague's new version of a document keeps what
    this machine's programs noted about it. Nothing if old_name is gone or not a file."""
    try:
        old = os.open(old_name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder_fd)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(old).st_mode):
            return
        path = f"/proc/self/fd/{old}"
        with contextlib.suppress(OSError):  # a file system without them: nothing to carry
            for name in os.listxattr(path):
                if name.startswith(NAMESPACE):
                    os.setxattr(new_fd, name, os.getxattr(path, name))
    finally:
        os.close(old)
