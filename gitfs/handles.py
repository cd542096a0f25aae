"""Open files: one table that lives as long as the mount (never on a view).

The sync worker asks it how many files are open for writing, since how long,
and which of them hold unsaved changes; FUSE threads add and remove entries.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class OpenFile:
    path: str  # "/a/b", relative to the view's root
    fd: Optional[int] = None  # a working-tree file
    data: Any = None  # history: a repo.blobstream.BlobReader; the status file: its rendered bytes
    writable: bool = False
    change: Optional[str] = None  # "Created" or "Update": the commit owed at release; None if clean
    opened_at: float = field(default_factory=time.monotonic)


class HandleTable:
    def __init__(self):
        self._lock = threading.Lock()
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
            return self._files.pop(number, None)

    def writers(self) -> tuple[int, float]:
        """(files open for writing, seconds the oldest of them has been open)."""
        with self._lock:
            times = [f.opened_at for f in self._files.values() if f.writable]
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
