"""Router: the one fusepy Operations object. Matches a path to a view and calls it.

Each route builds its view from the matched prefix (see routes.py); views are
kept in an LRU keyed by (route, matched prefix). Views hold no per-open-file state, so
evicting one never loses an open file (that lives in the HandleTable).

Performance is a matter of fewer FUSE round trips (gitfs/fuse_binding.py says why and
how; README.md's "Performance and kernel caching" has the figures). Here,
`readdir_with_attrs` gives GitFSFUSE full attributes for the views that can give them
cheaply, and `init_with_config` sets long kernel cache timeouts
(cache_policy.py: what GitFS changes behind the kernel's back is invalidated) and asks
for READDIRPLUS on every readdir call.
"""

from __future__ import annotations

import errno
import functools
import logging
from typing import Callable

from mfusepy import FuseOSError, Operations

from gitfs import cache_policy
from gitfs.fuse_binding import DIR_CACHE_FROM_OPENDIR, FUSE_CAP_READDIRPLUS_AUTO
from gitfs.repo.errors import PathNotFound
from gitfs.repo.workdir.user_attributes import NAMESPACE as USER_ATTRIBUTES
from gitfs.routes import Route

log = logging.getLogger(__name__)

XATTR_OPERATIONS = ("getxattr", "listxattr", "setxattr", "removexattr")

