"""libgit2's process-wide settings, set once at start-up: they are global to the
process, so no constructor or fetch sets them again.

- Memory: libgit2 keeps parsed trees and commits in an object cache of 256 MiB by
  default, and maps pack files in 1 GiB windows kept up to 8 GiB: a listing of a big
  history filled the one, and one read of a 100 MB packed blob left 100 MB mapped for
  good through the other. Small bounds keep the daemon's memory flat. Commits stay
  out of the object cache: each is read once (the walk that indexes history/; a
  commit folder keeps its tree id), and that walk filled the cache with commits
  nobody read again (~10 MB for the 4 MiB it counts, on 17,000 commits). Trees up to
  1 MiB are kept (libgit2 keeps none over 4 kB by default): every name looked up in a
  folder of 5,000 entries inflated and parsed its whole tree again, 1.5 ms a lookup
  instead of 8 us, so that a grep over a big commit folder grew with the square of its size.
  Windows are small too: big blobs are streamed from GitFS's own mapping
  (blobstream.py), and a walk of a long history through 32 MiB windows left 64 MiB
  of the pack mapped (~190 bytes per commit of 300,000) for the life of the mount.
  libgit2 frees a walk's memory, but malloc keeps it: release_free_memory() gives it
  back to the system after the walk that indexes history/ (~100 bytes per commit).
- Open files: libgit2 keeps every pack file it has read open (and mapped), and a clone
  that fetched for weeks has thousands of packs until it is repacked (housekeeping.py):
  at 400 packs the daemon met the 1,024 open files a systemd service gets. At most
  MWINDOW_FILES packs stay open; the least recently used is closed (and unmapped) to
  open another.
- Reading: libgit2 hashes every object it reads again to check it (SHA-1 with
  collision detection, ~250 MB/s): the first read of a 100 MB file from history/
  spent more time hashing than inflating. Every object in the clone was hashed
  when it arrived (the indexer of a fetch, or GitFS writing it), and git itself
  does not check objects on read either, so the check is off.
- Pushing: libgit2's pack builder inflates every object it sends and searches
  deltas for each against the ten before it, holding all ten whole, in one thread:
  a batch of 200 sparse files of 9.5 MB took twice git push's time and 400 MB, and
  3 random files of 60 MB 1.5 times git's, searching deltas that random bytes never
  have. Its bounds come only from the clone's config (pack_settings): objects over
  PACK_DELTA_MAX_BYTES go without delta search (libgit2 reads that bound from
  pack.deltaCacheSize, which also bounds its cache of deltas; pack.bigFileThreshold
  is its documented name), and the search window holds at most PACK_WINDOW_BYTES;
  the pack is built with one thread per processor (remote/transfer.py).
- Network: connect and server timeouts (libgit2 1.7 and later), so a dead server
  fails a fetch instead of hanging the sync worker.
- Trust: libgit2 checks SSH host keys against HOMEDIR/.ssh/known_hosts, so HOMEDIR
  points at a directory whose known_hosts is the file to trust; ssl_ca_file adds a CA
  to OpenSSL's store for HTTPS (see credentials.py).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os

import pygit2

from gitfs.repo.compat import set_mwindow_file_limit, set_option, set_ssh_home
from gitfs.repo.credentials import Credentials, ssh_home_for, transport_of
from gitfs.repo.errors import SettingError

log = logging.getLogger(__name__)

OBJECT_CACHE_BYTES = 4 * 1024 * 1024
GIT_OBJECT_COMMIT, GIT_OBJECT_TREE = 1, 2  # libgit2's git_object_t (pygit2 names it differently across releases)
TREE_CACHE_LIMIT = 1024 * 1024  # the biggest tree kept parsed (libgit2's default: 4 kB, ~100 entries)
MWINDOW_BYTES = 4 * 1024 * 1024
MWINDOW_MAPPED_BYTES = 8 * 1024 * 1024
MWINDOW_FILES = 32
PACK_DELTA_MAX_BYTES = 1024 * 1024
PACK_WINDOW_BYTES = 64 * 1024 * 1024
PACK_SETTINGS = {"pack.deltaCacheSize": PACK_DELTA_MAX_BYTES, "pack.bigFileThreshold": PACK_DELTA_MAX_BYTES,
                 "pack.windowMemory": PACK_WINDOW_BYTES}
CONNECT_TIMEOUT_MS = 20_000
SERVER_TIMEOUT_MS = 300_000


def configure(credentials: Credentials, url: str) -> None:
    pygit2.settings.cache_max_size(OBJECT_CACHE_BYTES)
    set_option("GIT_OPT_SET_CACHE_OBJECT_LIMIT", GIT_OBJECT_COMMIT, 0)
    set_option("GIT_OPT_SET_CACHE_OBJECT_LIMIT", GIT_OBJECT_TREE, TREE_CACHE_LIMIT)
    pygit2.settings.mwindow_size = MWINDOW_BYTES
    pygit2.settings.mwindow_mapped_limit = MWINDOW_MAPPED_BYTES
    if not set_mwindow_file_limit(MWINDOW_FILES):
        log.warning("libgit2 %s keeps every pack file open: a clone with many packs may exhaust "
                    "the open-file limit", pygit2.LIBGIT2_VERSION)
    set_option("GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION", False)
    # libgit2 1.7 and later; before, the operating system's TCP timeouts apply.
    if not (set_option("GIT_OPT_SET_SERVER_CONNECT_TIMEOUT", CONNECT_TIMEOUT_MS)
            and set_option("GIT_OPT_SET_SERVER_TIMEOUT", SERVER_TIMEOUT_MS)):
        log.debug("this libgit2 (%s) has no server timeouts", pygit2.LIBGIT2_VERSION)
    if transport_of(url) == "ssh" and not set_ssh_home(ssh_home_for(credentials)):
        raise SettingError(f"ssh_known_hosts: libgit2 {pygit2.LIBGIT2_VERSION} reads host keys only from "
                           f"~/.ssh/known_hosts (other files need libgit2 1.7): put them there")
    if credentials.ssl_ca_file:
        pygit2.settings.set_ssl_cert_locations(os.path.abspath(os.path.expanduser(credentials.ssl_ca_file)), None)


def pack_settings(git: pygit2.Repository) -> None:
    """Bound libgit2's pack building for pushes (see above) in the clone's config, where
    libgit2 reads them; a value the user set (in any config file) stays."""
    try:
        config = git.config
        for key, value in PACK_SETTINGS.items():
            if key not in config:
                config[key] = value
    except (pygit2.GitError, OSError) as error:  # a read-only clone config: the push works, slower
        log.debug("cannot bound the pack builder in the clone's config: %s", error)


def release_free_memory() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim); elsewhere a no-op."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _libc():
    """The C library, loaded once: each CDLL made a class of its own (~250 bytes a commit)."""
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None
