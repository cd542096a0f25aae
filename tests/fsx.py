"""An fsx-like exerciser: seeded random operations on one file, every read checked
against an in-memory model of what the file must hold.

The operations: read, write, truncate (to a size below or above the current one), mapped
read and write (mmap; a mapped write past the end extends the file first, as fsx does),
fallocate (allocating, with and without FALLOC_FL_KEEP_SIZE), hole punching
(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), zeroing a range (FALLOC_FL_ZERO_RANGE), and
closing and opening the file again. The file's size (fstat) is checked after every
operation, the whole file at every reopen and at the end.

A kind of fallocate that the file system answers with EOPNOTSUPP is not supported: it is
tried once, then skipped, and the result says so. The same seed gives the same operations
(on a file system that supports the same ones). A failure raises an AssertionError that
names the seed, the operation and the last operations done.

Run alone, from the checkout:
    PYTHONPATH=. python tests/fsx.py FILE [--operations N] [--seed S] [--max-size BYTES] [--max-length BYTES]
"""

from __future__ import annotations

import argparse
import array
import collections
import errno
import mmap
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from gitfs.views.allocation import FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE, fallocate

# The fallocate kinds, by the name the log and the result use.
FALLOCATE_MODES = {
    "allocate": 0,
    "allocate_keep_size": FALLOC_FL_KEEP_SIZE,
    "punch_hole": FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
    "zero_range": FALLOC_FL_ZERO_RANGE,
}
WEIGHTS = {"read": 10, "write": 10, "mapread": 6, "mapwrite": 6, "truncate": 4, "allocate": 2,
           "allocate_keep_size": 2, "punch_hole": 4, "zero_range": 2, "reopen": 1}
LOG_TAIL = 40


@dataclass
class Result:
    operations: int
    done: collections.Counter = field(default_factory=collections.Counter)  # operations done, by kind
    unsupported: set[str] = field(default_factory=set)  # fallocate kinds answered EOPNOTSUPP

    def summary(self) -> str:
        counts = ", ".join(f"{kind} {count}" for kind, count in sorted(self.done.items()))
        skipped = ", ".join(sorted(self.unsupported)) or "none"
        return f"fsx: {self.operations} operations ({counts}); not supported (EOPNOTSUPP): {skipped}"


