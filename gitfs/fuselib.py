"""Which libfuse mfusepy loads: always libfuse 3, chosen before mfusepy is imported.

mfusepy picks its library once, when it is first imported: FUSE_LIBRARY_PATH if
set, else `find_library("fuse")` (libfuse 2) before `find_library("fuse3")`.
On a machine with both (the `libfuse2` package is on most desktops) it would load
libfuse 2, and GitFS, which passes libfuse 3's mount options, would fail with
libfuse's "unknown option". So `choose()` runs first (cli.main, before anything
imports mfusepy): it loads libfuse 3 and points FUSE_LIBRARY_PATH at it. A
FUSE_LIBRARY_PATH (or mfusepy's FUSE_LIBRARY_NAME) the user set is kept, and
checked: anything but a supported libfuse 3 is a FatalError, one line.

libfuse 3 has changed its soname (libfuse3.so.3 up to 3.16, libfuse3.so.4 from
3.17 on), so it is found by asking the dynamic linker which `libfuse3.so.N` it
knows (LD_LIBRARY_PATH's folders, then its cache, `ldconfig -p`), newest first,
and loaded by that name: a libfuse 3 with a soname not yet seen needs no change
here. Only the runtime library is needed (no `libfuse3.so` from a -dev package).

The oldest libfuse GitFS runs on is OLDEST: the mount passes `max_threads`, which
libfuse knows from 3.12 on (older ones refuse the mount with "unknown option").
Everything else GitFS sets is older: the fuse_config timeouts, auto_cache and
ac_attr_timeout (3.0), fuse_invalidate_path (3.2), cache_readdir on opendir (3.5;
passed on to the kernel by the high-level API from 3.16 on, see fuse_binding).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import subprocess
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from typing import Optional

from gitfs.errors import FatalError

OLDEST = (3, 12)
PATH_VARIABLE = "FUSE_LIBRARY_PATH"  # read by mfusepy at import
NAME_VARIABLE = "FUSE_LIBRARY_NAME"  # mfusepy: find_library(NAME) when no path is given
SONAME = re.compile(r"libfuse3\.so\.(\d+)")
# Tried only when the dynamic linker names none (a system without ldconfig's cache):
# the sonames libfuse 3 has had, newest first.
KNOWN_SONAMES = ("libfuse3.so.4", "libfuse3.so.3")
LDCONFIG = ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig")


@dataclass(frozen=True)
class FuseLibrary:
    name: str  # as given to dlopen: a soname, or the user's path
    path: str  # the file loaded
    version: tuple[int, int]
    source: str  # how it was chosen: the user's variable, or the soname found

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
        library = _load_first(sonames(environ) or list(KNOWN_SONAMES))
        environ[PATH_VARIABLE] = library.name  # the same soname: the same file for mfusepy's dlopen
    check_version(library)
    return library


def sonames(environ: Optional[MutableMapping[str, str]] = None) -> list[str]:
    """The `libfuse3.so.N` names the dynamic linker can load, highest N first."""
    environ = os.environ if environ is None else environ
    names = set(_in_folders(folder for folder in environ.get("LD_LIBRARY_PATH", "").split(":") if folder))
    names.update(_in_linker_cache())
    if not names:  # no cache (not glibc): ctypes asks gcc or ld
        found = ctypes.util.find_library("fuse3")
        if found and SONAME.fullmatch(os.path.basename(found)):
            names.add(os.path.basename(found))
    return sorted(names, key=lambda name: int(name.rsplit(".", 1)[1]), reverse=True)


def check_version(library: FuseLibrary) -> None:
    """libfuse 2, or a libfuse 3 older than OLDEST, is one line."""
    major, minor = library.version
    if major != 3:
        raise FatalError(f"{library.source} is libfuse {major}.{minor}; GitFS needs libfuse 3: point "
                         f"{PATH_VARIABLE} at a libfuse3.so, or unset it")
    if library.version < OLDEST:
        raise FatalError(f"{library.source} is libfuse {major}.{minor}; GitFS needs libfuse "
                         f"{OLDEST[0]}.{OLDEST[1]} or later: install a newer fuse3")


def check_loaded(library: FuseLibrary) -> None:
    """mfusepy loaded the library chosen (it was not imported before choose() ran)."""
    import mfusepy

    loaded = (mfusepy.fuse_version_major, mfusepy.fuse_version_minor)
    if loaded != library.version:
        raise FatalError(f"mfusepy loaded libfuse {loaded[0]}.{loaded[1]}, not {library.describe()}: it was "
                         f"imported before GitFS chose its library")


def _in_folders(folders: Iterable[str]) -> Iterable[str]:
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        yield from (name for name in names if SONAME.fullmatch(name))


def _in_linker_cache() -> Iterable[str]:
    """The sonames in the dynamic linker's cache (`ldconfig -p`). Another architecture's
    library of the same soname is no matter: dlopen by soname skips it."""
    for program in LDCONFIG:
        try:
            listing = subprocess.run([program, "-p"], capture_output=True, text=True, timeout=30,
                                     env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        except (OSError, subprocess.SubprocessError):
            continue
        # "	libfuse3.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libfuse3.so.4"
        yield from (match.group(1) for match in re.finditer(r"^\s*(libfuse3\.so\.\d+)\s", listing.stdout, re.M))
        return


def _load_first(names: list[str]) -> FuseLibrary:
    """The first of names that loads (one may be another architecture's, or a dangling link)."""
    errors: list[FatalError] = []
    for name in names:
        try:
            return _load(name, "libfuse 3", f"{name}, found by the dynamic linker", missing="install fuse3")
        except FatalError as error:
            errors.append(error)
    raise errors[0] if errors else FatalError("cannot find libfuse 3: install fuse3")


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
    return FuseLibrary(name, _loaded_file(name), version, source)


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
