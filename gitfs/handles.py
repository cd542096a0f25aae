"""Open files: one table that lives as long as the mount (never on a view).

The sync worker asks it how many files are open for writing, since how long,
and which of them hold unsaved changes; FUSE threads add and remove entries.
A sync asked for now (SIGUSR1, unmount) waits for the files open for writing at
that moment to be released: close(2) returns before the kernel sends RELEASE.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class OpenFile:
    path: str  # "/a/b", relative to the view's root
    fd: Optional[int] = None  # a working-tree file
    data: Any = None  # history: a BlobReader or an LFS ObjectReader (read, close); the status file: its bytes
    writable: bool = False
    change: Optional[str] = None  # "Created" or "Update": the commit owed at release; None if clean
    other_names: tuple[str, ...] = ()  # the file's other names in its folder, told of each write
    linked: Optional[tuple[int, int]] = None  # (device, inode) if it had several hard links when opened
    opened_at: float = field(default_factory=time.monotonic)


class HandleTable:
    def __init__(self):
        self._lock = threading.Condition()  # notified when an entry goes
        self._files: dict[int, OpenFile] = {}
        self._numbers = itertools.count(1)

    def add(self, open_file: OpenFile) -> int:
        with self._lock:
            number = next(self._numbers)
            self._files[number] = open_file
            return number

    def get(self, number: int) -> OpenFile:
        return self._files[number]

    def pop(self, number: int) -> Optional[OpenFile]:
        with self._lock:
            self._lock.notify_all()
            return self._files.pop(number, None)

    def writing(self) -> dict[int, str]:
        """{number: path} of the files open for writing now."""
        with self._lock:
            return {number: f.path for number, f in self._files.items() if f.writable}

    def wait_released(self, numbers: Collection[int], timeout: float) -> bool:
        """Wait (at most timeout) until none of these files is open; False if some still are."""
        with self._lock:
            return self._lock.wait_for(lambda: not any(number in self._files for number in numbers), timeout)

    def writers(self, counts: Callable[[str], bool] = lambda path: True) -> tuple[int, float]:
        """(files open for writing, seconds the oldest of them has been open), of the
        files whose path `counts` (asked outside the table's lock)."""
        with self._lock:
            opened = [(f.path, f.opened_at) for f in self._files.values() if f.writable]
        times = [opened_at for path, opened_at in opened if counts(path)]
        return len(times), (time.monotonic() - min(times)) if times else 0.0

    def dirty_paths(self) -> list[str]:
        with self._lock:
            return [f.path for f in self._files.values() if f.change is not None]

    def open_paths(self) -> set[str]:
        """Paths of the working-tree files open now (history blobs are not files)."""
        with self._lock:
            return {f.path for f in self._files.values() if f.fd is not None}

    def rename(self, old: str, new: str) -> None:
        """Keep open handles pointing at the right path after a rename."""
        with self._lock:
            for open_file in self._files.values():
                if open_file.path == old or open_file.path.startswith(old + "/"):
                    open_file.path = new + open_file.path[len(old):]