class Exerciser:
    """The file, its model and the operations on both."""

    def __init__(self, path: str, seed: int, *, max_size: int, max_length: int):
        self.path = path
        self.seed = seed
        self.rng = random.Random(seed)
        self.max_size = max_size
        self.max_length = max_length
        self.model = bytearray()
        self.writer = array.array("l")  # per byte of the model: the operation that last wrote it (-1: zeros)
        self.log: collections.deque[str] = collections.deque(maxlen=LOG_TAIL)
        self.number = 0
        self.result = Result(0)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)

    # -- the model --------------------------------------------------------------------

    def _resize(self, size: int) -> None:
        if size < len(self.model):
            del self.model[size:]
            del self.writer[size:]
        else:
            grow = size - len(self.model)
            self.model.extend(bytes(grow))
            self.writer.extend([-1] * grow)

    def _put(self, offset: int, data: bytes) -> None:
        if offset + len(data) > len(self.model):
            self._resize(offset + len(data))
        self.model[offset:offset + len(data)] = data
        self.writer[offset:offset + len(data)] = array.array("l", [self.number]) * len(data)

    def _zero(self, offset: int, end: int) -> None:
        end = min(end, len(self.model))
        if offset < end:
            self.model[offset:end] = bytes(end - offset)
            self.writer[offset:end] = array.array("l", [-1]) * (end - offset)

    # -- checks -------------------------------------------------------------------------

    def fail(self, what: str) -> None:
        tail = "\n".join(self.log)
        again = (f"PYTHONPATH=. python tests/fsx.py FILE --seed {self.seed} --operations {self.number} "
                 f"--max-size {self.max_size} --max-length {self.max_length}")
        raise AssertionError(f"fsx (seed {self.seed}) failed at operation {self.number} on {self.path}: {what}\n"
                             f"again: {again}\nlast operations:\n{tail}")

    def check(self, offset: int, got: bytes, length: int, what: str) -> None:
        """`got`, read from offset after asking for `length` bytes, is what the model holds there."""
        expected = bytes(self.model[offset:offset + length])
        if got == expected:
            return
        at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
        writer = self.writer[offset + at] if offset + at < len(self.writer) else None
        source = {None: "past the end", -1: "zeros: a hole, cut or never written"}.get(
            writer, f"written by operation {writer}")
        self.fail(f"{what} of {length:#x} at {offset:#x}: {len(got):#x} bytes, expected {len(expected):#x}; "
                  f"first difference at {offset + at:#x}: got {got[at:at + 16].hex()}, expected "
                  f"{expected[at:at + 16].hex()} ({source}); file size {len(self.model):#x}")

    def check_size(self) -> None:
        size = os.fstat(self.fd).st_size
        if size != len(self.model):
            self.fail(f"size {size}, expected {len(self.model)}")

    def check_whole_file(self) -> None:
        self.check(0, os.pread(self.fd, len(self.model) + 1, 0), len(self.model) + 1, "whole file read")

    # -- operations -------------------------------------------------------------------------

    def _range(self, within: int) -> tuple[int, int]:
        """(offset, length) of a range that starts before `within` (a size)."""
        offset = self.rng.randrange(max(within, 1))
        return offset, self.rng.randrange(1, self.max_length + 1)

    def read(self) -> None:
        offset, length = self._range(len(self.model))
        self.log.append(f"{self.number} read {offset:#x} +{length:#x}")
        self.check(offset, os.pread(self.fd, length, offset), length, "read")

    def write(self) -> None:
        offset, length = self._range(self.max_size - self.max_length)
        self.log.append(f"{self.number} write {offset:#x} +{length:#x} (size {len(self.model):#x})")
        data = self.rng.randbytes(length)
        if os.pwrite(self.fd, data, offset) != length:
            self.fail("short write")
        self._put(offset, data)

    def truncate(self) -> None:
        size = self.rng.randrange(self.max_size)
        self.log.append(f"{self.number} truncate {len(self.model):#x} -> {size:#x}")
        os.ftruncate(self.fd, size)
        self._resize(size)

    def _mapped(self, offset: int, length: int) -> tuple[mmap.mmap, int]:
        """A shared mapping that covers offset..offset+length, and offset within it."""
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        return mmap.mmap(self.fd, offset + length - start, offset=start), offset - start

    def mapread(self) -> None:
        if not self.model:
            return
        offset, length = self._range(len(self.model))
        length = min(length, len(self.model) - offset)  # a mapping past the end is SIGBUS
        self.log.append(f"{self.number} mapread {offset:#x} +{length:#x}")
        mapped, at = self._mapped(offset, length)
        with mapped:
            self.check(offset, mapped[at:at + length], length, "mapped read")

    def mapwrite(self) -> None:
        offset, length = self._range(self.max_size - self.max_length)
        self.log.append(f"{self.number} mapwrite {offset:#x} +{length:#x} (size {len(self.model):#x})")
        data = self.rng.randbytes(length)
        if offset + length > len(self.model):
            os.ftruncate(self.fd, offset + length)  # mapped pages past the end do not extend a file
            self._resize(offset + length)
        mapped, at = self._mapped(offset, length)
        with mapped:
            mapped[at:at + length] = data
            mapped.flush()  # msync(MS_SYNC)
        self._put(offset, data)

    def allocate(self, kind: str) -> None:
        offset, length = self._range(self.max_size - self.max_length)
        mode = FALLOCATE_MODES[kind]
        self.log.append(f"{self.number} {kind} {offset:#x} +{length:#x} (size {len(self.model):#x})")
        try:
            fallocate(self.fd, mode, offset, length)
        except OSError as error:
            if error.errno != errno.EOPNOTSUPP:
                raise
            self.log.append(f"{self.number} {kind}: not supported")
            self.result.unsupported.add(kind)
            return
        if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE):
            self._zero(offset, offset + length)
        if not mode & FALLOC_FL_KEEP_SIZE and offset + length > len(self.model):
            self._resize(offset + length)

    def reopen(self) -> None:
        self.log.append(f"{self.number} close and open again")
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_RDWR)
        self.check_whole_file()

    def step(self) -> None:
        kinds = [kind for kind in WEIGHTS if kind not in self.result.unsupported]
        kind = self.rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        operation: Callable[[], None] = (
            (lambda: self.allocate(kind)) if kind in FALLOCATE_MODES else getattr(self, kind))
        operation()
        if kind not in self.result.unsupported:
            self.result.done[kind] += 1
        self.check_size()

    def close(self) -> None:
        os.close(self.fd)


def run(path, *, operations: int = 1000, seed: int = 1, max_size: int = 256 * 1024,
        max_length: int = 64 * 1024) -> Result:
    """`operations` random operations on the file at path (created, or emptied), each
    checked against the model; the whole file is checked at the end, and once more after
    closing it."""
    exerciser = Exerciser(os.fspath(path), seed, max_size=max_size, max_length=max_length)
    try:
        for exerciser.number in range(1, operations + 1):
            try:
                exerciser.step()
            except OSError as error:
                exerciser.fail(f"{error!r}")
        exerciser.number = operations + 1
        exerciser.reopen()
    finally:
        exerciser.close()
    exerciser.result.operations = operations
    return exerciser.result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--operations", "-N", type=int, default=1000)
    parser.add_argument("--seed", "-S", type=int, default=1)
    parser.add_argument("--max-size", type=int, default=256 * 1024)
    parser.add_argument("--max-length", type=int, default=64 * 1024)
    arguments = parser.parse_args(argv)
    try:
        result = run(arguments.file, operations=arguments.operations, seed=arguments.seed,
                     max_size=arguments.max_size, max_length=arguments.max_length)
    except AssertionError as error:
        print(error, file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
