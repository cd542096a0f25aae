"""Paths beneath a folder's descriptor, resolved without following any symlink.

The daemon (often root, serving other users) reaches the clone's working tree
relative to a descriptor of its root. The kernel resolves the links a program
names itself and hands over real paths; but its cache of current/ lives for an
hour, and a folder can become a symlink behind its back (a remote change
applied, a program working in the clone directly). Then a plain openat() would
follow that link out of the clone. Here no component of a path is ever
followed: a link in a folder's place is ELOOP, a link at the last component is
opened as the link itself with O_PATH | O_NOFOLLOW (lstat, readlink) and is
ELOOP for any other open, and ".." never climbs out.

openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) does this in one system call
(Linux >= 5.6); elsewhere (ENOSYS, or a seccomp filter that says EPERM) every
folder is opened one at a time with O_NOFOLLOW. A path longer than one system
call takes (PATH_MAX) is resolved a piece at a time. GITFS_NO_OPENAT2=1 in the
environment forces the walk (tests, kernels whose openat2 misbehaves).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import stat
from collections.abc import Iterator

PATH_MAX = 4096  # bytes, with the terminating NUL

_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(platform.machine())
_FOLDER = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC  # a folder to resolve names in, nothing more


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _syscall():
    if _OPENAT2 is None or os.environ.get("GITFS_NO_OPENAT2"):
        return None
    # No argtypes: converting through them costs more than the system call itself; libffi
    # widens the int arguments to the registers' size, as syscall(2) reads them.
    return ctypes.CDLL(None, use_errno=True).syscall


_syscall_function = _syscall()
_HOW_SIZE = ctypes.sizeof(_OpenHow)
_hows: dict[tuple[int, int], object] = {}  # (flags, mode) -> byref(open_how); read-only: shared by threads


def uses_openat2() -> bool:
    return _syscall_function is not None


def open_beneath(root_fd: int, relative: str, flags: int, mode: int = 0o777) -> int:
    """openat(root_fd, relative, flags, mode) with no symlink followed in any component
    and nothing outside root_fd reached. `relative` has no leading slash ("." is the root)."""
    global _syscall_function
    flags |= os.O_CLOEXEC
    if len(relative) >= PATH_MAX // 4 and len(os.fsencode(relative)) >= PATH_MAX:
        return _open_in_pieces(root_fd, relative, flags, mode)
    if _syscall_function is not None:
        if not flags & os.O_CREAT:
            mode = 0  # openat2 refuses a mode it would not use
        how = _hows.get((flags, mode))
        if how is None:
            how = _hows.setdefault((flags, mode), ctypes.byref(
                _OpenHow(flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS)))
        path = relative.encode("utf-8", "surrogateescape")  # os.fsencode, without its checks
        while True:
            fd = _syscall_function(_OPENAT2, root_fd, path, how, _HOW_SIZE)
            if fd >= 0:
                return fd
            code = ctypes.get_errno()
            if code in (errno.ENOSYS, errno.EPERM) and _openat2_missing(root_fd):
                _syscall_function = None
                break
            if code not in (errno.EAGAIN, errno.EINTR):  # EAGAIN: a rename raced a ".." check
                raise OSError(code, os.strerror(code), relative)
    return _walk(root_fd, relative, flags, mode)


def _openat2_missing(root_fd: int) -> bool:
    """Whether the kernel (or a seccomp filter) lacks openat2, not just this path refused."""
    assert _syscall_function is not None
    how = _OpenHow(_FOLDER, 0, 0)
    fd = _syscall_function(_OPENAT2, root_fd, b".", ctypes.byref(how), _HOW_SIZE)
    if fd >= 0:
        os.close(fd)
        return False
    return ctypes.get_errno() in (errno.ENOSYS, errno.EPERM)


def _walk(root_fd: int, relative: str, flags: int, mode: int) -> int:
    """open_beneath without openat2: one folder at a time, none of them a link."""
    *folders, last = relative.split("/")
    fd = root_fd
    try:
        for name in folders:
            if name in ("", "."):
                continue
            folder = _open_name(fd, name, _FOLDER | os.O_NOFOLLOW, 0)
            if fd != root_fd:
                os.close(fd)
            fd = folder
        return _open_name(fd, last or ".", flags | os.O_NOFOLLOW, mode)
    finally:
        if fd != root_fd:
            os.close(fd)


def _open_name(fd: int, name: str, flags: int, mode: int) -> int:
    """openat of one name inside folder fd, as openat2 would answer: ".." is EXDEV (it
    would climb), and a link is ELOOP (O_NOFOLLOW with O_DIRECTORY says ENOTDIR)."""
    if name == "..":
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), name)
    try:
        return os.open(name, flags, mode, dir_fd=fd)
    except NotADirectoryError:
        if _is_link(fd, name):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def _open_in_pieces(root_fd: int, relative: str, flags: int, mode: int) -> int:
    """open_beneath of a path longer than PATH_MAX: its folders in pieces that fit."""
    pieces = [""]
    for name in relative.split("/"):
        if pieces[-1] and len(os.fsencode(pieces[-1])) + 1 + len(os.fsencode(name)) >= PATH_MAX:
            pieces.append(name)
        else:
            pieces[-1] = f"{pieces[-1]}/{name}" if pieces[-1] else name
    fd = root_fd
    try:
        for piece in pieces[:-1]:
            folder = open_beneath(fd, piece, _FOLDER)
            if fd != root_fd:
                os.close(fd)
            fd = folder
        return open_beneath(fd, pieces[-1], flags, mode)
    finally:
        if fd != root_fd:
            os.close(fd)


@contextlib.contextmanager
def parent(root_fd: int, relative: str) -> Iterator[tuple[int, str]]:
    """(a descriptor of the folder holding `relative`, its last name): for the *at calls
    that act on a name itself (lstat, unlink, rename, mkdir, symlink, utimensat with
    AT_SYMLINK_NOFOLLOW...), none of which follows a link at the last name."""
    folder, slash, name = relative.rpartition("/")
    if not slash:
        yield root_fd, relative
        return
    fd = open_beneath(root_fd, folder, _FOLDER)
    try:
        yield fd, name
    finally:
        os.close(fd)


def lstat(root_fd: int, relative: str) -> os.stat_result:
    """lstat of a path beneath root_fd (a link is described, not followed)."""
    if "/" not in relative:
        return os.lstat(relative, dir_fd=root_fd)  # no folder to resolve: one call
    fd = open_beneath(root_fd, relative, os.O_PATH | os.O_NOFOLLOW)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def readlink(root_fd: int, relative: str) -> str:
    if "/" not in relative:
        return os.readlink(relative, dir_fd=root_fd)
    fd = open_beneath(root_fd, relative, os.O_PATH | os.O_NOFOLLOW)
    try:
        return os.readlink("", dir_fd=fd)  # readlinkat of an O_PATH fd of the link itself
    finally:
        os.close(fd)


def chmod(root_fd: int, relative: str, mode: int) -> os.stat_result:
    """chmod of a file or folder beneath root_fd, never through a link (a link's own mode:
    EOPNOTSUPP, as Linux). Returns the lstat from before the change."""
    fd = open_beneath(root_fd, relative, os.O_PATH | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP), relative)
        # fchmod refuses an O_PATH fd; its /proc name reaches the very inode it holds.
        os.chmod(f"/proc/self/fd/{fd}", mode)
        return st
    finally:
        os.close(fd)
