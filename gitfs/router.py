"""Router: the one fusepy Operations object. Matches a path to a view and calls it.

Views are built by `make_view(kind, groups)` (see mount.py) and kept in an LRU
keyed by the matched prefix. Views hold no per-open-file state, so evicting
one never loses an open file (that lives in the HandleTable).
"""

from __future__ import annotations

import errno
import functools
import logging
from typing import Callable

from mfusepy import FuseOSError, Operations

from gitfs.routes import Route

log = logging.getLogger(__name__)


class Router(Operations):
    use_ns = True

    def __init__(self, routes: list[Route], make_view: Callable, *, cache_size: int,
                 touch: Callable[[], None], on_init: Callable[[], None], on_destroy: Callable[[], None]):
        self.routes = routes
        self._touch = touch
        self._on_init = on_init
        self._on_destroy = on_destroy
        self._view = functools.lru_cache(maxsize=cache_size)(make_view)

    def resolve(self, path: str):
        """(view, path relative to the view) for a mount path."""
        self._touch()
        for route in self.routes:
            match = route.pattern.match(path)
            if match:
                prefix = match.group(0)
                view = self._view(route.kind, prefix, tuple(sorted(match.groupdict().items())))
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

    def destroy(self, path):
        self._on_destroy()

    # -- path calls ---------------------------------------------------------

    def getattr(self, path, fh=None):
        return self._call("getattr", path)

    def readdir(self, path, fh):
        return self._call("readdir", path, fh)

    def readlink(self, path):
        return self._call("readlink", path)

    def access(self, path, amode):
        return self._call("access", path, amode)

    def statfs(self, path):
        return self._call("statfs", path)

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
        if getattr(view, "kernel_cache", False):
            fi.keep_cache = 1  # immutable history: keep pages across opens
        if getattr(view, "direct_io", False):
            fi.direct_io = 1  # generated content whose size is not known at stat time
        return 0

    def create(self, path, mode, fi=None):
        view, relative = self.resolve(path)
        fi.fh = view.create(relative, mode, fi.flags)
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
