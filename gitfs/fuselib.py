"""Which libfuse mfusepy loads: always libfuse 3, chosen before mfusepy is imported.

mfusepy picks its library once, when it is first imported: FUSE_LIBRARY_PATH if
set, else `find_library("fuse")` (libfuse 2) before `find_library("fuse3")`.
On a machine with both (the `libfuse2` package is on most desktops) it would load
libfuse 2, and GitFS, which passes libfuse 3's mount options, would fail with
libfuse's "unknown option". So `choose()` runs first (cli.main, before anything
imports mfusepy): it loads libfuse 3 by its soname and points FUSE_LIBRARY_PATH
at it. A FUSE_LIBRARY_PATH (or mfusepy's FUSE_LIBRARY_NAME) the user set is
kept, and checked: anything but libfuse 3 is a FatalError, one line.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Optional

from gitfs.errors import FatalError

LIBFUSE3_SONAME = "libfuse3.so.3"
PATH_VARIABLE = "FUSE_LIBRARY_PATH"  # read by mfusepy at import
NAME_VARIABLE = "FUSE_LIBRARY_NAME"  # mfusepy: find_library(NAME) when no path is given


@dataclass(frozen=True)
class FuseLibrary:
    path: str  # the file loaded
    version: tuple[int, int]
    source: str  # how it was chosen: the user's variable, or found by its soname

    def describe(self) -> str:
        return f"libfuse {self.version[0]}.{self.version[1]} at {self.path} ({self.source})"


def choose(environ: Optional[MutableMapping[str, str]] = None) -> FuseLibrary:
    """Load libfuse 3 (or the user's choice, if it is libfuse 3) and make mfusepy use it."""
    environ = os.environ if environ is None else environ
    if environ.get(PATH_VARIABLE):
        given = environ[PATH_VARIABLE]
        library = _load(given, f"{PATH_VARIABLE}={given}", f"{PATH_VARIABLE}={given}")
    elif environ.get(NAME_VARIABLE):
        name = environ[NAME_VARIABLE]
        found = ctypes.util.find_library(name)
        if not found:
            raise FatalError(f"{NAME_VARIABLE}={name}: no such library found; unset it to use libfuse 3")
        library = _load(found, f"{NAME_VARIABLE}={name}", f"{NAME_VARIABLE}={name} ({found})")
    else:
        library = _load(LIBFUSE3_SONAME, "libfuse 3", "found by its soname", missing="install fuse3")
        environ[PATH_VARIABLE] = LIBFUSE3_SONAME  # the same file for mfusepy's dlopen
    if library.version[0] != 3:
        raise FatalError(f"{library.source} is libfuse {library.version[0]}.{library.version[1]}; GitFS needs "
                         f"libfuse 3: point {PATH_VARIABLE} at {LIBFUSE3_SONAME}, or unset it")
    return library


def check_loaded(library: FuseLibrary) -> None:
    """mfusepy loaded the library chosen (it was not imported before choose() ran)."""
    import mfusepy

    loaded = (mfusepy.fuse_version_major, mfusepy.fuse_version_minor)
    if loaded != library.version:
        raise FatalError(f"mfusepy loaded libfuse {loaded[0]}.{loaded[1]}, not {library.describe()}: it was "
                         f"imported before GitFS chose its library")


def _load(name: str, what: str, source: str, *, missing: str = "") -> FuseLibrary:
    try:
        handle = ctypes.CDLL(name)
        number = handle.fuse_version()
    except OSError as error:
        hint = f": {missing}" if missing else ""
        raise FatalError(f"cannot load {what} ({_first_line(error)}){hint}") from None
    except AttributeError:
        raise FatalError(f"{what} is not libfuse (it has no fuse_version)") from None
    # FUSE_VERSION: major * 10 + minor in libfuse 2 (29), major * 100 + minor in libfuse 3 (314)
    version = divmod(number, 10) if number < 100 else divmod(number, 100)
    return FuseLibrary(_loaded_file(name), version, source)


def _loaded_file(name: str) -> str:
    """The file behind a soname, as the dynamic loader found it (for the debug log)."""
    if os.path.isabs(name):
        return name
    base = name.split(".so")[0] + ".so"
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(base):
                    return path
    except OSError:
        pass
    return name


def _first_line(error: OSError) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else error.__class__.__name__
