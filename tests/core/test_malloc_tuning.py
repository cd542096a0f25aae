"""Layer 1: glibc's malloc as the daemon tunes it (gitfs/daemon.py, tune_malloc), checked in a
child process so that the tests' own process keeps glibc's defaults. A block's header says
whether glibc mapped it (bit 2 of the size word before the block)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

IS_MMAPPED = 0x2
MiB = 1024 * 1024

# Each child: the daemon's tuning or glibc's defaults (argv[1]), and malloc and free by hand.
PREAMBLE = """
import ctypes, sys
from gitfs.daemon import tune_malloc
if sys.argv[1] == "tuned":
    tune_malloc()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
"""

CHILD = PREAMBLE + """

def mapped(size):
    block = libc.malloc(size)
    try:
        return bool(ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value & 2)
    finally:
        libc.free(block)

libc.free(libc.malloc(4 * 1024 * 1024))  # a big mapped block freed, as libfuse's buffers are
print(mapped(1024 * 1024), mapped(256 * 1024))
"""


def mapped_after_a_big_free(mode: str) -> tuple[bool, bool]:
    """(whether a 1 MiB block is mapped, whether a 256 KiB one is), once a 4 MiB block was freed."""
    result = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
    one_mib, quarter = result.stdout.split()
    return one_mib == "True", quarter == "True"


@pytest.fixture(autouse=True)
def glibc_only():
    try:
        ctypes.CDLL(None).mallopt  # noqa: B018
    except AttributeError:
        pytest.skip("not glibc")


def test_a_1_mib_block_stays_mapped_after_a_bigger_one_was_freed():
    """libgit2's pack writer allocates 1 MiB for each object a push sends: mapped, the block
    goes back to the system when freed instead of settling in the heap between blocks that stay."""
    assert mapped_after_a_big_free("tuned") == (True, False)  # a FUSE read's 256 KiB: the heap's


def test_glibc_alone_takes_it_from_the_heap_then():
    """What the tuning changes: by default glibc raises its threshold to the big block freed."""
    assert mapped_after_a_big_free("default") == (False, False)


ARENAS_CHILD = PREAMBLE + """
import tempfile, threading
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = [ctypes.c_void_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]

def allocate():
    libc.free(libc.malloc(64 * 1024))

workers = [threading.Thread(target=allocate) for _ in range(4)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
with tempfile.NamedTemporaryFile() as report:
    stream = libc.fopen(report.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(report.name).read().count("<heap nr="))
"""


def arenas_after_threads_allocated(mode: str) -> int:
    result = subprocess.run([sys.executable, "-c", ARENAS_CHILD, mode], capture_output=True, text=True, check=True)
    return int(result.stdout)


def test_every_thread_allocates_from_the_one_arena():
    """A second arena, shared by every thread but the main one (which waits in libfuse's
    loop), kept growing under a busy team with the free memory between its blocks; one
    arena reuses the free memory every thread leaves."""
    assert arenas_after_threads_allocated("tuned") == 1


def test_glibc_alone_gives_threads_arenas_of_their_own():
    assert arenas_after_threads_allocated("default") > 1