class Router(Operations):
    use_ns = True

    def __init__(self, routes: list[Route], *, cache_size: int,
                 touch: Callable[[], None], on_init: Callable[[], None], on_destroy: Callable[[], None],
                 disk_figures: Callable[[], dict], kernel_cached_dirs: str = "", extended_attributes: bool = False):
        self.routes = routes
        self.extended_attributes = extended_attributes
        self._refusal_told = False
        if not extended_attributes:
            # No callbacks (mfusepy leaves out what is None): the kernel's first question
            # gets ENOSYS and it asks no more, for any file (EOPNOTSUPP to programs). An
            # answered getxattr, even a quick ENODATA, costs a round trip per `ls -l` entry
            # and per write(2). setxattr stays, only to say once why it is refused.
            for operation in XATTR_OPERATIONS:
                if operation != "setxattr":
                    setattr(self, operation, None)
        # Folders at and below this mount path keep their listing in the kernel (GitFSFUSE.opendir).
        self.kernel_cached_dirs = kernel_cached_dirs
        self._disk_figures = disk_figures
        self._touch = touch
        self._on_init = on_init
        self._on_destroy = on_destroy
        self._matchers = [(route.pattern.match, number) for number, route in enumerate(routes)]
        # Keyed by (route, prefix) only: the groups follow from the prefix.
        self._view = functools.lru_cache(maxsize=cache_size)(self._new_view)

    def _new_view(self, number: int, prefix: str):
        route = self.routes[number]
        match = route.pattern.match(prefix)
        assert match is not None, (route.name, prefix)  # resolve() found prefix with this very pattern
        return route.build(match.groupdict())

    def resolve(self, path: str):
        """(view, path relative to the view) for a mount path."""
        self._touch()
        for match_route, number in self._matchers:
            match = match_route(path)
            if match:
                prefix = match.group()
                try:
                    view = self._view(number, prefix)
                except PathNotFound:  # a folder the route names but that does not exist; not cached
                    raise FuseOSError(errno.ENOENT) from None
                return view, path[len(prefix):] or "/"
        raise FuseOSError(errno.ENOENT)

    def _call(self, operation: str, path: str, *args):
        view, relative = self.resolve(path)
        return getattr(view, operation)(relative, *args)

    def _pair(self, first: str, second: str):
        """Resolve two paths that must live in the same view (rename, link)."""
        view, first_relative = self.resolve(first)
        other, second_relative = self.resolve(second)
        if other is not view:
            from gitfs.views.base import ReadOnlyView
            code = errno.EROFS if isinstance(view, ReadOnlyView) or isinstance(other, ReadOnlyView) else errno.EXDEV
            raise FuseOSError(code)
        return view, first_relative, second_relative

    # -- lifecycle -------------------------------------------------------

    def init(self, path):
        self._on_init()

    def init_with_config(self, conn_info, config_3):
        if config_3 is not None:
            cache_policy.configure(config_3)
        if conn_info is not None:
            # READDIRPLUS on every call, not just the first of a directory: the entries
            # of a big day then all arrive with their attributes.
            conn_info.want &= ~FUSE_CAP_READDIRPLUS_AUTO
        self.init("/")

    def destroy(self, path):
        self._on_destroy()

    # -- path calls ---------------------------------------------------------

    def getattr(self, path, fh=None):
        return self._call("getattr", path)

    if DIR_CACHE_FROM_OPENDIR:
        def opendir(self, path):
            # Answered by GitFSFUSE.opendir without coming here; defined so that mfusepy
            # hands libfuse an opendir callback at all (which sets cache_readdir).
            return 0

    def readdir(self, path, fh):
        return self._call("readdir", path, fh)

    def readdir_with_attrs(self, path: str, fh):
        """[(name, attrs or a file type or None)] where the view can give them cheaply, else
        readdir's names (see GitFSFUSE)."""
        view, relative = self.resolve(path)
        plus = getattr(view, "readdir_with_attrs", None)
        if plus is None:
            return view.readdir(relative, fh)
        return plus(relative)

    def readlink(self, path):
        return self._call("readlink", path)

    def access(self, path, amode):
        return self._call("access", path, amode)

    def statfs(self, path):
        # One file system, on the clone's disk: every path answers with its figures.
        # (history/ answered zeros: `df` showed nothing and the longest name was 0.)
        self.resolve(path)
        return self._disk_figures()

    def mkdir(self, path, mode):
        return self._call("mkdir", path, mode)

    def rmdir(self, path):
        return self._call("rmdir", path)

    def unlink(self, path):
        return self._call("unlink", path)

    def mknod(self, path, mode, dev):
        return self._call("mknod", path, mode, dev)

    def chmod(self, path, mode):
        return self._call("chmod", path, mode)

    def chown(self, path, uid, gid):
        return self._call("chown", path, uid, gid)

    def truncate(self, path, length, fh=None):
        return self._call("truncate", path, length)

    def utimens(self, path, times=None):
        return self._call("utimens", path, times)

    def symlink(self, target, source):
        return self._call("symlink", target, source)

    def rename(self, old, new):
        view, old_relative, new_relative = self._pair(old, new)
        return view.rename(old_relative, new_relative)

    def link(self, target, source):
        view, target_relative, source_relative = self._pair(target, source)
        return view.link(target_relative, source_relative)

    # -- file handles (raw_fi: fi is libfuse's fuse_file_info) -------------

    def open(self, path, fi):
        view, relative = self.resolve(path)
        fi.fh = view.open(relative, fi.flags)
        _skip_flush(fi)
        cache_policy.open_file(fi, view.pages)
        return 0

    def create(self, path, mode, fi=None):
        view, relative = self.resolve(path)
        fi.fh = view.create(relative, mode, fi.flags)
        _skip_flush(fi)
        return 0

    def read(self, path, size, offset, fh):
        return self._call("read", path, size, offset, fh.fh)

    def write(self, path, data, offset, fh):
        return self._call("write", path, data, offset, fh.fh)

    def flush(self, path, fh):
        return self._call("flush", path, fh.fh)

    def fsync(self, path, datasync, fh):
        return self._call("fsync", path, datasync, fh.fh)

    def release(self, path, fh):
        return self._call("release", path, fh.fh)

    def fallocate(self, path, mode, offset, size, fh):
        return self._call("fallocate", path, mode, offset, size, fh.fh)

    # -- extended attributes: current/ keeps the user.* namespace (user_attributes.py) --

    def getxattr(self, path, name, position=0):
        if not name.startswith(USER_ATTRIBUTES):
            # The kernel asks for security.capability before every write(2) to a FUSE file
            # (to drop file capabilities): answered here, without a view, that costs the
            # least it can. No view keeps any but user attributes.
            raise FuseOSError(errno.ENODATA)
        return self._call("getxattr", path, name)

    def listxattr(self, path):
        return self._call("listxattr", path)

    def setxattr(self, path, name, value, options, position=0):
        if not self.extended_attributes:
            self._refuse_attribute(name)
        return self._call("setxattr", path, name, value, options)

    def _refuse_attribute(self, name: str):
        if not name.startswith(USER_ATTRIBUTES):
            raise FuseOSError(errno.EOPNOTSUPP)  # not ENOSYS: a later user.* one must still come here
        if not self._refusal_told:
            # Samba, refused user.DOSATTRIB, answers its client NT_STATUS_NOT_SUPPORTED and
            # logs it only from log level 1 (0 by default): this line tells an admin why.
            self._refusal_told = True
            log.warning("extended attribute %s refused: this mount keeps none (mount with -o xattr for "
                        "Samba's DOS attributes, macOS streams and cp -a's user attributes)", name)
        # ENOSYS: the kernel asks no more and answers EOPNOTSUPP itself from now on.
        raise FuseOSError(errno.ENOSYS)

    def removexattr(self, path, name):
        return self._call("removexattr", path, name)


def _skip_flush(fi) -> None:
    """No view does anything on flush: spare the kernel that round trip at every close."""
    if hasattr(fi, "noflush"):  # libfuse >= 3.11
        fi.noflush = 1
